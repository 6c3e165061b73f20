import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { createGrpcJsClient } from "./grpc-js-client.js";

/** The two services' clients over one client stack. */
export interface ClientStack {
  readonly name: string;
  readonly registry: Client<typeof RegistryService>;
  readonly runner: Client<typeof RunnerService>;
  close(): void;
}

/** Names of the stacks {@link createClientStack} builds. */
export const clientStackNames = ["grpc-js", "connect-json-http1", "connect-binary-http2", "grpc-web"] as const;

/** A client stack against a running server: grpc-js on the gRPC port, the others on the HTTP port. */
export function createClientStack(name: (typeof clientStackNames)[number], server: RunningServer): ClientStack {
  if (name === "grpc-js") {
    const registry = createGrpcJsClient(RegistryService, server.grpcAddress);
    const runner = createGrpcJsClient(RunnerService, server.grpcAddress);
    return {
      name,
      registry: registry.client,
      runner: runner.client,
      close: () => {
        registry.close();
        runner.close();
      },
    };
  }
  const transport =
    name === "grpc-web"
      ? createGrpcWebTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" })
      : createConnectTransport({
          baseUrl: server.httpUrl,
          httpVersion: name === "connect-binary-http2" ? "2" : "1.1",
          useBinaryFormat: name === "connect-binary-http2",
        });
  return {
    name,
    registry: createClient(RegistryService, transport),
    runner: createClient(RunnerService, transport),
    close: () => undefined,
  };
}
