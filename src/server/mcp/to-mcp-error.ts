import { Code } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { Logger } from "pino";
import { ToolErrorSchema } from "../../../gen/toolruntime/v1/tool_pb.js";
import { toConnectError } from "../to-connect-error.js";
import { mcpMeta } from "./mcp-meta.js";

/** JSON-RPC's range for errors an implementation defines (-32000 to -32099): a refused call. */
export const refusedCallCode = -32000;

/**
 * What a tools/call or tools/list handler threw, as the JSON-RPC error the client gets. The status
 * code and `ToolError` come from {@link toConnectError}, the one place that maps domain errors
 * (a bug becomes INTERNAL with a generic message, its cause logged). An unknown tool or invalid
 * arguments are -32602 (Invalid Params, as MCP specifies for an unknown tool), a bug -32603, any
 * other refusal (permission, unsafe not acknowledged, queue full, shutdown…) -32000. The data
 * holds the status code name (`"permission_denied"`) and the `ToolError`.
 */
export function toMcpError(thrown: unknown, logger: Logger, toolName = ""): ProtocolError {
  const error = toConnectError(thrown, logger, toolName);
  const [toolError] = error.findDetails(ToolErrorSchema);
  const jsonRpcCode =
    error.code === Code.InvalidArgument || error.code === Code.NotFound
      ? ProtocolErrorCode.InvalidParams
      : error.code === Code.Internal
        ? ProtocolErrorCode.InternalError
        : refusedCallCode;
  return new ProtocolError(jsonRpcCode, error.rawMessage, {
    code: codeToString(error.code),
    [mcpMeta.toolError]: {
      tool_name: toolError?.toolName ?? toolName,
      error_type: toolError?.errorType ?? "",
      details: toolError?.details ?? error.rawMessage,
      ...(toolError?.retryAfterMs ? { retry_after_ms: toolError.retryAfterMs } : {}),
    },
  });
}
