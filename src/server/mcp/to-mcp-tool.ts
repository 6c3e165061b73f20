import type { JsonObject } from "@bufbuild/protobuf";
import type { Tool } from "@modelcontextprotocol/server";
import type { ToolSpec } from "../../../gen/toolruntime/v1/tool_pb.js";
import { mcpMeta } from "./mcp-meta.js";

/**
 * A registered tool as an MCP `Tool`. The name stays the registry name (dots are valid in MCP tool
 * names). Schemas are the spec's (an unset schema is any object; a root without `type` gets
 * `"type": "object"`, which MCP requires and the runtime implies). Annotations come from the
 * enforced flags: `readOnlyHint` = read_only; `destructiveHint` = writes, always sent because MCP
 * assumes true when it is absent; `idempotentHint` = idempotent or read_only. All six flags, the
 * three without an MCP hint included, are in `_meta["io.toolruntime/capabilities"]`.
 */
export function toMcpTool(spec: ToolSpec): Tool {
  const flags = spec.capabilities;
  const readOnly = flags?.readOnly ?? false;
  return {
    name: spec.name,
    title: spec.name,
    ...(spec.description === "" ? {} : { description: spec.description }),
    inputSchema: toObjectSchema(spec.inputSchema) as Tool["inputSchema"],
    ...(spec.outputSchema ? { outputSchema: toObjectSchema(spec.outputSchema) } : {}),
    annotations: {
      title: spec.name,
      readOnlyHint: readOnly,
      destructiveHint: flags?.writes ?? false,
      idempotentHint: readOnly || (flags?.idempotent ?? false),
    },
    _meta: {
      [mcpMeta.capabilities]: {
        read_only: readOnly,
        writes: flags?.writes ?? false,
        checkpointable: flags?.checkpointable ?? false,
        idempotent: flags?.idempotent ?? false,
        unsafe: flags?.unsafe ?? false,
        human_approval_required: flags?.humanApprovalRequired ?? false,
      },
      [mcpMeta.version]: spec.version.toString(),
    },
  };
}

function toObjectSchema(schema: JsonObject | undefined): JsonObject {
  if (schema === undefined) return { type: "object" };
  return schema["type"] === undefined ? { type: "object", ...schema } : schema;
}
