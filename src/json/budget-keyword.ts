import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { _, Name, type Ajv2020, type Code, type CodeKeywordDefinition, type KeywordCxt } from "ajv/dist/2020.js";
import { CheckBudgetExceededError, checkBudget, withCheckBudget } from "./check-budget.js";
import { subschemaShapes } from "./schema-keywords.js";
import { applicationUnits, propertyVisitUnits, schemaUnits } from "./work-units.js";

/**
 * The keyword that charges a check's budget (see `check-budget.ts`) each time a subschema applies.
 * It is added to every subschema of the copy of a schema that is compiled (see {@link withCharges}),
 * never to the schema itself; in an author's schema it is an unknown keyword, refused as any other.
 */
export const chargeKeyword = "x-toolruntime-charge";

// ajv's generated functions hold these (ajv/lib/compile/names.ts); checkCharges checks they still do.
const errorsName = new Name("errors");
const instancePathName = new Name("instancePath");

/**
 * The definition of {@link chargeKeyword}, which ajv runs first in a subschema, before the
 * keywords that may fail it: a subschema that fails early is charged all the same. Each
 * application takes its own units (see `applicationUnits`; 16 times as many in a function too
 * large for V8 to optimise, see {@link functionScale}), plus the length of the strings it
 * measures, the properties of the object it visits all of, the length of the path of the value
 * when it was reached through a reference (the caller built it), and the errors held when it
 * refers elsewhere (a failing reference copies them all). It
 * also stops a check that holds more than `maxErrors` errors at once (see `maxPendingErrors`).
 */
export function chargeKeywordDefinition(maxErrors: number): CodeKeywordDefinition {
  return {
    keyword: chargeKeyword,
    schemaType: "boolean",
    before: "$dynamicAnchor",
    code: (cxt) => chargeCode(cxt, maxErrors),
  };
}

/**
 * Subschemas ajv compiles into one function beyond which V8 does not optimise it (measured here:
 * an anyOf of 50 consts ran at 31 ns a branch once optimised, one of 100 at 360–700 ns after a
 * dozen runs, and as slowly at first as every check compiled moments ago).
 */
const largestOptimisedFunction = 64;
/** What an application in a function too large to optimise is charged per unit. */
const unoptimisedUnitCost = 16;
/** The scale of the units of each function's schema (see {@link functionScale}). */
const scales = new WeakMap<object, number>();

/**
 * The units of an application in the function ajv compiles for `schema` (the root, or a reference
 * it does not inline) cost 1, or {@link unoptimisedUnitCost} when the function holds more than
 * {@link largestOptimisedFunction} subschemas: then one unit takes far longer than its usual cost,
 * however many times the check runs, and the budget would let such a check hold the event loop
 * for a large part of a second.
 */
function functionScale(schema: object): number {
  let scale = scales.get(schema);
  if (scale === undefined) {
    scale =
      countSubschemas(schema as JsonValue, largestOptimisedFunction + 1) > largestOptimisedFunction
        ? unoptimisedUnitCost
        : 1;
    scales.set(schema, scale);
  }
  return scale;
}

/** The subschemas of `value`, itself included, up to `most` (definitions are compiled apart, or inlined where used). */
function countSubschemas(value: JsonValue, most: number): number {
  if (!isObject(value)) return 0;
  let count = 1;
  for (const key of Object.keys(value)) {
    if (count >= most) break;
    const shape = key === "$defs" || key === "definitions" ? undefined : subschemaShapes.get(key);
    const child = value[key] as JsonValue;
    if (shape === "one") count += countSubschemas(child, most - count);
    else if (shape === "array" && Array.isArray(child)) {
      for (const item of child) count += countSubschemas(item, most - count);
    } else if (shape === "map" && isObject(child)) {
      for (const name of Object.keys(child)) count += countSubschemas(child[name] as JsonValue, most - count);
    }
  }
  return count;
}

/** The code of one application's charge (see {@link chargeKeywordDefinition}). */
function chargeCode(cxt: KeywordCxt, maxErrors: number): void {
  const { gen, data, parentSchema, it } = cxt;
  const schema = parentSchema as JsonObject;
  const budget = gen.scopeValue("obj", { ref: checkBudget });
  let charge: Code = _`${applicationUnits(schema) * functionScale(it.schemaEnv.schema as object)}`;
  if (it.schemaEnv.schema === parentSchema) charge = _`${charge} + (${instancePathName}.length >> 3)`;
  if (schema["$ref"] !== undefined || schema["$dynamicRef"] !== undefined || schema["$recursiveRef"] !== undefined) {
    charge = _`${charge} + ${errorsName}`;
  }
  if (schema["minLength"] !== undefined || schema["maxLength"] !== undefined) {
    charge = _`${charge} + (typeof ${data} == "string" ? ${data}.length >> 3 : 0)`;
  }
  // Keywords that go through every property of an object value, in code of ajv's that charges
  // nothing (it charges the subschemas it applies to them, not the visit).
  if (schemaUnits(schema).propertyUnits > 0) {
    charge = _`${charge} + ${budget}.properties(${data}) * ${propertyVisitUnits}`;
  }
  gen.if(_`(${budget}.left -= ${charge}) < 0`, () => gen.code(_`${budget}.exhausted()`));
  gen.if(_`${errorsName} > ${maxErrors}`, () => gen.code(_`${budget}.crowded()`));
}

/**
 * A copy of `schema` for compiling, with {@link chargeKeyword} in each subschema that has a keyword
 * ajv checks (`isChecked`): the subschemas ajv would skip as always valid (`{}`, annotations only)
 * cost nothing and stay so. Subschemas are found where the meta-schema puts them (see
 * `subschemaShapes`); `$ref`s only ever reach those (others are refused at registration). Values
 * that are data (`const`, `enum`, `default`) are shared with the schema, not copied.
 */
export function withCharges(schema: JsonObject, isChecked: (keyword: string) => boolean): JsonObject {
  return copySchema(schema, isChecked) as JsonObject;
}

function copySchema(value: JsonValue, isChecked: (keyword: string) => boolean): JsonValue {
  if (!isObject(value)) return value;
  const copy: JsonObject = {};
  let checked = false;
  for (const key of Object.keys(value)) {
    const child = value[key] as JsonValue;
    if (key === chargeKeyword) continue;
    let copied = child;
    switch (subschemaShapes.get(key)) {
      case "one":
        copied = copySchema(child, isChecked);
        break;
      case "array":
        if (Array.isArray(child)) copied = child.map((item) => copySchema(item, isChecked));
        break;
      case "map":
        if (isObject(child)) {
          const map: JsonObject = Object.create(null) as JsonObject;
          for (const name of Object.keys(child)) put(map, name, copySchema(child[name] as JsonValue, isChecked));
          copied = map;
        }
        break;
      case undefined:
        break;
    }
    put(copy, key, copied);
    checked ||= isChecked(key);
  }
  if (checked) copy[chargeKeyword] = true;
  return copy;
}

/** Sets a property, "__proto__" included (an assignment would set the prototype instead). */
function put(target: JsonObject, key: string, value: JsonValue): void {
  if (key === "__proto__")
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/**
 * Throws unless `ajv` (with {@link chargeKeywordDefinition} added) compiles checks that charge
 * their budget and count their errors as this module expects: the door to ajv's internals (the
 * names of its generated variables, the order of its rules) is checked once per instance.
 */
export function checkCharges(ajv: Ajv2020): void {
  const isChecked = (keyword: string): boolean => ajv.RULES.all[keyword] !== undefined;
  const probe = withCharges(
    { anyOf: [{ type: "string" }, { $ref: "#/$defs/n" }], $defs: { n: { type: "number" } } },
    isChecked,
  );
  const validate = ajv.compile(probe);
  ajv.removeSchema(probe);
  const stops = (units: number): boolean => {
    try {
      withCheckBudget(0, () => validate(true), { units });
      return false;
    } catch (error) {
      if (error instanceof CheckBudgetExceededError) return true;
      throw error;
    }
  };
  // One unit is not enough for the root, its anyOf and its two branches; 100 are.
  if (!stops(1) || stops(100)) {
    throw new Error(
      "ajv no longer compiles the budget keyword as src/json/budget-keyword.ts expects: check its rules and generated names",
    );
  }
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
