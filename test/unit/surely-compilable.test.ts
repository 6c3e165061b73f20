import type { JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { Ajv2020 } from "ajv/dist/2020.js";
import { compileSchema } from "../../src/json/schema-validator.js";
import { isSurelyCompilable, understoodKeywords } from "../../src/json/surely-compilable.js";

const acceptsAll = () => true;
const surely = (schema: JsonObject, acceptsPattern: (pattern: string) => boolean = acceptsAll) =>
  isSurelyCompilable(schema, acceptsPattern);

/** Whether the full compiler (meta-schema, then ajv's code generation in strict mode) takes it. */
function compiles(schema: JsonObject): boolean {
  try {
    compileSchema(schema);
    return true;
  } catch {
    return false;
  }
}

/** Schemas that compile, each of which the walk must be sure of (or the fast path is not used). */
const sureSchemas: readonly JsonObject[] = [
  {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    title: "Inputs of a typical tool",
    properties: {
      path: { type: "string", description: "Which file.", minLength: 1, maxLength: 4096 },
      limit: { type: "integer", description: "How many.", minimum: 0, maximum: 1000 },
      ratio: { type: "number", exclusiveMinimum: 0, multipleOf: 0.5 },
      follow: { type: "boolean", default: false },
      mode: { type: "string", enum: ["quick", "normal", "thorough"] },
    },
    required: ["path"],
    additionalProperties: false,
  },
  {},
  { type: "object", properties: { a: true, b: false, c: {} } },
  {
    type: "object",
    properties: { list: { type: "array", items: { type: "string", pattern: "^[a-z]+$" }, minItems: 1 } },
    patternProperties: { "^x-": { type: "string" } },
    additionalProperties: false,
    required: ["list"],
  },
  { type: "object", properties: { at: { $ref: "#/$defs/point" } }, $defs: { point: { type: "object" } } },
  { type: "object", properties: { at: { $ref: "#/definitions/p~1q" } }, definitions: { "p/q": { type: "number" } } },
  { type: "object", properties: { next: { $ref: "#" } } },
  {
    type: "object",
    allOf: [{ required: ["a"] }],
    anyOf: [{}, true],
    oneOf: [{ type: "object" }],
    not: { type: "null" },
  },
  { type: "object", if: { required: ["a"] }, then: { required: ["b"] }, else: { required: ["c"] } },
  { type: "object", properties: { t: { type: "array", prefixItems: [{ type: "number" }], items: false } } },
  {
    type: "object",
    properties: { t: { type: "array", contains: { type: "number" }, minContains: 2, maxContains: 3 } },
  },
  { type: "object", dependentSchemas: { a: { required: ["b"] } }, dependentRequired: { c: ["d"] } },
  { type: "object", propertyNames: { maxLength: 8 }, unevaluatedProperties: false, minProperties: 1 },
  { type: "object", properties: { e: { enum: ["x", 1, null], const: "x", default: "x", examples: ["x"] } } },
  {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $comment: "annotations only",
    title: "T",
    description: "D",
    type: ["object", "null"],
    deprecated: false,
    readOnly: true,
    writeOnly: false,
    properties: { s: { type: "string", format: "email", contentMediaType: "text/plain", contentEncoding: "base64" } },
  },
];

/** Schemas the walk must not be sure of: those ajv refuses, and those whose resolution it does not model. */
const unsureSchemas: readonly (readonly [string, JsonObject])[] = [
  ["an unknown keyword", { type: "object", requried: ["a"] }],
  ["an unknown keyword deep down", { type: "object", properties: { a: { items: { minimun: 1 } } } }],
  ["an unknown keyword in a referenced definition", { $ref: "#/$defs/a", $defs: { a: { typo: 1 } } }],
  ["a reference to nothing", { type: "object", properties: { a: { $ref: "#/$defs/missing" } } }],
  ["a reference through an inherited name", { type: "object", properties: { a: { $ref: "#/constructor" } } }],
  ["a reference to another document", { type: "object", properties: { a: { $ref: "other.json#/a" } } }],
  [
    "a reference by anchor",
    { type: "object", properties: { a: { $ref: "#here" } }, $defs: { b: { $anchor: "here" } } },
  ],
  ["a base URI", { $id: "https://example.com/s", type: "object" }],
  ["a dynamic reference", { type: "object", properties: { a: { $dynamicRef: "#meta" } } }],
  ["an anchor in an unreferenced definition", { type: "object", $defs: { b: { items: [{ $dynamicAnchor: "x" }] } } }],
  ["an id inside a data keyword", { type: "object", contentSchema: { $id: "https://example.com/c" } }],
  ["a recursive reference", { type: "object", properties: { a: { $recursiveRef: "#" } } }],
  ["an empty enum", { type: "object", properties: { a: { enum: [] } } }],
  ['"if" alone', { type: "object", if: { required: ["a"] } }],
  ['"then" without "if"', { type: "object", then: { required: ["a"] } }],
  ['"minContains" without "contains"', { type: "object", properties: { a: { minContains: 1 } } }],
  [
    '"minContains" above "maxContains"',
    { type: "object", properties: { a: { contains: {}, minContains: 3, maxContains: 2 } } },
  ],
  ['"minContains" of 0 alone', { type: "object", properties: { a: { contains: {}, minContains: 0 } } }],
  ['the old "id"', { type: "object", id: "x" }],
  ['"nullable"', { type: "object", properties: { a: { type: "string", nullable: true } } }],
  ['"dependencies"', { type: "object", dependencies: { a: ["b"] } }],
  ["another meta-schema", { $schema: "https://json-schema.org/draft/2020-12/meta/core", type: "object" }],
];

describe("isSurelyCompilable()", () => {
  it("understands only keywords that ajv knows", () => {
    const known = new Ajv2020().RULES.keywords;
    expect(understoodKeywords.filter((keyword) => !known[keyword])).to.deep.equal([]);
  });

  for (const [index, schema] of sureSchemas.entries()) {
    it(`is sure of valid schema #${index}, and the full compiler agrees`, () => {
      expect(surely(schema)).to.equal(true);
      expect(compiles(schema)).to.equal(true);
    });
  }

  for (const [label, schema] of unsureSchemas) {
    it(`is not sure of a schema with ${label}`, () => {
      expect(surely(schema)).to.equal(false);
    });
  }

  it('is sure of a schema whose data merely mention "$id" as a string', () => {
    const schema: JsonObject = { type: "object", properties: { key: { enum: ["$id", "$anchor"], default: "$id" } } };
    expect(surely(schema)).to.equal(true);
    expect(compiles(schema)).to.equal(true);
  });

  it("is not sure of a schema whose pattern or pattern property the engine refuses", () => {
    const refuses = (pattern: string) => pattern !== "bad";
    expect(surely({ type: "object", properties: { s: { pattern: "bad" } } }, refuses)).to.equal(false);
    expect(surely({ type: "object", patternProperties: { bad: {} } }, refuses)).to.equal(false);
    expect(surely({ type: "object", patternProperties: { good: { pattern: "fine" } } }, refuses)).to.equal(true);
  });

  it("leaves unknown keywords of definitions no reference reaches to the compiler, which ignores them too", () => {
    const schema = { type: "object", $defs: { unused: { typo: 1 } }, contentSchema: { typo: 2 } };
    expect(surely(schema)).to.equal(true);
    expect(compiles(schema)).to.equal(true);
  });

  it("follows references that form a cycle once", () => {
    const schema: JsonObject = {
      type: "object",
      properties: { tree: { $ref: "#/$defs/node" } },
      $defs: { node: { type: "object", properties: { children: { type: "array", items: { $ref: "#/$defs/node" } } } } },
    };
    expect(surely(schema)).to.equal(true);
    expect(compiles(schema)).to.equal(true);
  });
});
