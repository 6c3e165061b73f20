import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { ExecutionService } from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { credentials } from "@grpc/grpc-js";
import { createGrpcJsClient } from "./grpc-js-client.js";

/** The two services' clients over one client stack. */
export interface ClientStack {
  readonly name: string;
  readonly registry: Client<typeof RegistryService>;
  readonly runner: Client<typeof RunnerService>;
  readonly executions: Client<typeof ExecutionService>;
  close(): void;
}

/** Names of the stacks {@link createClientStack} builds. */
export const clientStackNames = ["grpc-js", "connect-json-http1", "connect-binary-http2", "grpc-web"] as const;

/** TLS settings of a client: the CA to trust and, for mutual TLS, a client certificate. */
export interface ClientTls {
  readonly ca: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

/**
 * A client stack against a running server: grpc-js on the gRPC port, the others on the HTTP port;
 * over TLS when `tls` is given.
 */
export function createClientStack(
  name: (typeof clientStackNames)[number],
  server: RunningServer,
  tls?: ClientTls,
): ClientStack {
  if (name === "grpc-js") {
    const channel = tls
      ? credentials.createSsl(tls.ca, tls.key ?? null, tls.cert ?? null)
      : credentials.createInsecure();
    const registry = createGrpcJsClient(RegistryService, server.grpcAddress, channel);
    const runner = createGrpcJsClient(RunnerService, server.grpcAddress, channel);
    const executions = createGrpcJsClient(ExecutionService, server.grpcAddress, channel);
    return {
      name,
      registry: registry.client,
      runner: runner.client,
      executions: executions.client,
      close: () => {
        registry.close();
        runner.close();
        executions.close();
      },
    };
  }
  const nodeOptions = tls ? { nodeOptions: { ca: tls.ca, ...(tls.cert ? { cert: tls.cert, key: tls.key } : {}) } } : {};
  const transport =
    name === "grpc-web"
      ? createGrpcWebTransport({ baseUrl: server.httpUrl, httpVersion: "1.1", ...nodeOptions })
      : name === "connect-binary-http2"
        ? createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "2", useBinaryFormat: true, ...nodeOptions })
        : createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1", ...nodeOptions });
  return {
    name,
    registry: createClient(RegistryService, transport),
    runner: createClient(RunnerService, transport),
    executions: createClient(ExecutionService, transport),
    close: () => undefined,
  };
}
