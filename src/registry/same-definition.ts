import { create, equals } from "@bufbuild/protobuf";
import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";

/** Whether a stored spec and a fresh one define the same tool (ignoring the registry's version). */
export function sameDefinition(stored: ToolSpec, fresh: ToolSpec): boolean {
  return equals(ToolSpecSchema, create(ToolSpecSchema, { ...stored, version: 0n }), fresh);
}
