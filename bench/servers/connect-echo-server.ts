import http2 from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { ExecuteToolResponseSchema, RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { announceReady, exitOnSignals, readServerArgs } from "./server-args.js";

/**
 * The bare connect-node baseline: RunnerService.ExecuteTool alone, answering every call with the
 * same ExecuteToolResponse (`--response-base64`, a real response of the no-op tool), on a cleartext
 * HTTP/2 server. It serves the Connect protocol in binary and JSON, like the toolruntime's HTTP port.
 */
async function main(): Promise<void> {
  const args = readServerArgs();
  const response = fromBinary(ExecuteToolResponseSchema, args.response);
  const handler = connectNodeAdapter({
    routes: (router: ConnectRouter) => {
      router.rpc(RunnerService.method.executeTool, () => response);
    },
  });
  const server = http2.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(args.port, args.host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the server has no port");
  exitOnSignals(() => undefined);
  announceReady(address.port);
}

main().catch((error: unknown) => {
  process.stderr.write(`connect-echo-server: ${String(error)}\n`);
  process.exit(1);
});
