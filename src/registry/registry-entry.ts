import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import type { SchemaCheck } from "../json/schema-validator.js";
import { lazySchemaCheck } from "./lazy-schema-check.js";
import type { CheckpointHooks, RegisteredTool, ToolHandler } from "./tool-definition.js";

/**
 * A tool as a {@link ToolRegistry} holds it: the spec and, when this process serves the tool, its
 * handler and hooks. The schema checks are made when read (they compile on first use), so an
 * entry holds three references and no closure: at 100,000 tools that is most of the difference
 * between the registry's memory and that of the specs alone.
 */
export class RegistryEntry implements RegisteredTool {
  constructor(
    readonly spec: ToolSpec,
    readonly handler: ToolHandler | undefined = undefined,
    readonly hooks: CheckpointHooks | undefined = undefined,
  ) {}

  get checkInputs(): SchemaCheck | undefined {
    return lazySchemaCheck(this.spec.inputSchema);
  }

  get checkOutput(): SchemaCheck | undefined {
    return lazySchemaCheck(this.spec.outputSchema);
  }
}
