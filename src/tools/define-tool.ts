import { create, type JsonObject } from "@bufbuild/protobuf";
import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import type { CheckpointHooks, ToolHandler } from "../registry/tool-definition.js";
import { validateSpec, type SpecKeyNames } from "../registry/validate-spec.js";
import { checkDefinitionKeys } from "./check-definition-keys.js";

// A registry-wide symbol, so tools defined against another copy of this package are recognised.
const definedToolBrand = Symbol.for("toolruntime.definedTool");

/** Capability flags of a tool; any flag left out is false. */
export interface ToolCapabilityFlags {
  readonly readOnly?: boolean;
  readonly writes?: boolean;
  readonly checkpointable?: boolean;
  readonly idempotent?: boolean;
  readonly unsafe?: boolean;
  readonly humanApprovalRequired?: boolean;
}

/** What {@link defineTool} takes: the fields of a ToolSpec and the handler. */
export interface ToolDefinitionInit {
  /** Namespaced name, for example "fs.read_file" (grammar: ToolSpec.name in the proto). */
  readonly name: string;
  readonly description?: string;
  readonly toolType?: string;
  readonly capabilities?: ToolCapabilityFlags;
  /** JSON Schema (draft 2020-12) of the inputs. */
  readonly inputSchema?: JsonObject;
  /** JSON Schema (draft 2020-12) of the output. */
  readonly outputSchema?: JsonObject;
  /** Timeout of a run when the caller sets none, in milliseconds; 0 or absent for the server's. */
  readonly defaultTimeoutMs?: number;
  /** Longest timeout a caller may ask for, in milliseconds; 0 or absent for one day. */
  readonly maxTimeoutMs?: number;
  /** Most runs of this tool at once; 0 or absent for no limit of its own. */
  readonly maxConcurrency?: number;
  /** Does the work; see ToolHandler. */
  readonly handler: ToolHandler;
  /** Checkpoint and rollback; only for a tool whose capabilities say `checkpointable`. */
  readonly hooks?: CheckpointHooks;
}

/** A validated tool ready to register in a server. */
export interface DefinedTool {
  readonly [definedToolBrand]: true;
  readonly spec: ToolSpec;
  readonly handler: ToolHandler;
  readonly hooks: CheckpointHooks | undefined;
}

/** Messages about a definition name its keys as the author wrote them. */
const definitionKeyNames: SpecKeyNames = {
  toolType: "toolType",
  readOnly: "readOnly",
  defaultTimeoutMs: "defaultTimeoutMs",
  maxTimeoutMs: "maxTimeoutMs",
  inputSchema: "inputSchema",
  outputSchema: "outputSchema",
};

/**
 * Defines a tool that a server can register and execute in-process. Validates the definition at
 * once and throws a ToolRuntimeError (INVALID_ARGUMENT, "RegistrationError") saying what is wrong:
 * an unknown key (with the nearest known one: `input_schema` → `inputSchema`), a value of the
 * wrong kind, the name grammar, the readOnly rule, or a schema (draft 2020-12, no unknown keywords,
 * a root that accepts objects, patterns the linear-time engine can evaluate). Throws a TypeError
 * without a handler.
 */
export function defineTool(init: ToolDefinitionInit): DefinedTool {
  checkDefinitionKeys(init);
  if (typeof init.handler !== "function") {
    throw new TypeError(`tool ${JSON.stringify(init.name)} has no handler: pass a function as "handler"`);
  }
  const { spec } = validateSpec(
    create(ToolSpecSchema, {
      name: init.name,
      description: init.description ?? "",
      toolType: init.toolType ?? "",
      capabilities: init.capabilities ?? {},
      defaultTimeoutMs: init.defaultTimeoutMs ?? 0,
      maxTimeoutMs: init.maxTimeoutMs ?? 0,
      maxConcurrency: init.maxConcurrency ?? 0,
      ...(init.inputSchema ? { inputSchema: init.inputSchema } : {}),
      ...(init.outputSchema ? { outputSchema: init.outputSchema } : {}),
    }),
    definitionKeyNames,
  );
  if (init.hooks && !spec.capabilities?.checkpointable) {
    throw new TypeError(
      `tool ${JSON.stringify(init.name)} has checkpoint hooks but is not checkpointable: set capabilities.checkpointable`,
    );
  }
  return { [definedToolBrand]: true, spec, handler: init.handler, hooks: init.hooks };
}

/** Whether `value` was made by {@link defineTool}. */
export function isDefinedTool(value: unknown): value is DefinedTool {
  return typeof value === "object" && value !== null && definedToolBrand in value;
}
