import { ProtocolError } from "@modelcontextprotocol/client";
import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { ErrorType } from "../../errors/tool-runtime-error.js";
import { ProviderError } from "../../providers/provider-hub.js";
import { quote } from "../../registry/names.js";
import type { ToolContext } from "../../registry/tool-definition.js";
import { DeclaredFailure } from "../../runner/declared-failure.js";
import type { McpConnection } from "./connect-mcp-server.js";
import { toToolOutcome, type McpCallResult } from "./to-tool-output.js";

/**
 * The client's own request timeout is effectively off (one day, the longest run): the runtime
 * bounds every run with its timeout and cancels the request through the handler's signal.
 */
const clientTimeoutMs = 86_400_000;

/**
 * Runs one imported tool: `tools/call` of `mcpName` on the server behind `connection`, with the run's
 * inputs. Progress the server reports becomes the run's progress (progress/total as the fraction
 * when it sends a total); the run's signal cancels the request (the client sends the server's
 * cancellation). Returns the output (see toToolOutcome). Throws: a result with `isError` as a
 * HandlerError with the text content as details; a JSON-RPC error from the server as a
 * HandlerError naming its code; a transport failure (the server is gone or unreachable) as a
 * ProviderError.
 */
export async function callMcpTool(
  serverName: string,
  connection: McpConnection,
  mcpName: string,
  inputs: JsonObject,
  context: ToolContext,
): Promise<Record<string, unknown>> {
  let result: McpCallResult;
  const progressToken = randomUUID();
  const stopProgress = connection.onProgress(progressToken, (progress) =>
    context.reportProgress({
      ...(progress.total ? { fraction: Math.min(1, Math.max(0, progress.progress / progress.total)) } : {}),
      ...(progress.message === undefined ? {} : { message: progress.message }),
    }),
  );
  try {
    result = (await connection.client.callTool(
      { name: mcpName, arguments: inputs, _meta: { progressToken } },
      { signal: context.signal, timeout: clientTimeoutMs },
    )) as McpCallResult;
  } catch (error) {
    // The runner reports a run that was cancelled or timed out itself, whatever the client threw.
    if (context.signal.aborted) throw error;
    if (error instanceof ProtocolError) {
      throw DeclaredFailure.of(
        ErrorType.Handler,
        `MCP server ${quote(serverName)} answered error ${error.code}: ${error.message}`,
      );
    }
    throw new ProviderError(`MCP server ${quote(serverName)} failed: ${(error as Error).message ?? String(error)}`);
  } finally {
    // After the notifications dispatched with the response: they run a microtask before this.
    stopProgress();
  }
  const outcome = toToolOutcome(result);
  if (!outcome.ok) throw DeclaredFailure.of(ErrorType.Handler, outcome.details);
  return outcome.output;
}
