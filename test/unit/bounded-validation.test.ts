import type { JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { create } from "@bufbuild/protobuf";
import { isToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import {
  checkAgainstSchema,
  CheckBudgetExceededError,
  checkSchema,
  compileSchema,
  CostlySchemaError,
  type SchemaCheck,
} from "../../src/json/schema-validator.js";
import { validateSpec } from "../../src/registry/validate-spec.js";

/**
 * The most CPU time one of these checks may take, in milliseconds: each takes tens of ms here, and
 * took 4.7 s to over a minute (or exhausted memory) before it was bounded; the margin is for a
 * machine busy with other work, so that the bound tells a bounded check from an unbounded one.
 */
const cpuBoundMs = 1000;

/** The CPU time `action` takes, in milliseconds, with what it returned or threw. */
function cpu(action: () => unknown): { outcome: unknown; cpuMs: number } {
  const started = process.cpuUsage();
  let outcome: unknown;
  try {
    outcome = action();
  } catch (error) {
    outcome = error;
  }
  const used = process.cpuUsage(started);
  return { outcome, cpuMs: (used.user + used.system) / 1000 };
}

/** A chain of definitions l0 … l{levels}, each applying the next twice under `keyword`. */
function doublingChain(keyword: string, levels: number, last: JsonObject): JsonObject {
  const $defs: JsonObject = {};
  for (let level = 0; level < levels; level++) {
    const next = { $ref: `#/$defs/l${level + 1}` };
    $defs[`l${level}`] =
      keyword === "dependentSchemas"
        ? { dependentSchemas: { a: next, b: { ...next } } }
        : { [keyword]: [next, { ...next }] };
  }
  $defs[`l${levels}`] = last;
  return $defs;
}

/** Definitions l0 … l{levels}: `make` gives each but the last, from the reference to the next. */
function definitions(levels: number, make: (next: string, level: number) => JsonObject, last: JsonObject): JsonObject {
  const $defs: JsonObject = {};
  for (let level = 0; level < levels; level++) $defs[`l${level}`] = make(`#/$defs/l${level + 1}`, level);
  $defs[`l${levels}`] = last;
  return $defs;
}

/** The JSON size of `value`, as the runner passes it. */
const sizeOf = (value: unknown): number => JSON.stringify(value).length;

/**
 * A compiled check of `schema`, warmed up: its form that lists errors is compiled by a first
 * failing value, so that what is measured afterwards is the check alone.
 */
function warmCheck(schema: JsonObject, failing: JsonObject): SchemaCheck {
  checkSchema(schema);
  const check = compileSchema(schema);
  check(failing);
  return check;
}

const costlyPrefix = (detail: string): string => `checking one value${detail} can take`;
const advice = {
  chain:
    "applies subschemas that reach the same schemas again, and so on down the chain: refer to each schema from one place rather than from several subschemas",
  descent:
    "applies 2 subschemas that each work through the parts of the value, level after level: let one of them look into the value, or merge them",
  parts: "applies several schemas to each part of the value, again at every level: refer to one schema for each part",
};

describe("Bounded validation", () => {
  describe("checkSchema() refuses a schema whose check of one value could explode, naming the construct", () => {
    const refused: [string, JsonObject, string][] = [
      [
        "an anyOf $ref chain of 24 levels, each referring twice to the next (checked with {x: 1}: 2^24 branches)",
        {
          type: "object",
          properties: { x: { $ref: "#/$defs/l0" } },
          $defs: doublingChain("anyOf", 24, { type: "string" }),
        },
        `${costlyPrefix(" at depth 1")} 67,108,862 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "anyOf" at "#/$defs/l0" ${advice.chain}`,
      ],
      [
        "an allOf $ref chain of depth 32 (a valid input took a minute)",
        {
          type: "object",
          properties: { x: { $ref: "#/$defs/l0" } },
          $defs: doublingChain("allOf", 32, { type: "integer" }),
        },
        `${costlyPrefix(" at depth 1")} 17,179,869,182 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "allOf" at "#/$defs/l0" ${advice.chain}`,
      ],
      [
        "a dependentSchemas chain, each level applying the next for two properties",
        { type: "object", $ref: "#/$defs/l0", $defs: doublingChain("dependentSchemas", 20, { required: ["a"] }) },
        `${costlyPrefix("")} 7,340,028 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "dependentSchemas" at "#/$defs/l0" ${advice.chain}`,
      ],
      [
        "a not of an anyOf chain",
        {
          type: "object",
          properties: { x: { $ref: "#/$defs/l0" } },
          $defs: definitions(20, (next) => ({ not: { anyOf: [{ $ref: next }, { $ref: next }] } }), { type: "string" }),
        },
        `${costlyPrefix(" at depth 1")} 5,242,877 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "anyOf" at "#/$defs/l0/not" ${advice.chain}`,
      ],
      [
        "unevaluatedProperties over a chain of anyOf",
        {
          type: "object",
          $ref: "#/$defs/l0",
          unevaluatedProperties: false,
          $defs: definitions(
            16,
            (next, level) => ({
              anyOf: [
                { properties: { [`p${level}`]: true }, $ref: next },
                { properties: { [`q${level}`]: true }, $ref: next },
              ],
            }),
            {},
          ),
        },
        `${costlyPrefix("")} 393,212 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "anyOf" at "#/$defs/l0" ${advice.chain}`,
      ],
      [
        "a recursive anyOf whose two branches both descend into it (a 47-byte value 20 deep took 7 s, with or without allErrors)",
        {
          type: "object",
          properties: { t: { $ref: "#/$defs/t" } },
          $defs: {
            t: {
              anyOf: [
                { type: "array", items: { $ref: "#/$defs/t" } },
                { type: "array", maxItems: 1, items: { $ref: "#/$defs/t" } },
              ],
            },
          },
        },
        `${costlyPrefix(" at depth 12")} 10,240 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "anyOf" at "#/$defs/t" ${advice.descent}`,
      ],
      [
        "a recursive schema whose properties and patternProperties both apply to one name (a valid value doubles the work at each level)",
        {
          $ref: "#/$defs/n",
          $defs: {
            n: {
              type: "object",
              properties: { a: { $ref: "#/$defs/n" } },
              patternProperties: { "^a": { $ref: "#/$defs/n" } },
            },
          },
        },
        `${costlyPrefix(" at depth 9")} 13,824 units of work (about one per subschema applied to it), more than the 10,000 allowed: its "patternProperties" at "#/$defs/n" ${advice.parts}`,
      ],
      [
        "2,000 patternProperties (each property name tested against all of them)",
        {
          type: "object",
          patternProperties: Object.fromEntries(
            Array.from({ length: 2000 }, (_, index) => [`^p${index}_`, { type: "string" }]),
          ),
        },
        'its "patternProperties" at "#" has 2,000 patterns, more than the 64 allowed: every property name is tested against each of them, so merge them into fewer patterns (an alternation such as "^(?:a|b)$" is one test)',
      ],
    ];

    for (const [label, schema, message] of refused) {
      it(`refuses ${label}`, () => {
        const { outcome, cpuMs } = cpu(() => checkSchema(schema));
        expect(outcome).to.be.instanceOf(CostlySchemaError);
        expect((outcome as Error).message).to.equal(message);
        expect(cpuMs, "CPU time of the registration's check").to.be.below(cpuBoundMs);
      });
    }

    it("refuses a costly schema at registration with a RegistrationError (INVALID_ARGUMENT) that says so", () => {
      const spec = create(ToolSpecSchema, {
        name: "evil.chain",
        inputSchema: {
          type: "object",
          properties: { x: { $ref: "#/$defs/l0" } },
          $defs: doublingChain("anyOf", 24, { type: "string" }),
        },
      });
      const { outcome } = cpu(() => validateSpec(spec));
      expect(isToolRuntimeError(outcome)).to.equal(true);
      const error = outcome as { code: string; errorType: string; details: string; toolName: string };
      expect([error.code, error.errorType, error.toolName]).to.deep.equal([
        "INVALID_ARGUMENT",
        "RegistrationError",
        "evil.chain",
      ]);
      expect(error.details).to.equal(`input_schema of "evil.chain" is too costly to check: ${refused[0]?.[2]}`);
    });

    it("answers a check against a costly schema held in a store (never registered here) with the refusal, at once", () => {
      const [, schema, message] = refused[1] as [string, JsonObject, string];
      const input = { x: 1, note: "a valid input: sixty-one bytes of JSON, all!" };
      expect(sizeOf(input)).to.equal(61);
      const { outcome, cpuMs } = cpu(() => checkAgainstSchema(structuredClone(schema), input));
      expect(outcome).to.deep.equal([`the schema cannot be used: it is too costly to check: ${message}`]);
      expect(cpuMs).to.be.below(cpuBoundMs);
    });

    it("compiles nothing for a refused schema: compileSchema throws the same CostlySchemaError", () => {
      const [, schema, message] = refused[0] as [string, JsonObject, string];
      expect(() => compileSchema(structuredClone(schema)))
        .to.throw(CostlySchemaError)
        .with.property("message", message);
    });
  });

  describe("a check of a value takes time linear in its size, or stops within its budget", () => {
    it("checks uniqueItems over 50,000 integers without a declared item type in linear time", () => {
      const schema: JsonObject = { type: "object", properties: { a: { type: "array", uniqueItems: true } } };
      const check = warmCheck(schema, { a: [1, 1] });
      const distinct = { a: Array.from({ length: 50_000 }, (_, index) => index) };
      const repeated = { a: [...distinct.a, 7] };
      const valid = cpu(() => check(distinct, sizeOf(distinct)));
      expect(valid.outcome).to.deep.equal([]);
      expect(valid.cpuMs).to.be.below(cpuBoundMs);
      const invalid = cpu(() => check(repeated, sizeOf(repeated)));
      // ajv's own message: the last item equal to an earlier one, and the nearest earlier one.
      expect(invalid.outcome).to.deep.equal([
        "/a is an array: must NOT have duplicate items (items ## 7 and 50000 are identical)",
      ]);
      expect(invalid.cpuMs).to.be.below(cpuBoundMs);
    });

    it("checks uniqueItems over 20,000 objects in linear time, whatever the order of their keys", () => {
      const schema: JsonObject = { type: "object", properties: { a: { type: "array", uniqueItems: true } } };
      const check = warmCheck(schema, { a: [{}, {}] });
      const items = Array.from({ length: 20_000 }, (_, index) => ({
        id: index,
        name: `n${index}`,
        tags: ["x", index % 7],
      }));
      const valid = cpu(() => check({ a: items }, sizeOf({ a: items })));
      expect(valid.outcome).to.deep.equal([]);
      expect(valid.cpuMs).to.be.below(cpuBoundMs);
      const repeated = { a: [...items, { tags: ["x", 3], name: "n10", id: 10 }] };
      const invalid = cpu(() => check(repeated, sizeOf(repeated)));
      expect(invalid.outcome).to.deep.equal([
        "/a is an array: must NOT have duplicate items (items ## 10 and 20000 are identical)",
      ]);
      expect(invalid.cpuMs).to.be.below(cpuBoundMs);
    });

    it("checks an item enum of 10,000 values against 10,000 misses, formatting only the error it lists", () => {
      const values = Array.from({ length: 10_000 }, (_, index) => index);
      const schema: JsonObject = { type: "object", properties: { a: { type: "array", items: { enum: values } } } };
      const check = warmCheck(schema, { a: [-1] });
      const misses = { a: values.map((value) => -value - 1) };
      const invalid = cpu(() => check(misses, sizeOf(misses)));
      // The list of every error would hold 10,000 of them (over the 1,000 a list may collect).
      expect(invalid.outcome).to.deep.equal([
        "/a/0 is -1: must be one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 or 9,980 more",
        "and more",
      ]);
      expect(invalid.cpuMs).to.be.below(cpuBoundMs);
      const hits = { a: values.map((value) => 9_999 - value) };
      const valid = cpu(() => check(hits, sizeOf(hits)));
      expect(valid.outcome).to.deep.equal([]);
      expect(valid.cpuMs).to.be.below(cpuBoundMs);
    });

    it("stops a check of contains over an anyOf of 500 consts within its budget, and answers a value that matches early", () => {
      const anyOf = Array.from({ length: 500 }, (_, index) => ({ const: `v${index}` }));
      const schema: JsonObject = { type: "object", properties: { a: { type: "array", contains: { anyOf } } } };
      const check = warmCheck(schema, { a: [] });
      const misses = { a: Array.from({ length: 20_000 }, (_, index) => index) };
      const bytes = sizeOf(misses);
      const stopped = cpu(() => check(misses, bytes));
      expect(stopped.outcome).to.be.instanceOf(CheckBudgetExceededError);
      expect((stopped.outcome as Error).message).to.equal(
        `the check takes more work than is allowed for 108,897 bytes (535,588 units, about one per subschema applied to one value, within 359 ms): simplify the schema, or make the value smaller`,
      );
      expect(stopped.cpuMs).to.be.below(cpuBoundMs);
      const early = { a: ["v499", ...misses.a] };
      const valid = cpu(() => check(early, sizeOf(early)));
      expect(valid.outcome).to.deep.equal([]);
      expect(valid.cpuMs).to.be.below(cpuBoundMs);
    });

    it("stops an anyOf of 500 property counts over an object of 100,000 properties within its budget (ajv: 12 s)", () => {
      const anyOf = Array.from({ length: 500 }, (_, index) => ({ minProperties: index + 2, maxProperties: index + 2 }));
      const schema: JsonObject = { type: "object", anyOf };
      const check = warmCheck(schema, { a: 1 });
      const value = Object.fromEntries(Array.from({ length: 100_000 }, (_, index) => [`k${index}`, 0]));
      const { outcome, cpuMs } = cpu(() => check(value, sizeOf(value)));
      expect(outcome).to.be.instanceOf(CheckBudgetExceededError);
      expect((outcome as Error).message).to.equal(
        "the check takes more work than is allowed for 1,088,891 bytes (4,455,564 units, about one per subschema applied to one value, within 1,339 ms): simplify the schema, or make the value smaller",
      );
      expect(cpuMs).to.be.below(cpuBoundMs);
    });

    it("checks contains over a recursive $ref in linear time (ajv kept and copied every item's errors: 10,000 items took 4.7 s)", () => {
      const schema: JsonObject = {
        type: "object",
        properties: { a: { type: "array", contains: { $ref: "#/$defs/x" } } },
        $defs: { x: { anyOf: [{ type: "string" }, { type: "array", items: { $ref: "#/$defs/x" } }] } },
      };
      const check = warmCheck(schema, { a: [1] });
      const misses = { a: Array.from({ length: 10_000 }, () => 1) };
      const invalid = cpu(() => check(misses, sizeOf(misses)));
      // The listing of a failed value's problems has a wall-clock budget of its own (about 60 ms
      // here): on a busy machine it may be cut, and the answer then says "and more" after the error.
      const [first, ...rest] = invalid.outcome as string[];
      expect(first).to.equal("/a is an array: must contain at least 1 valid item(s)");
      expect(rest.filter((line) => line !== "and more")).to.deep.equal([]);
      expect(invalid.cpuMs).to.be.below(cpuBoundMs);
      const nested = { a: [...misses.a, [["x"]]] };
      expect(check(nested, sizeOf(nested))).to.deep.equal([]);
    });
  });
});
