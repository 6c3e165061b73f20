import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { _, Name, type Ajv2020, type Code, type CodeKeywordDefinition, type KeywordCxt } from "ajv/dist/2020.js";
import { CheckBudgetExceededError, checkBudget, withCheckBudget } from "./check-budget.js";
import { subschemaShapes } from "./schema-keywords.js";
import { applicationUnits } from "./work-units.js";

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
 * application takes its own units (see `applicationUnits`), plus the length of the strings it
 * measures, of the path of the value when it was reached through a reference (the caller built
 * it), and of the errors held when it refers elsewhere (a failing reference copies them all). It
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

/** The code of one application's charge (see {@link chargeKeywordDefinition}). */
function chargeCode(cxt: KeywordCxt, maxErrors: number): void {
  const { gen, data, parentSchema, it } = cxt;
  const schema = parentSchema as JsonObject;
  const budget = gen.scopeValue("obj", { ref: checkBudget });
  let charge: Code = _`${applicationUnits(schema)}`;
  if (it.schemaEnv.schema === parentSchema) charge = _`${charge} + (${instancePathName}.length >> 3)`;
  if (schema["$ref"] !== undefined || schema["$dynamicRef"] !== undefined || schema["$recursiveRef"] !== undefined) {
    charge = _`${charge} + ${errorsName}`;
  }
  if (schema["minLength"] !== undefined || schema["maxLength"] !== undefined) {
    charge = _`${charge} + (typeof ${data} == "string" ? ${data}.length >> 3 : 0)`;
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
