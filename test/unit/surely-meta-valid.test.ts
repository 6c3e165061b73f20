import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { expect } from "chai";
import { Ajv2020 } from "ajv/dist/2020.js";
import { checkSchema, InvalidSchemaError } from "../../src/json/schema-validator.js";
import { conformsToMetaSchema, modelledKeywords } from "../../src/json/surely-meta-valid.js";

// The oracle: ajv's own meta-schema check, with the options that matter to it as the server sets them.
const oracle = new Ajv2020({ strictSchema: true, strictNumbers: true, validateFormats: false, logger: false });

function metaSchemaAccepts(schema: JsonValue): boolean {
  try {
    return oracle.validateSchema(schema as JsonObject) as boolean;
  } catch {
    return false; // a "$schema" ajv does not hold
  }
}

/** Values of every JSON kind, right and wrong for each rule of the meta-schema. */
const probes: readonly JsonValue[] = [
  null,
  true,
  false,
  0,
  -0,
  -1,
  1.5,
  2,
  1e308,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  "",
  "x",
  "object",
  "https://json-schema.org/draft/2020-12/schema",
  "https://json-schema.org/draft/2020-12/schema#",
  "http://json-schema.org/draft-07/schema#",
  [],
  ["a"],
  ["a", "a"],
  ["a", "b"],
  // Sparse arrays (built in code, never parsed from JSON): a hole is no string and no schema.
  Array<JsonValue>(1),
  [{}, ...Array<JsonValue>(1), {}],
  [1],
  [{}],
  [true, {}],
  [{ type: 3 }],
  ["object", "null"],
  ["object", "object"],
  ["object", "thing"],
  {},
  { a: 1 },
  { a: {} },
  { a: false },
  { a: { type: "nope" } },
  { a: ["b"] },
  { a: ["b", "b"] },
  { a: [1] },
];

/** Places a keyword may sit: at the root, and in a subschema of each kind of applicator. */
const placements: readonly (readonly [string, (keyword: JsonObject) => JsonObject])[] = [
  ["the root", (keyword) => ({ ...keyword })],
  ["a property", (keyword) => ({ type: "object", properties: { p: keyword } })],
  ["an allOf item", (keyword) => ({ allOf: [{}, keyword] })],
  ["a definition", (keyword) => ({ $defs: { d: keyword } })],
  ["an items schema", (keyword) => ({ items: { not: keyword } })],
];

/** Keywords whose value is itself one subschema. */
const subschemaKeywords = new Set([
  "items",
  "contains",
  "additionalProperties",
  "propertyNames",
  "if",
  "then",
  "else",
  "not",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema",
]);

/** Whether a probe placed under `keyword` is a subschema using the unknown keyword "a". */
function hasUnmodelledKeyword(keyword: string, value: JsonValue): boolean {
  return (
    subschemaKeywords.has(keyword) &&
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    "a" in value
  );
}

describe("conformsToMetaSchema()", () => {
  it("models only keywords ajv knows", () => {
    const known = new Ajv2020().RULES.keywords;
    expect(modelledKeywords.filter((keyword) => !known[keyword])).to.deep.equal([]);
  });

  it("is sure of schemas as tools write them (or the checker is never skipped)", () => {
    const typical: JsonObject[] = [
      {},
      {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        title: "Inputs",
        properties: {
          path: { type: "string", description: "Which file.", minLength: 1, maxLength: 4096, pattern: "^/" },
          limit: { type: "integer", minimum: 0, maximum: 1000, default: 10 },
          ratio: { type: "number", exclusiveMinimum: 0, multipleOf: 0.5 },
          tags: { type: "array", items: { type: "string" }, uniqueItems: true, minItems: 1 },
          mode: { enum: ["quick", "thorough"], examples: ["quick"] },
          point: { $ref: "#/$defs/point" },
        },
        $defs: { point: { type: "object", required: ["x", "y"], additionalProperties: false } },
        required: ["path"],
        dependentRequired: { ratio: ["limit"] },
        additionalProperties: false,
      },
      { type: ["object", "null"], anyOf: [{ required: ["a"] }, true], not: { type: "null" } },
      { if: { required: ["a"] }, then: { required: ["b"] }, else: false, unevaluatedProperties: false },
    ];
    for (const schema of typical) {
      expect(conformsToMetaSchema(schema), JSON.stringify(schema)).to.equal(true);
      expect(metaSchemaAccepts(schema), JSON.stringify(schema)).to.equal(true);
    }
  });

  for (const [place, put] of placements) {
    it(`agrees with the meta-schema on every modelled keyword in ${place}, for values of every kind`, () => {
      const disagreements: string[] = [];
      for (const keyword of modelledKeywords) {
        for (const value of probes) {
          const schema = put({ [keyword]: value });
          const sure = conformsToMetaSchema(schema);
          const accepted = metaSchemaAccepts(schema);
          // Never sure of a schema the meta-schema refuses; not sure of an accepted one only where
          // the walk leaves it to the checker on purpose: a "$schema" other than draft 2020-12's,
          // or a subschema with a keyword it does not model (the probes' "a").
          const leftToChecker = !sure && accepted && (keyword === "$schema" || hasUnmodelledKeyword(keyword, value));
          if (sure !== accepted && !leftToChecker) {
            disagreements.push(`${JSON.stringify(schema)}: walk ${sure}, meta-schema ${accepted}`);
          }
        }
      }
      expect(disagreements).to.deep.equal([]);
    });
  }

  it("leaves keywords whose rules it does not model to the checker", () => {
    for (const schema of [{ $id: "https://example.com/s" }, { $anchor: "a" }, { dependencies: { a: ["b"] } }]) {
      expect(conformsToMetaSchema(schema), JSON.stringify(schema)).to.equal(false);
    }
    expect(conformsToMetaSchema({ type: "object", "x-vendor": 1 })).to.equal(false);
  });

  it("keeps checkSchema refusing every schema the meta-schema refuses", () => {
    let refused = 0;
    for (const keyword of modelledKeywords) {
      for (const value of probes) {
        const schema = { type: "object", properties: { p: { [keyword]: value } } } as JsonObject;
        if (metaSchemaAccepts(schema)) continue;
        refused++;
        expect(() => checkSchema(schema), JSON.stringify(schema)).to.throw(InvalidSchemaError);
      }
    }
    expect(refused).to.be.greaterThan(500);
  });
});
