import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import type { JsonObject } from "@bufbuild/protobuf";

/** Checks a JSON value against a compiled schema; returns the problems found, empty when valid. */
export type SchemaCheck = (value: unknown) => string[];

/** Most problems listed for one value; the rest are summarised. */
const maxListedProblems = 10;
/** Compiled schemas kept for reuse, keyed by their JSON text; cleared when full. */
const maxCachedSchemas = 10_000;

// One validator instance: compiled schemas are cached by ajv and here by text, so many tools that
// share a schema compile it once. `strict: false` accepts the annotation keywords tools use freely.
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: false });
const cache = new Map<string, SchemaCheck>();

/**
 * Compiles a JSON Schema (draft 2020-12) into a {@link SchemaCheck}. Throws an Error whose message
 * says what is wrong when the schema is invalid or refers to a schema it does not contain.
 */
export function compileSchema(schema: JsonObject): SchemaCheck {
  const key = JSON.stringify(schema);
  const cached = cache.get(key);
  if (cached) return cached;
  if (!ajv.validateSchema(schema)) {
    throw new Error(formatProblems(ajv.errors ?? []).join("; "));
  }
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new Error(error instanceof Error ? error.message : String(error), { cause: error });
  } finally {
    // ajv keeps every compiled schema; ours live in `cache` so ajv's copy is not needed.
    ajv.removeSchema(schema);
  }
  const check: SchemaCheck = (value) => (validate(value) ? [] : formatProblems(validate.errors ?? []));
  if (cache.size >= maxCachedSchemas) cache.clear();
  cache.set(key, check);
  return check;
}

function formatProblems(errors: readonly ErrorObject[]): string[] {
  const problems = errors
    .slice(0, maxListedProblems)
    .map((error) => `${error.instancePath === "" ? "(root)" : error.instancePath} ${error.message ?? "is invalid"}`);
  if (errors.length > maxListedProblems) {
    problems.push(`and ${errors.length - maxListedProblems} more`);
  }
  return problems;
}
