import type { Logger } from "pino";
import { quote } from "../../registry/names.js";
import { summariseStartFailure } from "./mcp-start-error.js";
import type { McpServerSpec } from "./parse-mcp-server.js";

/**
 * Logs one failed attempt to connect `server`. The first failure of a streak is a warning that
 * says why in the server's own words (exit, last stderr lines), without a stack; later ones are
 * warned only at attempts 1, 2, 4, 8… so a server that stays down does not flood the log while
 * its backoff is capped. Every attempt, with the error's stack, is logged at debug.
 */
export function reportConnectFailure(
  log: Logger,
  server: McpServerSpec,
  error: unknown,
  retryInMs: number,
  attempt: number,
): void {
  log.debug({ err: error, retryInMs, attempt }, "MCP server unreachable: connecting again after a delay");
  const summary = summariseStartFailure(error);
  const what = `MCP server ${quote(server.name)} ${server.kind === "stdio" ? "could not start" : "could not be reached"}`;
  if (attempt === 0) {
    log.warn({ ...summary.fields, retryInMs }, `${what}: ${summary.text}; trying again in ${retryInMs} ms`);
  } else if (isPowerOfTwo(attempt)) {
    log.warn(
      { error: summary.fields.error, failures: attempt + 1, retryInMs },
      `${what} after ${attempt + 1} attempts (${summary.short}); trying again in ${retryInMs} ms`,
    );
  }
}

function isPowerOfTwo(value: number): boolean {
  return value > 0 && (value & (value - 1)) === 0;
}
