import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/**
 * The cost model of checking values against a schema, in units of about one subschema applied to
 * one value (measured here: 5–15 ns for one that passes, about 50 for one that fails and makes an
 * error). The static bound of `schema-cost.ts` and the charges of a check under way (see
 * `check-budget.ts`) both count in these units, from the functions of this module.
 */

/** Units of one test of a pattern, besides 1 per character tested (re2js: 0.1–0.7 µs, then ~20 ns a character). */
export const patternTestUnits = 32;

/**
 * Units of visiting one property of an object, for the keywords that go through them all
 * (`additionalProperties`, `minProperties`…): listing the properties of an object of 100,000 took
 * 220 ns a property here.
 */
export const propertyVisitUnits = 16;

/** Most patterns in one `patternProperties`: every property name is tested against each of them. */
export const maxPatternProperties = 64;

/** Enums of scalars up to this many values are checked by comparisons, as ajv does; larger ones by hashing. */
export const maxComparedEnumValues = 16;

/** What one application of a schema takes by itself, apart from the subschemas it applies. */
export interface SchemaUnits {
  /**
   * Units for its own keywords, apart from its subschemas (charged as each applies), its patterns
   * (charged by the engine) and the strings it measures (charged by their length): 1, plus 1 for
   * each property it names in `properties`, `required`, `dependentRequired` or `dependentSchemas`,
   * plus the size of its `const` and of a compared `enum`.
   */
  units: number;
  /**
   * Units per property of an object value: {@link propertyVisitUnits} to visit it (for the
   * keywords that visit them all), and a test for each pattern of `patternProperties`, twice with
   * `additionalProperties` (which tests them again to tell which properties are additional).
   */
  propertyUnits: number;
  /** Units per item of an array value: 1 to visit it, 2 more to hash it for `uniqueItems`. */
  itemUnits: number;
}

/** The {@link SchemaUnits} of `schema`, in one pass over its keywords. */
export function schemaUnits(schema: JsonObject): SchemaUnits {
  let units = 1;
  let visitsProperties = false;
  let patterns = 0;
  let additional = false;
  let visitsItems = false;
  let unique = false;
  for (const key in schema) {
    const value = schema[key];
    switch (key) {
      case "properties":
      case "dependentSchemas":
        units += countEntries(value);
        break;
      case "required":
        units += Array.isArray(value) ? value.length : 0;
        break;
      case "dependentRequired":
      case "dependencies":
        if (isObject(value)) {
          for (const name in value) {
            const names = value[name];
            units += 1 + (Array.isArray(names) ? names.length : 0);
          }
        }
        break;
      case "const":
        units += valueUnits(value);
        break;
      case "enum":
        units += Array.isArray(value) && isComparedEnum(value) ? value.length : 1;
        break;
      case "patternProperties":
        patterns = countEntries(value);
        visitsProperties = true;
        break;
      case "additionalProperties":
        additional = true;
        visitsProperties = true;
        break;
      case "unevaluatedProperties":
      case "propertyNames":
      case "maxProperties":
      case "minProperties":
        visitsProperties = true;
        break;
      case "items":
      case "prefixItems":
      case "contains":
      case "unevaluatedItems":
        visitsItems = true;
        break;
      case "uniqueItems":
        unique = value === true;
        break;
    }
  }
  return {
    units,
    propertyUnits: visitsProperties ? propertyVisitUnits + patterns * patternTestUnits * (additional ? 2 : 1) : 0,
    itemUnits: (visitsItems ? 1 : 0) + (unique ? 2 : 0),
  };
}

/** Units one application of `schema` takes for its own keywords (see {@link SchemaUnits.units}). */
export function applicationUnits(schema: JsonObject): number {
  return schemaUnits(schema).units;
}

/** Units of testing a pattern against a string of `length` characters. */
export function patternUnits(length: number): number {
  return patternTestUnits + length;
}

/** Units of measuring a string of `length` characters (`minLength`, `maxLength` count code points). */
export function measureUnits(length: number): number {
  return length >> 3;
}

/** Whether an enum is checked by comparing with each value (scalars only, and few of them). */
export function isComparedEnum(values: readonly JsonValue[]): boolean {
  if (values.length > maxComparedEnumValues) return false;
  for (const value of values) if (typeof value === "object" && value !== null) return false;
  return true;
}

/** Units of comparing a value with `value` (a `const`): its nodes, and its strings by length. */
function valueUnits(value: JsonValue | undefined): number {
  if (typeof value === "string") return value.length >> 4;
  if (typeof value !== "object" || value === null) return 0;
  let units = 1;
  if (Array.isArray(value)) for (const item of value) units += valueUnits(item);
  else for (const key in value) units += valueUnits(value[key]);
  return units;
}

function countEntries(value: JsonValue | undefined): number {
  if (!isObject(value)) return 0;
  let count = 0;
  for (const key in value) if (key !== "__proto__") count++;
  return count;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
