import { ExecutionService } from "../../gen/toolruntime/v1/execution_pb.js";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { createGrpcJsClient } from "./grpc-js-client.js";
import { startMainProcess, type MainProcess } from "./main-process.js";
import { PgFaultProxy } from "./pg-fault-proxy.js";
import { stopProcess } from "./replica-processes.js";

/** grpc-js clients of one replica's services. */
export function replicaClients(address: string) {
  const executions = createGrpcJsClient(ExecutionService, address);
  const runner = createGrpcJsClient(RunnerService, address);
  const registry = createGrpcJsClient(RegistryService, address);
  return {
    executions: executions.client,
    runner: runner.client,
    registry: registry.client,
    close: () => {
      executions.close();
      runner.close();
      registry.close();
    },
  };
}

/** The clients {@link replicaClients} makes. */
export type ReplicaClients = ReturnType<typeof replicaClients>;

/** Server processes on one store, each reaching it through a fault proxy of its own. */
export interface ProxiedReplicas {
  readonly processes: MainProcess[];
  /** The proxy each replica reaches the store through (pool, doorbell and lease alike). */
  readonly proxies: PgFaultProxy[];
  readonly clients: ReplicaClients[];
  readonly grpcAddresses: string[];
  /** Heals every proxy, stops every replica (SIGCONT first for a stopped one) and closes the proxies. */
  stop(): Promise<void>;
}

/**
 * Starts `count` replicas on the database at `storeUrl` (of a server listening on `postgresPort`
 * of 127.0.0.1), each through a {@link PgFaultProxy} of its own, with `args`.
 */
export async function startProxiedReplicas(
  count: number,
  storeUrl: string,
  postgresPort: number,
  args: readonly string[],
): Promise<ProxiedReplicas> {
  const proxies = await Promise.all(
    Array.from({ length: count }, () => PgFaultProxy.start(`127.0.0.1:${postgresPort}`)),
  );
  const started = await Promise.allSettled(
    proxies.map((proxy) => startMainProcess(["--store", proxy.urlFor(storeUrl), ...args])),
  );
  const processes = started.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
  const clients = processes.map((each) => replicaClients(each.grpcAddress));
  const stop = async (): Promise<void> => {
    for (const each of clients) each.close();
    for (const proxy of proxies) proxy.heal();
    for (const each of processes) if (each.child.signalCode === "SIGSTOP") each.child.kill("SIGCONT");
    await Promise.all(processes.map((each) => stopProcess(each)));
    await Promise.all(proxies.map((proxy) => proxy.close()));
  };
  const failed = started.find((outcome) => outcome.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return { processes, proxies, clients, grpcAddresses: processes.map((each) => each.grpcAddress), stop };
}
