import type { JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { findEndlessReference } from "../../src/json/endless-references.js";
import { checkAgainstSchema, checkSchema, InvalidSchemaError } from "../../src/json/schema-validator.js";

/** Schemas that check a value against themselves again without descending into it, and the `$ref` that closes the loop. */
const endless: [string, JsonObject, string][] = [
  ["the root referring to itself", { type: "object", $ref: "#" }, "#"],
  ["the root through allOf", { type: "object", allOf: [{ $ref: "#" }] }, "#"],
  ["the root through not", { not: { $ref: "#" } }, "#"],
  ["the root through if and then", { if: { $ref: "#" }, then: {} }, "#"],
  ["the root through dependentSchemas", { dependentSchemas: { a: { $ref: "#" } } }, "#"],
  [
    "a definition referring to itself",
    { type: "object", $ref: "#/$defs/a", $defs: { a: { $ref: "#/$defs/a" } } },
    "#/$defs/a",
  ],
  [
    "two definitions referring to each other",
    { $ref: "#/$defs/a", $defs: { a: { allOf: [{ $ref: "#/$defs/b" }] }, b: { anyOf: [{ $ref: "#/$defs/a" }] } } },
    "#/$defs/a",
  ],
  ["a loop below a property", { properties: { p: { $ref: "#/properties/p" } } }, "#/properties/p"],
];

/** Recursive schemas that descend into the value before referring back: they describe trees. */
const recursive: [string, JsonObject][] = [
  ["a property referring to the root", { type: "object", properties: { child: { $ref: "#" } } }],
  ["items referring to the root", { type: "array", items: { $ref: "#" } }],
  [
    "a definition reached through additionalProperties",
    { additionalProperties: { $ref: "#/$defs/n" }, $defs: { n: { $ref: "#" } } },
  ],
  ["prefixItems and patternProperties", { prefixItems: [{ $ref: "#" }], patternProperties: { "^a": { $ref: "#" } } }],
  [
    "a definition used twice",
    { allOf: [{ $ref: "#/$defs/s" }, { $ref: "#/$defs/s" }], $defs: { s: { type: "string" } } },
  ],
];

describe("findEndlessReference()", () => {
  for (const [title, schema, reference] of endless) {
    it(`finds ${title}`, () => {
      expect(findEndlessReference(schema)).to.equal(reference);
    });
  }
  for (const [title, schema] of recursive) {
    it(`finds nothing in ${title}`, () => {
      expect(findEndlessReference(schema)).to.equal(undefined);
    });
  }
});

describe("checkSchema() of references", () => {
  for (const [title, schema, reference] of endless) {
    it(`refuses ${title}, naming the reference, where checking a value would never end`, () => {
      expect(() => checkSchema(structuredClone(schema)))
        .to.throw(InvalidSchemaError)
        .with.property("message")
        .that.contains(`"$ref": ${JSON.stringify(reference)} leads back to a schema that checks the same value`);
    });
  }

  it("accepts a recursive schema and checks a tree with it", () => {
    const schema: JsonObject = { type: "object", properties: { child: { $ref: "#" }, n: { type: "integer" } } };
    checkSchema(schema);
    expect(checkAgainstSchema(schema, { n: 1, child: { n: 2, child: {} } })).to.deep.equal([]);
    expect(checkAgainstSchema(schema, { child: { n: "x" } })).to.have.length(1);
  });

  // A pointer through values that are not subschemas reaches something never checked as a schema.
  const intoValues: [string, JsonObject][] = [
    ["a default", { type: "object", default: { type: 5 }, $ref: "#/default" }],
    ["the properties map itself", { type: "object", properties: { type: { type: "string" } }, $ref: "#/properties" }],
    ["a const", { const: { minimum: "x" }, $ref: "#/const" }],
  ];
  for (const [title, schema] of intoValues) {
    it(`refuses a $ref into ${title} with the compiler's reason`, () => {
      expect(() => checkSchema(structuredClone(schema))).to.throw(InvalidSchemaError);
    });
  }
});

describe("references findEndlessReference does not follow", () => {
  it("leaves a schema with $id scopes to the compiler, which checks it as JSON Schema says", () => {
    const schema: JsonObject = {
      $id: "http://example.test/root",
      type: "object",
      properties: { x: { $ref: "#/$defs/s" } },
      $defs: {
        s: { $id: "http://example.test/s", allOf: [{ $ref: "#/$defs/t" }], $defs: { t: { type: "string" } } },
        t: { $ref: "#/$defs/s" },
      },
    };
    expect(findEndlessReference(schema)).to.equal(undefined);
    checkSchema(schema);
    expect(checkAgainstSchema(schema, { x: "a" })).to.deep.equal([]);
    expect(checkAgainstSchema(schema, { x: 1 })).to.have.length(1);
  });

  // Resolving base URIs and anchors as the compiler does, the analysis of a schema's cost finds
  // these loops too (it used to be left to the compiled check, which ran out of stack).
  const scopedLoops: [JsonObject, string][] = [
    [{ $dynamicAnchor: "a", $dynamicRef: "#a" }, 'its "$dynamicRef": "#a"'],
    [{ $id: "http://example.test/r", $ref: "http://example.test/r" }, 'its "$ref": "http://example.test/r"'],
  ];
  for (const [schema, step] of scopedLoops) {
    it(`refuses ${JSON.stringify(schema)} at registration, and a stored copy reports every value as one it cannot check`, () => {
      const message = `${step} leads back to a schema that checks the same value without descending into it, so checking any value would never end: refer back only from within "properties", "items" or another keyword that checks a part of the value`;
      expect(refusal(() => checkSchema(structuredClone(schema)))).to.equal(message);
      expect(checkAgainstSchema(schema, { x: 1 })).to.deep.equal([
        `the schema cannot be used: it is not a valid JSON Schema (draft 2020-12): ${message}`,
      ]);
    });
  }
});

function refusal(check: () => unknown): string {
  try {
    check();
  } catch (error) {
    expect(error).to.be.instanceOf(InvalidSchemaError);
    return (error as Error).message;
  }
  throw new Error("expected an InvalidSchemaError");
}
