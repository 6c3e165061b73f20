import type { LoadRequest } from "./checks.js";
import { activateNoop, checkGrpcExecute, checkGrpcRunTool } from "./checks.js";
import { launchServer } from "./launch-server.js";
import { grpcHeaders, requestBodies } from "./request-bodies.js";

/** What the echo baselines answer with: a real server's responses to the load's requests. */
export interface NoopResponses {
  /** The ExecuteToolResponse of builtin.noop. */
  readonly execute: Buffer;
  /** The messages of a RunTool stream of builtin.noop (its six lifecycle events), in order. */
  readonly runTool: readonly Buffer[];
}

/**
 * Starts a toolruntime server, runs builtin.noop once through ExecuteTool and once through RunTool
 * on its gRPC port (each checked: a successful result, a stream ending with a successful
 * COMPLETED) and returns the response messages exactly as the server encoded them.
 */
export async function probeNoopResponses(): Promise<NoopResponses> {
  const server = await launchServer("toolruntime");
  try {
    const baseUrl = server.grpcUrl ?? "";
    await activateNoop(baseUrl, "grpc");
    const load = (method: string, body: Buffer): LoadRequest => ({
      url: `${baseUrl}/toolruntime.v1.RunnerService/${method}`,
      headers: grpcHeaders,
      body,
    });
    const { responseMessage } = await checkGrpcExecute(baseUrl, load("ExecuteTool", requestBodies.grpcExecute));
    const { streamMessages } = await checkGrpcRunTool(baseUrl, load("RunTool", requestBodies.grpcRunTool));
    if (!responseMessage || !streamMessages) throw new Error("the probe calls returned no messages");
    return { execute: responseMessage, runTool: streamMessages };
  } finally {
    await server.stop();
  }
}
