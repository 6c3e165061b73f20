import type { LoadRequest } from "./checks.js";
import { activateNoop, checkGrpcExecute } from "./checks.js";
import { launchServer } from "./launch-server.js";
import { grpcHeaders, requestBodies } from "./request-bodies.js";

/**
 * Starts a toolruntime server, runs builtin.noop once through ExecuteTool on its gRPC port and
 * returns the response message exactly as the server encoded it: what the echo baselines answer.
 */
export async function probeNoopResponse(): Promise<Buffer> {
  const server = await launchServer("toolruntime");
  try {
    const baseUrl = server.grpcUrl ?? "";
    await activateNoop(baseUrl, "grpc");
    const load: LoadRequest = {
      url: `${baseUrl}/toolruntime.v1.RunnerService/ExecuteTool`,
      headers: grpcHeaders,
      body: requestBodies.grpcExecute,
    };
    const { responseMessage } = await checkGrpcExecute(baseUrl, load);
    if (!responseMessage) throw new Error("the probe call returned no message");
    return responseMessage;
  } finally {
    await server.stop();
  }
}
