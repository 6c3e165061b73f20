import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** The rule the draft 2020-12 meta-schema gives a keyword's value, for the keywords modelled here. */
type Rule =
  | "schema"
  | "schemaMap"
  | "schemaArray"
  | "string"
  | "metaSchemaUri"
  | "boolean"
  | "number"
  | "positiveNumber"
  | "nonNegativeInteger"
  | "array"
  | "any"
  | "type"
  | "stringArray"
  | "stringArrayMap";

/**
 * The meta-schema's rule for each keyword this walk models (vocabularies core, applicator,
 * unevaluated, validation, meta-data, format-annotation and content, with formats not validated,
 * as the server's checker runs it). Keywords whose rule needs more than a type check ($id, $anchor,
 * $dynamicRef, $vocabulary, the deprecated "dependencies"…) are not here: a schema using one is
 * left to the meta-schema itself. Any other keyword is allowed by the meta-schema whatever its
 * value (strict mode refuses unknown keywords later, when compiling).
 */
const rules = new Map<string, Rule>([
  ["$schema", "metaSchemaUri"],
  ["$ref", "string"],
  ["$comment", "string"],
  ["$defs", "schemaMap"],
  ["definitions", "schemaMap"],
  ["prefixItems", "schemaArray"],
  ["items", "schema"],
  ["contains", "schema"],
  ["additionalProperties", "schema"],
  ["properties", "schemaMap"],
  ["patternProperties", "schemaMap"],
  ["dependentSchemas", "schemaMap"],
  ["propertyNames", "schema"],
  ["if", "schema"],
  ["then", "schema"],
  ["else", "schema"],
  ["allOf", "schemaArray"],
  ["anyOf", "schemaArray"],
  ["oneOf", "schemaArray"],
  ["not", "schema"],
  ["unevaluatedItems", "schema"],
  ["unevaluatedProperties", "schema"],
  ["type", "type"],
  ["const", "any"],
  ["enum", "array"],
  ["multipleOf", "positiveNumber"],
  ["maximum", "number"],
  ["exclusiveMaximum", "number"],
  ["minimum", "number"],
  ["exclusiveMinimum", "number"],
  ["maxLength", "nonNegativeInteger"],
  ["minLength", "nonNegativeInteger"],
  ["pattern", "string"],
  ["maxItems", "nonNegativeInteger"],
  ["minItems", "nonNegativeInteger"],
  ["uniqueItems", "boolean"],
  ["maxContains", "nonNegativeInteger"],
  ["minContains", "nonNegativeInteger"],
  ["maxProperties", "nonNegativeInteger"],
  ["minProperties", "nonNegativeInteger"],
  ["required", "stringArray"],
  ["dependentRequired", "stringArrayMap"],
  ["title", "string"],
  ["description", "string"],
  ["default", "any"],
  ["deprecated", "boolean"],
  ["readOnly", "boolean"],
  ["writeOnly", "boolean"],
  ["examples", "array"],
  ["format", "string"],
  ["contentEncoding", "string"],
  ["contentMediaType", "string"],
  ["contentSchema", "schema"],
]);

/** The keywords whose rule {@link conformsToMetaSchema} checks itself. */
export const modelledKeywords: readonly string[] = [...rules.keys()];

const simpleTypes = new Set(["array", "boolean", "integer", "null", "number", "object", "string"]);

/** The meta-schema this walk models; a `$schema` naming another is left to the checker (which may not know it). */
const draft2020 = new Set([
  "https://json-schema.org/draft/2020-12/schema",
  "https://json-schema.org/draft/2020-12/schema#",
]);

/**
 * Whether `schema` certainly conforms to the draft 2020-12 meta-schema, as the server's checker
 * (ajv, formats not validated, numbers finite) would find: a walk over every place the
 * meta-schema reads as a schema, checking each modelled keyword's value by its rule. A
 * microsecond or two for a schema of 1 KiB, where the checker takes tens.
 *
 * False means "not sure", never "invalid": a keyword this walk does not model, or a value that
 * breaks a rule, sends the schema to the checker, which gives the precise message.
 */
export function conformsToMetaSchema(schema: JsonValue): boolean {
  return isSchema(schema, 0);
}

/** Deeper than this, the walk gives up (the caller's own depth limit is lower). */
const maxDepth = 64;

function isSchema(value: JsonValue | undefined, depth: number): boolean {
  if (typeof value === "boolean") return true;
  if (!isObject(value) || depth > maxDepth) return false;
  for (const key in value) {
    const rule = rules.get(key);
    if (rule === undefined || !follows(rule, value[key] as JsonValue, depth + 1)) return false;
  }
  return true;
}

function follows(rule: Rule, value: JsonValue, depth: number): boolean {
  switch (rule) {
    case "schema":
      return isSchema(value, depth);
    case "schemaMap":
      if (!isObject(value)) return false;
      for (const key in value) if (!isSchema(value[key], depth)) return false;
      return true;
    case "schemaArray":
      return Array.isArray(value) && value.length > 0 && allItems(value, (item) => isSchema(item, depth));
    case "string":
      return typeof value === "string";
    case "metaSchemaUri":
      // Another meta-schema (draft-07, say) is one the checker may not hold: it says so itself.
      return typeof value === "string" && draft2020.has(value);
    case "boolean":
      return typeof value === "boolean";
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "positiveNumber":
      return typeof value === "number" && Number.isFinite(value) && value > 0;
    case "nonNegativeInteger":
      return Number.isInteger(value) && (value as number) >= 0;
    case "array":
      return Array.isArray(value);
    case "any":
      return true;
    case "type":
      if (typeof value === "string") return simpleTypes.has(value);
      return (
        Array.isArray(value) &&
        value.length > 0 &&
        allItems(value, (item) => typeof item === "string" && simpleTypes.has(item)) &&
        new Set(value).size === value.length
      );
    case "stringArray":
      return isUniqueStrings(value);
    case "stringArrayMap":
      if (!isObject(value)) return false;
      for (const key in value) if (!isUniqueStrings(value[key] as JsonValue)) return false;
      return true;
  }
}

function isUniqueStrings(value: JsonValue): boolean {
  return (
    Array.isArray(value) && allItems(value, (item) => typeof item === "string") && new Set(value).size === value.length
  );
}

/**
 * Whether every item passes, holes included: `Array.prototype.every` skips the holes of a sparse
 * array (one built in code, never one parsed from JSON), which ajv reads as undefined and refuses.
 */
function allItems(items: readonly JsonValue[], passes: (item: JsonValue) => boolean): boolean {
  for (let index = 0; index < items.length; index++) if (!passes(items[index] as JsonValue)) return false;
  return true;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
