import { create, type JsonObject } from "@bufbuild/protobuf";
import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { checkJsonObject, measureJsonObject, type JsonCheck } from "../json/check-json.js";
import { showValue } from "../json/schema-errors.js";
import { checkSchema, CostlySchemaError, InvalidSchemaError } from "../json/schema-validator.js";
import { maxDurationMs } from "./check-duration.js";
import { checkSegmentName, checkToolName, quote } from "./names.js";
import { sharedCapabilities } from "./shared-capabilities.js";

/** Longest description, in characters. */
export const maxDescriptionLength = 4096;
/** Largest JSON Schema accepted for inputs or output, in bytes of JSON. */
export const maxSchemaBytes = 64 * 1024;
/** Deepest JSON Schema accepted for inputs or output. */
export const maxSchemaDepth = 32;
/** Longest default timeout a spec may declare: one day, in milliseconds. */
export const maxTimeoutMs = maxDurationMs;

/** A spec that passed {@link validateSpec}. Its schemas are compiled when first used. */
export interface ValidatedSpec {
  /** A new object, the caller's to complete (its `has_handler` and `version`, say). */
  readonly spec: ToolSpec;
}

/** How messages name the fields of a spec: as the author wrote them. */
export interface SpecKeyNames {
  readonly toolType: string;
  readonly readOnly: string;
  readonly defaultTimeoutMs: string;
  readonly maxTimeoutMs: string;
  readonly inputSchema: string;
  readonly outputSchema: string;
}

/** The field names of ToolSpec on the wire (protobuf), the default of {@link validateSpec}. */
export const wireKeyNames: SpecKeyNames = {
  toolType: "tool_type",
  readOnly: "read_only",
  defaultTimeoutMs: "default_timeout_ms",
  maxTimeoutMs: "max_timeout_ms",
  inputSchema: "input_schema",
  outputSchema: "output_schema",
};

/**
 * Checks a spec sent for registration and returns a clean copy (output-only fields cleared).
 * Schemas are checked as strictly as compiling them would, but mostly without compiling them
 * (see `checkSchema`). Throws INVALID_ARGUMENT ("RegistrationError") naming the first problem:
 * the name, the description, the tool type, the read_only rule, or a schema (not draft 2020-12,
 * an unknown keyword, a root that refuses objects, a pattern the linear-time engine refuses, or
 * a schema whose check of one value may take more work than a check is allowed: "is too costly to
 * check", naming the construct and where it is).
 * Messages name fields by `keys` (default: the protobuf names). With `owned`, the spec's schemas
 * are the caller's to give away (decoded from a request) and are kept as they are, not copied.
 */
export function validateSpec(
  spec: ToolSpec | undefined,
  keys: SpecKeyNames = wireKeyNames,
  options: { readonly owned?: boolean | undefined } = {},
): ValidatedSpec {
  if (!spec) throw registrationError("", "spec is missing: send the tool's ToolSpec");
  const nameError = checkToolName(spec.name);
  if (nameError) throw registrationError(spec.name, nameError.details);
  const name = spec.name;
  // Characters are code points: an emoji is one, though a JavaScript string counts it twice. The
  // length in UTF-16 units bounds the count, so only a description that may be over is counted.
  if (spec.description.length > maxDescriptionLength) {
    const characters = codePoints(spec.description);
    if (characters > maxDescriptionLength) {
      throw registrationError(
        name,
        `description of ${quote(name)} has ${characters} characters: the limit is ${maxDescriptionLength}`,
      );
    }
  }
  const typeError = checkSegmentName(spec.toolType, keys.toolType);
  if (typeError) throw registrationError(name, typeError.details);
  const capabilities = sharedCapabilities(spec.capabilities);
  if (capabilities.readOnly && (capabilities.writes || capabilities.checkpointable)) {
    const flags = [capabilities.writes && "writes", capabilities.checkpointable && "checkpointable"]
      .filter(Boolean)
      .join(" and ");
    throw registrationError(
      name,
      `capabilities of ${quote(name)} are contradictory: a ${keys.readOnly} tool cannot be ${flags}; clear ${keys.readOnly} or ${flags}`,
    );
  }
  if (spec.defaultTimeoutMs > maxTimeoutMs) {
    throw registrationError(
      name,
      `${keys.defaultTimeoutMs} of ${quote(name)} is ${spec.defaultTimeoutMs}: the limit is ${maxTimeoutMs} (one day)`,
    );
  }
  if (spec.maxTimeoutMs > maxTimeoutMs) {
    throw registrationError(
      name,
      `${keys.maxTimeoutMs} of ${quote(name)} is ${spec.maxTimeoutMs}: the limit is ${maxTimeoutMs} (one day)`,
    );
  }
  if (spec.maxTimeoutMs > 0 && spec.defaultTimeoutMs > spec.maxTimeoutMs) {
    throw registrationError(
      name,
      `${keys.defaultTimeoutMs} of ${quote(name)} (${spec.defaultTimeoutMs}) exceeds its ${keys.maxTimeoutMs} (${spec.maxTimeoutMs}): lower the default or raise the maximum`,
    );
  }
  const owned = options.owned ?? false;
  const inputSchema = checkSchemaField(name, keys.inputSchema, spec.inputSchema, owned);
  const outputSchema = checkSchemaField(name, keys.outputSchema, spec.outputSchema, owned);
  const clean = create(ToolSpecSchema, {
    name,
    description: spec.description,
    toolType: spec.toolType,
    capabilities,
    defaultTimeoutMs: spec.defaultTimeoutMs,
    maxTimeoutMs: spec.maxTimeoutMs,
    maxConcurrency: spec.maxConcurrency,
    ...(inputSchema ? { inputSchema } : {}),
    ...(outputSchema ? { outputSchema } : {}),
  });
  return { spec: clean };
}

/**
 * Checks one schema of a spec and returns the one to keep: the schema itself when `owned` (decoded
 * from a request, nobody else holds it), else the copy the JSON check made, so that an author's
 * later change cannot reach it.
 */
function checkSchemaField(
  name: string,
  field: string,
  schema: JsonObject | undefined,
  owned: boolean,
): JsonObject | undefined {
  if (!schema) return undefined;
  const limits = { maxDepth: maxSchemaDepth, maxBytes: maxSchemaBytes };
  const check = owned ? measureJsonObject(schema, field, limits) : checkJsonObject(schema, field, limits);
  if (!check.ok) throw registrationError(name, `${check.problem} (tool ${quote(name)})`);
  const kept: JsonObject = owned ? schema : (check as JsonCheck & { ok: true }).value;
  const rootProblem = checkAcceptsObjects(kept);
  if (rootProblem) throw registrationError(name, `${field} of ${quote(name)} ${rootProblem}`);
  try {
    checkSchema(kept);
    return kept;
  } catch (error) {
    if (!(error instanceof InvalidSchemaError)) throw error;
    const reason =
      error instanceof CostlySchemaError ? "is too costly to check" : "is not a valid JSON Schema (draft 2020-12)";
    throw registrationError(name, `${field} of ${quote(name)} ${reason}: ${error.message}`);
  }
}

/** Inputs and outputs are always JSON objects: a root schema whose `type` excludes them is a mistake. */
function checkAcceptsObjects(schema: JsonObject): string | undefined {
  const type = schema["type"];
  if (type === undefined || type === "object" || (Array.isArray(type) && type.includes("object"))) return undefined;
  return `must accept a JSON object at its root (inputs and outputs are always objects), but its "type" is ${showValue(type)}: use "type": "object"`;
}

function registrationError(name: string, details: string): ToolRuntimeError {
  return new ToolRuntimeError("INVALID_ARGUMENT", ErrorType.Registration, details, name);
}

/** The number of Unicode code points in `text` (a lone surrogate counts as one). */
function codePoints(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}
