import { Ajv2020, type Options, type ValidateFunction } from "ajv/dist/2020.js";
import type { JsonObject } from "@bufbuild/protobuf";
import { didYouMean } from "../errors/did-you-mean.js";
import { chargeKeywordDefinition, checkCharges, withCharges } from "./budget-keyword.js";
import {
  CheckBudgetExceededError,
  checkBudgetUnits,
  maxListedErrors,
  maxPendingErrors,
  withCheckBudget,
} from "./check-budget.js";
import { CompiledSchemas, type CompiledSlot, type SchemaCheck, type SchemaCompiler } from "./compiled-schemas.js";
import { itemwiseContains } from "./contains-keyword.js";
import { hashedEnum, hashedUniqueItems } from "./hashed-keywords.js";
import {
  compileLinearRegExp,
  linearRegExpEngine,
  schemaPatternBudget,
  spendPatternBudget,
  UnsupportedPatternError,
  withPatternBudget,
} from "./linear-regexp.js";
import { checkSchemaCost } from "./schema-cost.js";
import { formatSchemaErrors, showValue } from "./schema-errors.js";
import { findEndlessReference } from "./endless-references.js";
import { isSurelyCompilable } from "./surely-compilable.js";
import { conformsToMetaSchema } from "./surely-meta-valid.js";

export type { SchemaCheck } from "./compiled-schemas.js";
export { CheckBudgetExceededError } from "./check-budget.js";

/** Most schemas compiled per generation of the compiler (about 10 KiB of heap each for 1 KiB of schema). */
const maxCompiledSchemas = 2000;
/**
 * The check that lists a failed value's errors may take a quarter of the units of the check that
 * found it failed, and 50 ms whatever the value's size: the answer is known, only its message is
 * at stake.
 */
const listingShare = 4;
const listingTimeFloorMs = 50;
/** Most patterns remembered as accepted by the linear-time engine; forgotten all at once past it. */
const maxAcceptedPatterns = 10_000;

// - strictSchema: an unknown keyword ("requried") is an author's mistake that would silently check
//   nothing, so it is refused. Type, tuple and required strictness stay off: they reject valid
//   schemas that merely leave something implicit.
// - code.regExp: `pattern` and `patternProperties` run on a linear-time engine, so no pattern and
//   no input can stall the event loop (a backtracking engine takes seconds on `^(a+)+$`).
// - allowMatchingProperties: ajv's strict check of `properties` names against `patternProperties`
//   would run the patterns on the native, backtracking engine at registration.
// - validateFormats: false: `format` is an annotation (ajv-formats is not loaded).
// - verbose: errors carry the offending value and schema, for messages that show them.
// - allErrors: the meta-schema check lists every problem of a schema (its size is bounded). A value
//   is checked without it, to its first error: with it, ajv tries every alternative and keeps an
//   error for each, which a chain of references turns into millions (see newCompiler).
const options: Options = {
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
};
// Checks schemas against the meta-schema; it never compiles an author's schema, so it never grows.
const checker = new Ajv2020(options);
const knownKeywords = Object.keys(checker.RULES.keywords);
const compiled = new CompiledSchemas(maxCompiledSchemas, newCompiler);
/** Patterns the engine accepted, with what compiling each takes from a schema's budget. */
const acceptedPatterns = new Map<string, number>();
/** The compiled check of each schema object that was used, so a run does not serialise its schema. */
const slotsBySchema = new WeakMap<JsonObject, CompiledSlot>();

/** A schema that cannot be compiled; the message says what to fix. */
export class InvalidSchemaError extends Error {
  override readonly name: string = "InvalidSchemaError";
}

/**
 * A schema refused because checking one value against it may take more work than a check is
 * allowed (see `checkSchemaCost`); the message names the construct, where it is, and what to change.
 */
export class CostlySchemaError extends InvalidSchemaError {
  override readonly name = "CostlySchemaError";
}

/**
 * Checks that a JSON Schema (draft 2020-12) is valid without compiling it when it can: throws an
 * {@link InvalidSchemaError} exactly as {@link compileSchema} would. It checks the meta-schema (a
 * walk of its own for the usual keywords, see {@link conformsToMetaSchema}; the meta-schema itself
 * otherwise), then walks the schema ({@link isSurelyCompilable}); only a schema that walk is not
 * sure of is compiled here (and kept for its first use). A valid schema costs a fraction of a
 * millisecond instead of several; it is compiled when something is first checked against it. Its
 * JSON text (the compiled schemas' key) is made only to compile it: a schema decoded from a request
 * is made of dictionaries, whose text costs more than both walks together.
 */
export function checkSchema(schema: JsonObject): void {
  checkBeforeCompiling(schema);
  // Each step compiles the schema's patterns once at most, within one budget (see withPatternBudget).
  if (!withPatternBudget(schemaPatternBudget, () => isSurelyCompilable(schema, acceptsPattern))) {
    withPatternBudget(schemaPatternBudget, () => compiled.slot(schema, JSON.stringify(schema)));
  }
}

/**
 * Compiles a JSON Schema (draft 2020-12) into a {@link SchemaCheck}. Throws an
 * {@link InvalidSchemaError} whose message says what is wrong when the schema breaks the
 * meta-schema, uses an unknown keyword (with the nearest known one), refers to a schema it does
 * not contain, or has a pattern the linear-time engine refuses; its problems are listed by
 * {@link formatSchemaErrors}, as are those of the values checked later. Throws a
 * {@link CostlySchemaError} for a schema whose check of one value may take too much work (see
 * `checkSchemaCost`). Schemas with the same JSON text share one compiled validator.
 */
export function compileSchema(schema: JsonObject): SchemaCheck {
  const json = JSON.stringify(schema);
  if (!compiled.has(json)) checkBeforeCompiling(schema);
  slotsBySchema.set(
    schema,
    withPatternBudget(schemaPatternBudget, () => compiled.slot(schema, json)),
  );
  return (value, sizeBytes) => checkAgainstSchema(schema, value, sizeBytes);
}

/**
 * Checks `value` against `schema`, compiling the schema on its first use (a few milliseconds for a
 * schema of 1 KiB, during which the event loop waits) and again after its compiled form was
 * dropped to bound memory. A schema that cannot be compiled (one a store holds that this process
 * did not check) yields a problem saying so rather than a throw.
 *
 * The check may take work in proportion to `sizeBytes`, the size of the value's JSON (measured
 * when not given; see `check-budget.ts`), and throws a {@link CheckBudgetExceededError} past it:
 * a schema accepted by {@link checkSchema} takes at most `maxUnitsPerValue` units per value at any
 * depth, which the budget covers for most values, but its worst case over a large value may not.
 */
export function checkAgainstSchema(schema: JsonObject, value: unknown, sizeBytes?: number): string[] {
  let slot = slotsBySchema.get(schema);
  if (!slot?.check) {
    try {
      const json = JSON.stringify(schema);
      if (!compiled.has(json)) checkBeforeCompiling(schema);
      // Within the budget its registration was checked with (a schema from a store included).
      slot = withPatternBudget(schemaPatternBudget, () => compiled.slot(schema, json));
    } catch (error) {
      if (!(error instanceof InvalidSchemaError)) throw error;
      const reason =
        error instanceof CostlySchemaError
          ? "it is too costly to check"
          : "it is not a valid JSON Schema (draft 2020-12)";
      const problem = `the schema cannot be used: ${reason}: ${error.message}`;
      slot = { check: () => [problem] };
    }
    slotsBySchema.set(schema, slot);
  }
  return (slot.check as SchemaCheck)(value, sizeBytes);
}

/**
 * Throws an {@link InvalidSchemaError} when `schema` cannot be checked against (see
 * {@link checkMetaSchema}), and a {@link CostlySchemaError} when checking a value against it may
 * take too much work (see `checkSchemaCost`, which also refuses a few constructs no check can use).
 */
function checkBeforeCompiling(schema: JsonObject): void {
  checkMetaSchema(schema);
  const problem = checkSchemaCost(schema);
  if (problem === undefined) return;
  throw problem.kind === "costly" ? new CostlySchemaError(problem.message) : new InvalidSchemaError(problem.message);
}

/**
 * Throws an {@link InvalidSchemaError} when `schema` breaks the meta-schema. A schema the walk of
 * {@link conformsToMetaSchema} is sure of skips the checker, which costs tens of microseconds for a
 * schema of 1 KiB (most of a registration's schema check).
 */
function checkMetaSchema(schema: JsonObject): void {
  const endless = findEndlessReference(schema);
  if (endless !== undefined) {
    throw new InvalidSchemaError(
      `its "$ref": ${showValue(endless)} leads back to a schema that checks the same value without descending into it, so checking any value would never end: refer back only from within "properties", "items" or another keyword that checks a part of the value`,
    );
  }
  if (conformsToMetaSchema(schema)) return;
  let valid: boolean;
  try {
    valid = checker.validateSchema(schema) as boolean;
  } catch (error) {
    // ajv throws for a "$schema" naming a meta-schema it does not hold (draft-07, say).
    throw new InvalidSchemaError(
      `its "$schema" is ${showValue(schema["$schema"])}, a meta-schema this server does not know: use "https://json-schema.org/draft/2020-12/schema" or leave "$schema" out`,
      { cause: error },
    );
  }
  if (!valid) throw new InvalidSchemaError(formatSchemaErrors(checker.errors ?? []).join("; "));
}

/**
 * The compiler of one generation: fresh ajv instances, whose copies of each schema are not kept.
 * Each schema is compiled as a copy that charges the check's budget (see `withCharges`), with
 * `enum`, `uniqueItems` and `contains` implemented here in linear time (ajv's own are quadratic in
 * the cases their modules describe). A value is first checked to its first error, which decides;
 * only a value that fails is checked again with every error collected (compiled on the first
 * failure), within a quarter of the units and at most `maxListedErrors` errors: past either, the
 * answer is the first error and "and more".
 */
function newCompiler(): SchemaCompiler {
  const decider = newAjv(false, maxPendingErrors);
  const lister = newAjv(true, maxListedErrors);
  const isChecked = (keyword: string): boolean => decider.RULES.all[keyword] !== undefined;
  return (schema) => {
    const charged = withCharges(schema, isChecked);
    const decide = compileWith(decider, charged);
    let list: ValidateFunction | undefined;
    return (value, sizeBytes) => {
      const size = sizeBytes ?? jsonSize(value);
      try {
        if (withCheckBudget(size, () => decide(value))) return [];
        const first = decide.errors ?? [];
        try {
          const listAll = (list ??= compileWith(lister, charged));
          const listed = withCheckBudget(size, () => listAll(value), {
            units: checkBudgetUnits(size) / listingShare,
            timeFloorMs: listingTimeFloorMs,
          });
          if (!listed) return formatSchemaErrors(listAll.errors ?? first);
        } catch (error) {
          if (!(error instanceof CheckBudgetExceededError || error instanceof RangeError)) throw error;
        }
        // The list took too long or held too many errors: the first error, and that there are others.
        return [...formatSchemaErrors(first), "and more"];
      } catch (error) {
        // A schema that refers to itself without end through what the checks before compiling do
        // not follow: checking recursed until the stack ran out.
        if (error instanceof RangeError) {
          return [
            "the value could not be checked: the schema refers to itself without end (its $id, $anchor or $dynamicRef references)",
          ];
        }
        throw error;
      }
    };
  };
}

/** An ajv instance for compiling, with the keywords of this server, checked once (see `checkCharges`). */
function newAjv(allErrors: boolean, maxErrors: number): Ajv2020 {
  // Compilers skip ajv's own meta-schema check: every schema passes `checker` first.
  const ajv = new Ajv2020({ ...options, allErrors, validateSchema: false });
  for (const keyword of ["enum", "uniqueItems", "contains"]) ajv.removeKeyword(keyword);
  // uniqueItems first: contains goes before it, as in ajv's own order.
  for (const definition of [hashedEnum, hashedUniqueItems, itemwiseContains, chargeKeywordDefinition(maxErrors)]) {
    ajv.addKeyword(definition);
  }
  checkCharges(ajv);
  return ajv;
}

/** Compiles the charged copy of a schema; ajv keeps no copy of it. */
function compileWith(ajv: Ajv2020, charged: JsonObject): ValidateFunction {
  try {
    return ajv.compile(charged);
  } catch (error) {
    throw new InvalidSchemaError(describeCompileError(error), { cause: error });
  } finally {
    ajv.removeSchema(charged);
  }
}

/** The size of `value` as JSON, in characters (bytes for ASCII); 0 when it is not JSON. */
function jsonSize(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}

/** Whether the linear-time engine accepts `pattern`; remembered, since patterns repeat across tools. */
function acceptsPattern(pattern: string): boolean {
  let size = acceptedPatterns.get(pattern);
  try {
    if (size === undefined) size = compileLinearRegExp(pattern).size;
    // Charged again when known: the compiler compiles each occurrence when the schema is first used.
    else spendPatternBudget(pattern, size);
  } catch (error) {
    if (error instanceof UnsupportedPatternError) return false;
    throw error;
  }
  if (!acceptedPatterns.has(pattern)) {
    if (acceptedPatterns.size >= maxAcceptedPatterns) acceptedPatterns.clear();
    acceptedPatterns.set(pattern, size);
  }
  return true;
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
