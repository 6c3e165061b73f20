import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";

/** How a client reaches a server: native gRPC, or the Connect protocol in binary or JSON. */
export type ClientProtocol = "grpc" | "connect-proto" | "connect-json";

/** A real RunnerService client (connect-node) over HTTP/2 to `baseUrl`, e.g. "http://127.0.0.1:50051". */
export function runnerClient(baseUrl: string, protocol: ClientProtocol): Client<typeof RunnerService> {
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl })
      : createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: protocol === "connect-proto" });
  return createClient(RunnerService, transport);
}
