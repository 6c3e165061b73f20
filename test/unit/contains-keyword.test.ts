import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Ajv2020 } from "ajv/dist/2020.js";
import { expect } from "chai";
import { compileSchema } from "../../src/json/schema-validator.js";
import { seededRandom } from "./random-messages.js";

const reference = new Ajv2020({ allErrors: false, strict: false, logger: false });

function ajvAccepts(schema: JsonObject, value: unknown): boolean {
  const validate = reference.compile(schema);
  reference.removeSchema(schema);
  return validate(value);
}

describe("contains, forgetting each item's errors", () => {
  it("accepts and refuses what ajv's own contains does, with minContains and maxContains", () => {
    const random = seededRandom(17);
    const bounds: JsonObject[] = [
      {},
      { minContains: 2 },
      { minContains: 0, maxContains: 1 },
      { minContains: 1, maxContains: 2 },
      { maxContains: 3 },
      { minContains: 3, maxContains: 3 },
    ];
    const matches: JsonObject[] = [
      { type: "integer", minimum: 2 },
      { anyOf: [{ const: "x" }, { type: "array", contains: { const: 1 } }] },
      { $ref: "#/$defs/x" },
    ];
    for (const bound of bounds) {
      for (const contains of matches) {
        const schema: JsonObject = {
          type: "object",
          properties: { a: { type: "array", contains, ...bound } },
          $defs: { x: { anyOf: [{ type: "string" }, { type: "array", items: { $ref: "#/$defs/x" } }] } },
        };
        const check = compileSchema(schema);
        for (let round = 0; round < 60; round++) {
          const items: JsonValue[] = Array.from(
            { length: Math.floor(random() * 6) },
            () => [0, 1, 2, 3, "x", "y", [1], [0], [["x"]], [[2]]][Math.floor(random() * 10)] as JsonValue,
          );
          const value = { a: items };
          expect(check(value).length === 0, JSON.stringify({ bound, contains, items })).to.equal(
            ajvAccepts(schema, value),
          );
        }
      }
    }
  });

  it("reports only its own error when no item matches, not one per item", () => {
    const check = compileSchema({ type: "object", properties: { a: { type: "array", contains: { type: "string" } } } });
    expect(check({ a: [1, 2, 3] })).to.deep.equal(["/a is an array: must contain at least 1 valid item(s)"]);
    const bounded = compileSchema({
      type: "object",
      properties: { a: { type: "array", contains: { type: "string" }, minContains: 2, maxContains: 2 } },
    });
    expect(bounded({ a: ["x", 1, "y", "z"] })).to.deep.equal([
      "/a is an array: must contain at least 2 and no more than 2 valid item(s)",
    ]);
    expect(bounded({ a: ["x", 1, "y"] })).to.deep.equal([]);
  });
});
