/**
 * The applicators of JSON Schema draft 2020-12: keywords whose values are subschemas, by the shape
 * of the value (one subschema, an array of them, a map of names to them) and by what they apply to
 * (the value itself, or parts of it: its properties, items, names).
 */

/** One subschema, applied to the value itself. */
export const sameValueKeywords: ReadonlySet<string> = new Set(["not", "if", "then", "else"]);
/** An array of subschemas, applied to the value itself. */
export const sameValueArrayKeywords: ReadonlySet<string> = new Set(["allOf", "anyOf", "oneOf"]);
/** A map of subschemas, applied to the value itself (when it has the property named). */
export const sameValueMapKeywords: ReadonlySet<string> = new Set(["dependentSchemas"]);

/** One subschema, applied to parts of the value. */
export const descendingKeywords: ReadonlySet<string> = new Set([
  "additionalProperties",
  "propertyNames",
  "unevaluatedProperties",
  "unevaluatedItems",
  "items",
  "contains",
]);
/** An array of subschemas, applied to parts of the value. */
export const descendingArrayKeywords: ReadonlySet<string> = new Set(["prefixItems"]);
/** A map of subschemas, applied to parts of the value. */
export const descendingMapKeywords: ReadonlySet<string> = new Set(["properties", "patternProperties"]);

/**
 * Where a schema holds subschemas, by keyword and shape of its value: one subschema, an array of
 * them, or a map of names to them. The applicators above, the definitions (`$defs`, and the older
 * `definitions`), `dependencies` (ajv compiles its schema values) and `contentSchema` (an
 * annotation, compiled only when a `$ref` reaches it). A JSON pointer that follows these keywords
 * from a schema lands on a schema; any other step lands in data (a `default`, a `const`).
 */
export const subschemaShapes: ReadonlyMap<string, "one" | "array" | "map"> = new Map([
  ...[...sameValueKeywords, ...descendingKeywords, "contentSchema"].map((key) => [key, "one"] as const),
  ...[...sameValueArrayKeywords, ...descendingArrayKeywords].map((key) => [key, "array"] as const),
  ...[...sameValueMapKeywords, ...descendingMapKeywords, "$defs", "definitions", "dependencies"].map(
    (key) => [key, "map"] as const,
  ),
]);
