import type { CallToolResult } from "@modelcontextprotocol/server";
import type { ToolResult } from "../../../gen/toolruntime/v1/tool_pb.js";
import { mcpMeta } from "./mcp-meta.js";

/**
 * A run's `ToolResult` as an MCP `tools/call` result. Success: the output is the
 * `structuredContent` and, for clients that read only text, a JSON text block. Failure:
 * `isError: true` with one text block "ERROR_TYPE: details" (what a model reads) and the whole
 * `ToolError` in `_meta["io.toolruntime/error"]` (what a program reads). Either way the execution
 * id is in `_meta["io.toolruntime/execution_id"]`, so a gRPC client can fetch or watch the run,
 * and the result's metadata in `_meta["io.toolruntime/metadata"]`.
 */
export function toCallToolResult(executionId: string, result: ToolResult): CallToolResult {
  const meta = { [mcpMeta.executionId]: executionId, [mcpMeta.metadata]: result.metadata ?? {} };
  if (result.success) {
    const output = result.output ?? {};
    return { content: [{ type: "text", text: JSON.stringify(output) }], structuredContent: output, _meta: meta };
  }
  const error = result.error;
  const errorType = error?.errorType ?? "HandlerError";
  const details = error?.details ?? "the run failed";
  return {
    isError: true,
    content: [{ type: "text", text: `${errorType}: ${details}` }],
    _meta: {
      ...meta,
      [mcpMeta.error]: { tool_name: error?.toolName ?? "", error_type: errorType, details },
    },
  };
}
