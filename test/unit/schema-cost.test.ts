import type { JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { chargeKeyword } from "../../src/json/budget-keyword.js";
import { checkSchemaCost, maxUnitsPerValue } from "../../src/json/schema-cost.js";
import { checkAgainstSchema, checkSchema } from "../../src/json/schema-validator.js";

const chainAdvice =
  "applies subschemas that reach the same schemas again, and so on down the chain: refer to each schema from one place rather than from several subschemas";

/** `count` names, for `required`. */
const names = (count: number): string[] => Array.from({ length: count }, (_, index) => `r${index}`);

describe("checkSchemaCost()", () => {
  describe("accepts the schemas tools use", () => {
    const accepted: [string, JsonObject][] = [
      [
        "a typical tool's inputs",
        {
          type: "object",
          properties: {
            path: { type: "string", minLength: 1, pattern: "^[^\\u0000]+$" },
            mode: { enum: ["quick", "normal", "thorough"] },
            filters: {
              type: "array",
              items: {
                type: "object",
                properties: { field: { type: "string" }, value: { anyOf: [{ type: "string" }, { type: "number" }] } },
                required: ["field"],
              },
            },
          },
          required: ["path"],
          additionalProperties: false,
        },
      ],
      [
        "a tree whose nodes refer to their own definition",
        {
          type: "object",
          properties: { root: { $ref: "#/$defs/node" } },
          $defs: {
            node: { type: "object", properties: { children: { type: "array", items: { $ref: "#/$defs/node" } } } },
          },
        },
      ],
      [
        "any JSON value, recursively (its alternatives descend in objects or in arrays, never both)",
        {
          type: "object",
          additionalProperties: { $ref: "#/$defs/value" },
          $defs: {
            value: {
              anyOf: [
                { type: ["null", "boolean", "number", "string"] },
                { type: "array", items: { $ref: "#/$defs/value" } },
                { type: "object", additionalProperties: { $ref: "#/$defs/value" } },
              ],
            },
          },
        },
      ],
      [
        "a oneOf of 30 object variants of 10 properties each",
        {
          type: "object",
          oneOf: Array.from({ length: 30 }, (_, variant) => ({
            properties: Object.fromEntries(
              Array.from({ length: 10 }, (_, index) => [
                `p${index}`,
                index === 0 ? { const: `kind${variant}` } : { type: "string" },
              ]),
            ),
            required: ["p0"],
          })),
        },
      ],
      [
        "a definition used twice on one value (a sum, not a product)",
        { type: "object", allOf: [{ $ref: "#/$defs/s" }, { $ref: "#/$defs/s" }], $defs: { s: { required: ["a"] } } },
      ],
      [
        "a meta-schema-like document with a dynamic anchor",
        {
          $dynamicAnchor: "node",
          type: "object",
          properties: { children: { type: "array", items: { $dynamicRef: "#node" } } },
        },
      ],
    ];
    for (const [label, schema] of accepted) {
      it(`accepts ${label}`, () => {
        expect(checkSchemaCost(schema)).to.equal(undefined);
        checkSchema(schema);
      });
    }
  });

  it(`counts a value's work exactly at its limit of ${maxUnitsPerValue}: one unit more is refused`, () => {
    // x takes 1, each of its 100 branches 1 for itself and 1 + r for the definition it refers to.
    const schema = (required: number): JsonObject => ({
      type: "object",
      properties: { x: { allOf: Array.from({ length: 100 }, () => ({ $ref: "#/$defs/d" })) } },
      $defs: { d: { required: names(required) } },
    });
    expect(checkSchemaCost(schema(97))).to.equal(undefined); // 1 + 100 × 99 = 9,901
    expect(checkSchemaCost(schema(98))).to.deep.equal({
      kind: "costly",
      message: `checking one value at depth 1 can take 10,001 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "allOf" at "#/properties/x" ${chainAdvice}`,
    });
  });

  describe("resolves references by base URI, anchor and dynamic anchor as the compiler does", () => {
    const levels = 20;
    const chain = (make: (level: number, next: number) => JsonObject): JsonObject =>
      Object.fromEntries(Array.from({ length: levels }, (_, level) => [`l${level}`, make(level, level + 1)]));
    const refused: [string, JsonObject, string][] = [
      [
        "anchors",
        {
          type: "object",
          $ref: "#l0",
          $defs: {
            ...chain((level, next) => ({
              $anchor: `l${level}`,
              anyOf: [{ $ref: `#l${next}` }, { $ref: `#l${next}` }],
            })),
            [`l${levels}`]: { $anchor: `l${levels}`, type: "object" },
          },
        },
        '"#/$defs/l0"',
      ],
      [
        "relative $ids",
        {
          $id: "https://example.test/schemas/root",
          type: "object",
          $ref: "l0",
          $defs: {
            ...chain((level, next) => ({ $id: `l${level}`, oneOf: [{ $ref: `l${next}` }, { $ref: `l${next}` }] })),
            [`l${levels}`]: { $id: `l${levels}`, type: "object" },
          },
        },
        '"#/$defs/l0"',
      ],
    ];
    for (const [label, schema, pointer] of refused) {
      it(`refuses a doubling chain made with ${label}, naming where it starts`, () => {
        const problem = checkSchemaCost(schema);
        expect(problem?.kind).to.equal("costly");
        expect(problem?.message).to.contain(`at ${pointer} ${chainAdvice}`);
      });
    }

    it("refuses a loop of dynamic references, and one through a base URI, that would never end", () => {
      expect(checkSchemaCost({ $dynamicAnchor: "a", $dynamicRef: "#a" })?.message).to.match(
        /^its "\$dynamicRef": "#a" leads back/,
      );
      expect(checkSchemaCost({ $id: "https://example.test/r", allOf: [{ $ref: "r" }] })?.message).to.match(
        /^its "\$ref": "r" leads back/,
      );
    });
  });

  describe("refuses what no check could use", () => {
    const refused: [string, JsonObject, string][] = [
      [
        "a $ref into a default",
        { type: "object", default: { type: "string" }, properties: { a: { $ref: "#/default" } } },
        'its "$ref": "#/default" points into "default", which holds data, not a schema: refer to a subschema (one under "$defs", say)',
      ],
      [
        "a $ref into a const below a property",
        { type: "object", properties: { a: { const: { anyOf: [] } }, b: { $ref: "#/properties/a/const" } } },
        'its "$ref": "#/properties/a/const" points into "const", which holds data, not a schema: refer to a subschema (one under "$defs", say)',
      ],
      [
        "a $ref to a whole map of subschemas",
        { type: "object", properties: { a: { type: "string" } }, $ref: "#/properties" },
        'its "$ref": "#/properties" points at the whole of "properties", not at one of its subschemas: refer to a subschema (one under "$defs", say)',
      ],
      [
        "a $ref to the draft 2020-12 meta-schema (the compiler holds it, and would check values against it uncharged)",
        { type: "object", properties: { a: { $ref: "https://json-schema.org/draft/2020-12/schema" } } },
        'its "$ref": "https://json-schema.org/draft/2020-12/schema" refers to a document other than this schema: copy what it refers to under "$defs" and refer to it there',
      ],
      [
        "a $ref to another document by a base URI",
        { $id: "https://example.test/a", type: "object", properties: { b: { $ref: "b#/$defs/x" } } },
        'its "$ref": "b#/$defs/x" refers to a document other than this schema: copy what it refers to under "$defs" and refer to it there',
      ],
      [
        "the keyword the compiled copy uses to charge its budget",
        { type: "object", properties: { a: { [chargeKeyword]: true } } },
        `it uses the unknown keyword "${chargeKeyword}": use only draft 2020-12 keywords`,
      ],
    ];
    for (const [label, schema, message] of refused) {
      it(`refuses ${label}`, () => {
        expect(checkSchemaCost(schema)).to.deep.equal({ kind: "invalid", message });
        expect(checkAgainstSchema(schema, {})).to.deep.equal([
          `the schema cannot be used: it is not a valid JSON Schema (draft 2020-12): ${message}`,
        ]);
      });
    }

    it("leaves a $ref to nothing to the compiler, which names it", () => {
      expect(checkSchemaCost({ type: "object", properties: { a: { $ref: "#/$defs/missing" } } })).to.equal(undefined);
    });
  });
});
