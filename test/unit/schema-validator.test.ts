import type { JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { checkAgainstSchema, checkSchema, compileSchema, InvalidSchemaError } from "../../src/json/schema-validator.js";

function refusal(check: () => unknown): string {
  try {
    check();
  } catch (error) {
    expect(error).to.be.instanceOf(InvalidSchemaError);
    return (error as Error).message;
  }
  throw new Error("expected an InvalidSchemaError");
}

/** Invalid schemas of every kind, each with a title of its own so none is already compiled. */
const invalidSchemas: readonly (readonly [string, JsonObject, string])[] = [
  [
    "breaks the meta-schema",
    { title: "meta", type: "object", properties: { a: { type: "strin" } } },
    '/properties/a/type is "strin": must be one of "array", "boolean", "integer", "null", "number", "object", "string": did you mean "string"?',
  ],
  [
    "uses an unknown keyword",
    { title: "unknown", type: "object", properties: { a: { minimun: 1 } } },
    'it uses the unknown keyword "minimun": did you mean "minimum"?',
  ],
  [
    "refers to nothing",
    { title: "ref", type: "object", properties: { a: { $ref: "#/$defs/missing" } } },
    "can't resolve reference #/$defs/missing from id #",
  ],
  [
    "has a pattern that needs backtracking",
    { title: "pattern", type: "object", properties: { a: { pattern: "(a)\\1" } } },
    'pattern "(a)\\\\1" uses the backreference "\\\\1", which the linear-time regular expression engine cannot evaluate: rewrite it without backreferences or lookaround',
  ],
  [
    "has an empty enum",
    { title: "enum", type: "object", properties: { a: { enum: [] } } },
    "enum must have non-empty array",
  ],
  [
    'has "if" without "then" or "else"',
    { title: "if", type: "object", if: { required: ["a"] } },
    '"if" without "then" and "else" is ignored',
  ],
];

describe("checkSchema()", () => {
  for (const [label, schema, message] of invalidSchemas) {
    it(`refuses a schema that ${label} with the message compileSchema gives`, () => {
      expect(refusal(() => checkSchema(schema))).to.equal(message);
      expect(refusal(() => compileSchema(schema))).to.equal(message);
    });
  }

  it('refuses a "$schema" it does not know with a message, not a bare Error', () => {
    expect(refusal(() => checkSchema({ $schema: "http://json-schema.org/draft-07/schema#", type: "object" }))).to.equal(
      'its "$schema" is "http://json-schema.org/draft-07/schema#", a meta-schema this server does not know: use "https://json-schema.org/draft/2020-12/schema" or leave "$schema" out',
    );
  });

  it("accepts a valid schema, which is then checked against on first use with the usual messages", () => {
    const schema: JsonObject = {
      title: "lazy",
      type: "object",
      properties: { n: { type: "integer", minimum: 0 }, s: { type: "string", pattern: "^(a+)+$" } },
      required: ["n"],
    };
    checkSchema(schema);
    expect(checkAgainstSchema(schema, { n: 1, s: "aaa" })).to.deep.equal([]);
    expect(checkAgainstSchema(schema, { n: -1, s: `${"a".repeat(50_000)}!` })).to.deep.equal([
      "/n is -1: must be >= 0",
      `/s is "${"a".repeat(57)}...": must match pattern "^(a+)+$"`,
    ]);
  });
});

describe("checkAgainstSchema()", () => {
  it("shares the compiled form between equal schemas", () => {
    const one = { title: "shared", type: "object", required: ["x"] };
    const two = { title: "shared", type: "object", required: ["x"] };
    const check = compileSchema(one);
    expect(checkAgainstSchema(two, {})).to.deep.equal(['(root) misses the required property "x"']);
    expect(check({ x: 1 })).to.deep.equal([]);
  });

  it("reports a schema that cannot be compiled as a problem of every value, without throwing", () => {
    const schema = { title: "never checked", type: "object", properties: { a: { typo: 1 } } };
    const problem =
      'the schema cannot be used: it is not a valid JSON Schema (draft 2020-12): it uses the unknown keyword "typo": did you mean "type"?';
    expect(checkAgainstSchema(schema, {})).to.deep.equal([problem]);
    expect(checkAgainstSchema(schema, { a: 1 })).to.deep.equal([problem]);
  });
});
