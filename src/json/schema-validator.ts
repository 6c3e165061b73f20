import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import type { JsonObject } from "@bufbuild/protobuf";
import { didYouMean } from "../errors/did-you-mean.js";
import { linearRegExpEngine, UnsupportedPatternError } from "./linear-regexp.js";
import { formatSchemaErrors, showValue } from "./schema-errors.js";

/** Checks a JSON value against a compiled schema; returns the problems found, empty when valid. */
export type SchemaCheck = (value: unknown) => string[];

/** Compiled schemas kept for reuse, keyed by their JSON text; cleared when full. */
const maxCachedSchemas = 10_000;

// One validator instance: compiled schemas are cached by ajv and here by text, so many tools that
// share a schema compile it once.
// - strictSchema: an unknown keyword ("requried") is an author's mistake that would silently check
//   nothing, so it is refused. Type, tuple and required strictness stay off: they reject valid
//   schemas that merely leave something implicit.
// - code.regExp: `pattern` and `patternProperties` run on a linear-time engine, so no pattern and
//   no input can stall the event loop (a backtracking engine takes seconds on `^(a+)+$`).
// - allowMatchingProperties: ajv's strict check of `properties` names against `patternProperties`
//   would run the patterns on the native, backtracking engine at registration.
// - validateFormats: false: `format` is an annotation (ajv-formats is not loaded).
// - verbose: errors carry the offending value and schema, for messages that show them.
const ajv = new Ajv2020({
  allErrors: true,
  strictSchema: true,
  strictNumbers: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  allowMatchingProperties: true,
  validateFormats: false,
  verbose: true,
  logger: false,
  code: { regExp: linearRegExpEngine },
});
const knownKeywords = Object.keys(ajv.RULES.keywords);
const cache = new Map<string, SchemaCheck>();

/** A schema that cannot be compiled; the message says what to fix. */
export class InvalidSchemaError extends Error {
  override readonly name = "InvalidSchemaError";
}

/**
 * Compiles a JSON Schema (draft 2020-12) into a {@link SchemaCheck}. Throws an
 * {@link InvalidSchemaError} whose message says what is wrong when the schema breaks the
 * meta-schema, uses an unknown keyword (with the nearest known one), refers to a schema it does
 * not contain, or has a pattern the linear-time engine refuses; its problems are listed by
 * {@link formatSchemaErrors}, as are those of the values checked later.
 */
export function compileSchema(schema: JsonObject): SchemaCheck {
  const key = JSON.stringify(schema);
  const cached = cache.get(key);
  if (cached) return cached;
  if (!ajv.validateSchema(schema)) {
    throw new InvalidSchemaError(formatSchemaErrors(ajv.errors ?? []).join("; "));
  }
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new InvalidSchemaError(describeCompileError(error), { cause: error });
  } finally {
    // ajv keeps every compiled schema; ours live in `cache` so ajv's copy is not needed.
    ajv.removeSchema(schema);
  }
  const check: SchemaCheck = (value) => (validate(value) ? [] : formatSchemaErrors(validate.errors ?? []));
  if (cache.size >= maxCachedSchemas) cache.clear();
  cache.set(key, check);
  return check;
}

function describeCompileError(error: unknown): string {
  if (error instanceof UnsupportedPatternError) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  const unknownKeyword = /^strict mode: unknown keyword: "(.*)"$/.exec(message)?.[1];
  if (unknownKeyword !== undefined) {
    return `it uses the unknown keyword ${showValue(unknownKeyword)}${didYouMean(unknownKeyword, knownKeywords) || ": use only draft 2020-12 keywords"}`;
  }
  return message.replace(/^strict mode: /, "");
}
