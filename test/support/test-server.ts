import { pino } from "pino";
import { startServer, type RunningServer, type ServerOptions } from "../../src/server/tool-runtime-server.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { testTools } from "./test-tools.js";

/**
 * Starts a real server on ephemeral ports of 127.0.0.1 with the built-in tools and the test tools,
 * logging only fatal errors. Close it with `server.close(0)`.
 */
export function startTestServer(options: ServerOptions = {}): Promise<RunningServer> {
  return startServer({
    host: "127.0.0.1",
    grpcPort: 0,
    httpPort: 0,
    logger: pino({ level: process.env["TEST_LOG_LEVEL"] ?? "fatal" }),
    tools: [...builtinTools, ...testTools],
    ...options,
  });
}
