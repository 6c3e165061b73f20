import { startMainProcess, type MainProcess } from "./main-process.js";

/** Server processes sharing one store, each reachable directly. */
export interface Replicas {
  readonly processes: MainProcess[];
  /** The gRPC address of each replica, in order. */
  readonly grpcAddresses: string[];
  /** Stops every replica with SIGTERM and waits for each to exit. */
  stop(): Promise<void>;
}

/**
 * Starts `count` server processes on free ports, all on the store at `storeUrl`, at the same time
 * (so their schema migrations race, as in a real rollout).
 */
export async function startReplicas(count: number, storeUrl: string, args: readonly string[] = []): Promise<Replicas> {
  const started = await Promise.allSettled(
    Array.from({ length: count }, () => startMainProcess(["--store", storeUrl, ...args])),
  );
  const processes = started.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
  const stop = async (): Promise<void> => {
    await Promise.all(processes.map((each) => stopProcess(each)));
  };
  const failed = started.find((outcome) => outcome.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return { processes, grpcAddresses: processes.map((each) => each.grpcAddress), stop };
}

/** Sends SIGTERM (unless it already exited) and waits for the exit. */
export async function stopProcess(process: MainProcess): Promise<number | null> {
  if (process.child.exitCode === null && process.child.signalCode === null) process.child.kill("SIGTERM");
  return process.exited;
}
