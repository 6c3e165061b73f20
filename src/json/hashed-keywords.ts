import type { JsonValue } from "@bufbuild/protobuf";
import { _, str, type Code, type CodeKeywordDefinition, type KeywordErrorDefinition } from "ajv/dist/2020.js";
import { spendCheckBudget } from "./check-budget.js";
import { hashJson, jsonEquals } from "./json-hash.js";
import { isComparedEnum } from "./work-units.js";

/**
 * `enum` and `uniqueItems` checked by hashing, in place of ajv's own. ajv compares a value with
 * each allowed value in turn (an enum of 10,000 values over 10,000 items: 10^8 comparisons), and
 * every item of an array with every other unless the items' type is a scalar (50,000 integers
 * without a declared type: over 5 s). Here a value is looked up in a set of the allowed values,
 * and items in a map of those already seen: time linear in the value's size. Both give ajv's
 * answers, errors and parameters (`test/unit/hashed-keywords.test.ts` holds them to ajv's).
 */

/** The allowed values of an enum, looked up by hash: scalars as they are, the others by {@link hashJson}. */
export class EnumValues {
  readonly #scalars = new Set<unknown>();
  readonly #composites = new Map<number, JsonValue[]>();
  #largest = 0;

  constructor(values: readonly JsonValue[]) {
    for (const value of values) {
      if (typeof value !== "object" || value === null) {
        this.#scalars.add(value);
        continue;
      }
      const { hash, size } = hashJson(value) as { hash: number; size: number };
      const same = this.#composites.get(hash);
      if (same) same.push(value);
      else this.#composites.set(hash, [value]);
      this.#largest = Math.max(this.#largest, size);
    }
  }

  /** Whether `value` deep-equals one of the values, as ajv's enum finds; charges the check's budget. */
  has(value: unknown): boolean {
    // A Set compares as `===` does but for NaN, which JSON cannot hold.
    if (typeof value !== "object" || value === null) {
      spendCheckBudget(1);
      return this.#scalars.has(value);
    }
    if (this.#composites.size === 0) {
      spendCheckBudget(1);
      return false;
    }
    const hashed = hashJson(value, this.#largest);
    if (hashed === undefined) {
      spendCheckBudget(this.#largest);
      return false;
    }
    const candidates = this.#composites.get(hashed.hash) ?? [];
    // Each comparison takes at most the candidate's size, no larger than the value's.
    spendCheckBudget(hashed.size * (1 + candidates.length));
    return candidates.some((candidate) => jsonEquals(value, candidate));
  }
}

const enumError: KeywordErrorDefinition = {
  message: "must be equal to one of the allowed values",
  params: ({ schemaCode }) => _`{allowedValues: ${schemaCode}}`,
};

/** `enum`: a few scalars compared inline as ajv does, any other enum looked up in an {@link EnumValues}. */
export const hashedEnum: CodeKeywordDefinition = {
  keyword: "enum",
  schemaType: "array",
  before: "not",
  error: enumError,
  code(cxt) {
    const { gen, data } = cxt;
    const values = cxt.schema as JsonValue[];
    if (values.length === 0) throw new Error("enum must have non-empty array");
    if (isComparedEnum(values)) {
      // isComparedEnum: scalars only, which ajv's code generator writes out as literals.
      const comparisons = values.map((value): Code => _`${data} === ${value as string | number | boolean | null}`);
      cxt.pass(comparisons.reduce((either, comparison) => _`${either} || ${comparison}`));
      return;
    }
    const set = gen.scopeValue("obj", { ref: new EnumValues(values) });
    cxt.pass(_`${set}.has(${data})`);
  },
};

/** The pair of equal items a check reports, as ajv names them (`i`, `j`), or undefined when there is none. */
type Duplicate = readonly [i: number, j: number] | undefined;

/**
 * The duplicate ajv reports when the items' declared types are all scalars: scanning from the
 * end, the first item (i) equal to a later one (j, the nearest), among items of those types.
 */
function scalarDuplicate(types: readonly string[]): (items: readonly unknown[]) => Duplicate {
  return (items) => {
    const seen = new Map<unknown, number>();
    spendCheckBudget(1 + items.length);
    for (let i = items.length - 1; i >= 0; i--) {
      const item = items[i];
      if (!hasType(item, types)) continue;
      const j = seen.get(item);
      if (j !== undefined) return [i, j];
      seen.set(item, i);
    }
    return undefined;
  };
}

/**
 * The duplicate ajv reports otherwise (it compares every pair, from the end): the last item (i)
 * equal to an earlier one, with the nearest such earlier one (j). Items are grouped by hash; the
 * comparisons within a group are charged to the check's budget, so that values that collide cost
 * their comparisons, not more.
 */
function anyDuplicate(items: readonly unknown[]): Duplicate {
  const scalars = new Map<unknown, number>();
  const composites = new Map<number, number[]>();
  let found: Duplicate;
  spendCheckBudget(1 + items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    let j: number | undefined;
    if (typeof item !== "object" || item === null) {
      j = scalars.get(item);
      scalars.set(item, i);
    } else {
      const { hash, size } = hashJson(item) as { hash: number; size: number };
      spendCheckBudget(size);
      const same = composites.get(hash);
      if (same) {
        for (let k = same.length - 1; k >= 0 && j === undefined; k--) {
          spendCheckBudget(size);
          if (jsonEquals(items[same[k] as number], item)) j = same[k];
        }
        same.push(i);
      } else {
        composites.set(hash, [i]);
      }
    }
    if (j !== undefined) found = [i, j];
  }
  return found;
}

/** Whether `value` has one of the JSON types (ajv's check, numbers finite). */
function hasType(value: unknown, types: readonly string[]): boolean {
  for (const type of types) {
    switch (type) {
      case "number":
        if (typeof value === "number" && Number.isFinite(value)) return true;
        break;
      case "integer":
        if (typeof value === "number" && Number.isInteger(value)) return true;
        break;
      case "string":
      case "boolean":
        if (typeof value === type) return true;
        break;
      case "null":
        if (value === null) return true;
        break;
    }
  }
  return false;
}

/** The types an `items` schema declares, as ajv reads them (with "nullable"), or none. */
function declaredTypes(items: unknown): string[] {
  if (typeof items !== "object" || items === null) return [];
  const { type, nullable } = items as { type?: unknown; nullable?: unknown };
  const types = (Array.isArray(type) ? type : type === undefined ? [] : [type]).map(String);
  if (nullable === true && !types.includes("null")) types.push("null");
  return types;
}

const uniqueItemsError: KeywordErrorDefinition = {
  message: ({ params: { i, j } }) => str`must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
  params: ({ params: { i, j } }) => _`{i: ${i}, j: ${j}}`,
};

/** `uniqueItems`, in time linear in the array's size whatever its items. */
export const hashedUniqueItems: CodeKeywordDefinition = {
  keyword: "uniqueItems",
  type: "array",
  schemaType: "boolean",
  before: "maxContains",
  error: uniqueItemsError,
  code(cxt) {
    const { gen, data, parentSchema } = cxt;
    if (cxt.schema !== true) return;
    const types = declaredTypes(parentSchema["items"]);
    // ajv's two ways, each reporting its own pair: typed scalars, or anything.
    const scalars = types.length > 0 && !types.some((type) => type === "object" || type === "array");
    const find = gen.scopeValue("func", { ref: scalars ? scalarDuplicate(types) : anyDuplicate });
    const duplicate = gen.const("duplicate", _`${find}(${data})`);
    cxt.setParams({ i: _`${duplicate}[0]`, j: _`${duplicate}[1]` });
    cxt.pass(_`${duplicate} === undefined`);
  },
};
