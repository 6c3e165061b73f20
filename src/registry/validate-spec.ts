import { create, type JsonObject } from "@bufbuild/protobuf";
import { ToolCapabilitySchema, ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { checkJsonObject } from "../json/check-json.js";
import { compileSchema, type SchemaCheck } from "../json/schema-validator.js";
import { maxDurationMs } from "./check-duration.js";
import { checkSegmentName, checkToolName, quote } from "./names.js";

/** Longest description, in characters. */
export const maxDescriptionLength = 4096;
/** Largest JSON Schema accepted for inputs or output, in bytes of JSON. */
export const maxSchemaBytes = 64 * 1024;
/** Deepest JSON Schema accepted for inputs or output. */
export const maxSchemaDepth = 32;
/** Longest default timeout a spec may declare: one day, in milliseconds. */
export const maxTimeoutMs = maxDurationMs;

/** A spec that passed {@link validateSpec}, with its compiled schema checks. */
export interface ValidatedSpec {
  readonly spec: ToolSpec;
  readonly checkInputs: SchemaCheck | undefined;
  readonly checkOutput: SchemaCheck | undefined;
}

/**
 * Checks a spec sent for registration and returns a clean copy (output-only fields cleared) with
 * its compiled schemas. Throws INVALID_ARGUMENT ("RegistrationError") naming the first problem:
 * the name, the description, the tool type, the read_only rule, or a schema.
 */
export function validateSpec(spec: ToolSpec | undefined): ValidatedSpec {
  if (!spec) throw registrationError("", "spec is missing: send the tool's ToolSpec");
  const nameError = checkToolName(spec.name);
  if (nameError) throw registrationError(spec.name, nameError.details);
  const name = spec.name;
  if (spec.description.length > maxDescriptionLength) {
    throw registrationError(
      name,
      `description of ${quote(name)} has ${spec.description.length} characters: the limit is ${maxDescriptionLength}`,
    );
  }
  const typeError = checkSegmentName(spec.toolType, "tool_type");
  if (typeError) throw registrationError(name, typeError.details);
  const capabilities = create(ToolCapabilitySchema, spec.capabilities ?? {});
  if (capabilities.readOnly && (capabilities.writes || capabilities.checkpointable)) {
    const flags = [capabilities.writes && "writes", capabilities.checkpointable && "checkpointable"]
      .filter(Boolean)
      .join(" and ");
    throw registrationError(
      name,
      `capabilities of ${quote(name)} are contradictory: a read_only tool cannot be ${flags}; clear read_only or ${flags}`,
    );
  }
  if (spec.defaultTimeoutMs > maxTimeoutMs) {
    throw registrationError(
      name,
      `default_timeout_ms of ${quote(name)} is ${spec.defaultTimeoutMs}: the limit is ${maxTimeoutMs} (one day)`,
    );
  }
  if (spec.maxTimeoutMs > maxTimeoutMs) {
    throw registrationError(
      name,
      `max_timeout_ms of ${quote(name)} is ${spec.maxTimeoutMs}: the limit is ${maxTimeoutMs} (one day)`,
    );
  }
  if (spec.maxTimeoutMs > 0 && spec.defaultTimeoutMs > spec.maxTimeoutMs) {
    throw registrationError(
      name,
      `default_timeout_ms of ${quote(name)} (${spec.defaultTimeoutMs}) exceeds its max_timeout_ms (${spec.maxTimeoutMs}): lower the default or raise the maximum`,
    );
  }
  const checkInputs = compileField(name, "input_schema", spec.inputSchema);
  const checkOutput = compileField(name, "output_schema", spec.outputSchema);
  const clean = create(ToolSpecSchema, {
    name,
    description: spec.description,
    toolType: spec.toolType,
    capabilities,
    defaultTimeoutMs: spec.defaultTimeoutMs,
    maxTimeoutMs: spec.maxTimeoutMs,
    maxConcurrency: spec.maxConcurrency,
    ...(spec.inputSchema ? { inputSchema: spec.inputSchema } : {}),
    ...(spec.outputSchema ? { outputSchema: spec.outputSchema } : {}),
  });
  return { spec: clean, checkInputs, checkOutput };
}

function compileField(name: string, field: string, schema: JsonObject | undefined): SchemaCheck | undefined {
  if (!schema) return undefined;
  const check = checkJsonObject(schema, field, { maxDepth: maxSchemaDepth, maxBytes: maxSchemaBytes });
  if (!check.ok) throw registrationError(name, `${check.problem} (tool ${quote(name)})`);
  try {
    return compileSchema(schema);
  } catch (error) {
    throw registrationError(
      name,
      `${field} of ${quote(name)} is not a valid JSON Schema (draft 2020-12): ${(error as Error).message}`,
    );
  }
}

function registrationError(name: string, details: string): ToolRuntimeError {
  return new ToolRuntimeError("INVALID_ARGUMENT", ErrorType.Registration, details, name);
}
