import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  descendingArrayKeywords,
  descendingKeywords,
  descendingMapKeywords,
  sameValueArrayKeywords,
  sameValueKeywords,
  sameValueMapKeywords,
} from "./schema-keywords.js";

/** Keywords whose value is one subschema that ajv compiles. */
const schemaKeywords = new Set([...sameValueKeywords, ...descendingKeywords]);
/** Keywords whose value maps names to subschemas that ajv compiles. */
const schemaMapKeywords = new Set([...sameValueMapKeywords, ...descendingMapKeywords]);
/** Keywords whose value is an array of subschemas that ajv compiles. */
const schemaArrayKeywords = new Set([...sameValueArrayKeywords, ...descendingArrayKeywords]);
/**
 * Keywords that compile without a subschema or a strict-mode check of their own: data,
 * annotations, and `$defs` (whose schemas ajv compiles only when a `$ref` reaches them).
 */
const plainKeywords = new Set([
  "$schema",
  "$comment",
  "$defs",
  "definitions",
  "$ref",
  "title",
  "description",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
  "examples",
  "contentMediaType",
  "contentEncoding",
  "contentSchema",
  "format",
  "type",
  "const",
  "enum",
  "required",
  "dependentRequired",
  "maximum",
  "minimum",
  "exclusiveMaximum",
  "exclusiveMinimum",
  "multipleOf",
  "maxLength",
  "minLength",
  "pattern",
  "maxProperties",
  "minProperties",
  "maxItems",
  "minItems",
  "uniqueItems",
  "maxContains",
  "minContains",
]);

/** Every keyword {@link isSurelyCompilable} understands; each must be one ajv knows. */
export const understoodKeywords: readonly string[] = [
  ...schemaKeywords,
  ...schemaMapKeywords,
  ...schemaArrayKeywords,
  ...plainKeywords,
];

/**
 * Keywords of features whose resolution this walk does not model (base URIs, anchors, dynamic
 * references): a schema that holds any of them, as a key anywhere in it, is left to the compiler.
 */
const unmodelledKeywords = new Set(["$id", "$anchor", "$dynamicAnchor", "$dynamicRef"]);

/** A `$ref` this walk resolves: "#", or a JSON pointer into the document with plain characters. */
const localPointer = /^#(?:\/[\w$.~-]*)*$/;

/**
 * Whether ajv (draft 2020-12, strict schema, the options of `schema-validator.ts`) will certainly
 * compile `schema`, which already passed the meta-schema: every subschema ajv would compile uses
 * only keywords it knows, without the combinations its strict mode refuses ("if" without "then"
 * or "else", "minContains" without "contains"…), every pattern is one `acceptsPattern` accepts,
 * every `$ref` resolves within the document, and no enum is empty.
 *
 * False means "not sure", never "invalid": the caller then compiles the schema, which either works
 * or says precisely what is wrong. This walk is a few microseconds where compiling takes milliseconds.
 */
export function isSurelyCompilable(schema: JsonObject, acceptsPattern: (pattern: string) => boolean): boolean {
  if (holdsUnmodelledKeyword(schema)) return false;
  const rootMeta = schema["$schema"];
  if (rootMeta !== undefined && !isDraft2020(rootMeta)) return false;
  const walk = new SchemaWalk(schema, acceptsPattern);
  return walk.visit(schema);
}

/**
 * Whether an object anywhere in `value` has a key of {@link unmodelledKeywords} or one starting
 * with "$recursive". Every object is looked at, not only the subschemas: ajv reads ids and anchors
 * in any object it traverses. (A walk of the keys costs about a third of the JSON text that a
 * search for them needed, the objects decoded from a request being dictionaries.)
 */
function holdsUnmodelledKeyword(value: JsonValue): boolean {
  if (Array.isArray(value)) {
    for (const item of value)
      if (typeof item === "object" && item !== null && holdsUnmodelledKeyword(item)) return true;
    return false;
  }
  if (typeof value !== "object" || value === null) return false;
  for (const key of Object.keys(value)) {
    if (key.charCodeAt(0) === 0x24 && (unmodelledKeywords.has(key) || key.startsWith("$recursive"))) return true;
    const child = value[key];
    if (typeof child === "object" && child !== null && holdsUnmodelledKeyword(child)) return true;
  }
  return false;
}

function isDraft2020(uri: JsonValue): boolean {
  return (
    uri === "https://json-schema.org/draft/2020-12/schema" || uri === "https://json-schema.org/draft/2020-12/schema#"
  );
}

/** One walk over the subschemas ajv would compile, following local references once each. */
class SchemaWalk {
  readonly #visited = new Set<JsonObject>();

  constructor(
    private readonly root: JsonObject,
    private readonly acceptsPattern: (pattern: string) => boolean,
  ) {}

  /** Whether `value`, in a place that holds a schema, surely compiles. */
  visit(value: JsonValue | undefined): boolean {
    if (typeof value === "boolean") return true;
    if (!isObject(value)) return false;
    if (this.#visited.has(value)) return true;
    this.#visited.add(value);
    for (const key of Object.keys(value)) {
      if (!this.#visitKeyword(value, key, value[key] as JsonValue)) return false;
    }
    return true;
  }

  #visitKeyword(schema: JsonObject, key: string, value: JsonValue): boolean {
    if (schemaKeywords.has(key)) return this.#checkPairing(schema, key) && this.visit(value);
    if (schemaArrayKeywords.has(key)) return Array.isArray(value) && value.every((item) => this.visit(item));
    if (schemaMapKeywords.has(key)) {
      if (!isObject(value)) return false;
      if (key === "patternProperties" && !Object.keys(value).every((pattern) => this.acceptsPattern(pattern))) {
        return false;
      }
      return Object.values(value).every((item) => this.visit(item));
    }
    if (!plainKeywords.has(key)) return false;
    switch (key) {
      case "$ref":
        return typeof value === "string" && this.#visitReference(value);
      case "pattern":
        return typeof value === "string" && this.acceptsPattern(value);
      case "enum":
        return Array.isArray(value) && value.length > 0;
      case "maxContains":
      case "minContains":
        return this.#checkPairing(schema, key);
      default:
        return true;
    }
  }

  /** The pairings ajv's strict mode refuses; true when `key` is used as it expects. */
  #checkPairing(schema: JsonObject, key: string): boolean {
    switch (key) {
      case "if":
        return schema["then"] !== undefined || schema["else"] !== undefined;
      case "then":
      case "else":
        return schema["if"] !== undefined;
      case "contains": {
        const min = schema["minContains"];
        const max = schema["maxContains"];
        if (min === 0 && max === undefined) return false;
        return !(typeof min === "number" && typeof max === "number" && min > max);
      }
      case "maxContains":
      case "minContains":
        return schema["contains"] !== undefined;
      default:
        return true;
    }
  }

  /**
   * Resolves a `$ref` within the document and visits its target; false when it cannot, or when
   * the pointer passes through anything but subschemas (a `default`, a `const`, the `properties`
   * map itself): such a value was never checked as a schema, and ajv may not compile it.
   */
  #visitReference(reference: string): boolean {
    if (!localPointer.test(reference)) return false;
    if (reference === "#" || reference === "#/") return true;
    let target: JsonValue | undefined = this.root;
    // What the next step of the pointer must be: a keyword of a schema, an index into an array of
    // subschemas, or a name in a map of them.
    let expect: "keyword" | "index" | "name" = "keyword";
    for (const part of reference.slice(2).split("/")) {
      const key = part.replaceAll("~1", "/").replaceAll("~0", "~");
      if (expect === "index") {
        if (!Array.isArray(target) || !/^(?:0|[1-9]\d*)$/.test(key)) return false;
        target = target[Number(key)];
        expect = "keyword";
      } else {
        if (!isObject(target) || !Object.prototype.hasOwnProperty.call(target, key)) return false;
        target = target[key];
        if (expect === "name") expect = "keyword";
        else if (schemaArrayKeywords.has(key)) expect = "index";
        else if (schemaMapKeywords.has(key) || key === "$defs" || key === "definitions") expect = "name";
        else if (!schemaKeywords.has(key)) return false;
      }
      if (target === undefined) return false;
    }
    if (expect !== "keyword") return false;
    // A reference back to the root is compiled as a call of the root's own validator.
    return target === this.root || this.visit(target);
  }
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
