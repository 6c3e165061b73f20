import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { Ajv2020 } from "ajv/dist/2020.js";
import { expect } from "chai";
import { hashJson, jsonEquals } from "../../src/json/json-hash.js";
import { compileSchema } from "../../src/json/schema-validator.js";
import { formatSchemaErrors } from "../../src/json/schema-errors.js";
import { seededRandom } from "./random-messages.js";

/** ajv with its own keywords, as the server configured it before (every error listed). */
const reference = new Ajv2020({ allErrors: true, verbose: true, strict: false, logger: false });

/** What ajv's own keywords answer for `value`: the problems, formatted as the server formats them. */
function ajvProblems(schema: JsonObject, value: unknown): string[] {
  const validate = reference.compile(schema);
  reference.removeSchema(schema);
  return validate(value) ? [] : formatSchemaErrors(validate.errors ?? []);
}

/**
 * Random JSON values from a small domain, so that equal values come up often: numbers that equal
 * (0 and -0, 1 and 1.0) and differ by type ("1" and 1), objects with the same keys in another order.
 */
function randomValue(random: () => number, depth = 0): JsonValue {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  const kind = depth >= 2 ? pick(["scalar"]) : pick(["scalar", "scalar", "array", "object"]);
  if (kind === "array") return Array.from({ length: Math.floor(random() * 3) }, () => randomValue(random, depth + 1));
  if (kind === "object") {
    const keys = ["a", "b", "c"].filter(() => random() < 0.5);
    if (random() < 0.5) keys.reverse();
    return Object.fromEntries(keys.map((key) => [key, randomValue(random, depth + 1)]));
  }
  return pick<JsonValue>([0, -0, 1, 1.0, 1.5, 2, "a", "b", "1", "", true, false, null]);
}

/** `value` with the keys of each object in the reverse order: deep-equal to it. */
function reordered(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(reordered);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .reverse()
      .map((key) => [key, reordered(value[key] as JsonValue)]),
  );
}

describe("hashJson() and jsonEquals()", () => {
  it("hash deep-equal values alike and tell them apart as ajv's deep equality does", () => {
    const random = seededRandom(7);
    for (let round = 0; round < 2000; round++) {
      const a = randomValue(random);
      const b = random() < 0.5 ? reordered(a) : randomValue(random);
      const equal = jsonEquals(a, b);
      const equalByText = JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));
      expect(equal, `${JSON.stringify(a)} and ${JSON.stringify(b)}`).to.equal(equalByText);
      if (equal) expect(hashJson(a)?.hash).to.equal(hashJson(b)?.hash);
    }
  });

  it("stops hashing a value larger than the size it is given", () => {
    expect(hashJson({ a: [1, 2, 3] }, 3)).to.equal(undefined);
    expect(hashJson({ a: [1, 2, 3] })?.size).to.equal(6);
    expect(hashJson("x".repeat(80))?.size).to.equal(11);
  });
});

describe("enum and uniqueItems checked by hashing", () => {
  it("answer as ajv's own do for random enums (compared and hashed) and values, messages included", () => {
    const random = seededRandom(11);
    for (let round = 0; round < 120; round++) {
      const members = Array.from({ length: 1 + Math.floor(random() * 30) }, () => randomValue(random));
      const schema: JsonObject = {
        type: "object",
        properties: { v: { enum: members }, w: { items: { enum: members } } },
      };
      const check = compileSchema(schema);
      for (let sample = 0; sample < 5; sample++) {
        const member = members[Math.floor(random() * members.length)] as JsonValue;
        const value = { v: random() < 0.5 ? reordered(member) : randomValue(random), w: [randomValue(random), member] };
        expect(check(value), JSON.stringify({ members, value })).to.deep.equal(ajvProblems(schema, value));
      }
    }
  });

  it("answer as ajv's own do for random arrays, with and without a declared item type, the pair reported included", () => {
    const random = seededRandom(13);
    const itemSchemas: JsonObject[] = [
      {},
      { type: "number" },
      { type: "integer" },
      { type: ["string", "number"] },
      { type: ["boolean", "null", "string"] },
      { type: "object" },
      { type: ["array", "string"] },
    ];
    for (let round = 0; round < 100; round++) {
      for (const items of itemSchemas) {
        const schema: JsonObject = { type: "object", properties: { a: { type: "array", items, uniqueItems: true } } };
        const values = Array.from({ length: Math.floor(random() * 8) }, () => randomValue(random));
        if (values.length > 1 && random() < 0.5) values.push(reordered(values[0] as JsonValue));
        const value = { a: values };
        expect(compileSchema(schema)(value), JSON.stringify({ items, value })).to.deep.equal(
          ajvProblems(schema, value),
        );
      }
    }
  });
});

/** `value` with every object's keys sorted, for comparing by JSON text. */
function sorted(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(sorted);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sorted(value[key] as JsonValue)]),
  );
}
