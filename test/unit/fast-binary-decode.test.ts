import {
  create,
  fromBinary,
  toBinary,
  type BinaryReadOptions,
  type DescMessage,
  type JsonObject,
} from "@bufbuild/protobuf";
import { DoubleValueSchema, ListValueSchema, StructSchema, TimestampSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { RegisterToolRequestSchema } from "../../gen/toolruntime/v1/registry_pb.js";
import { ExecuteToolRequestSchema } from "../../gen/toolruntime/v1/runner_pb.js";
import { fromBinaryCompiled, fromBinaryFast } from "../../src/codec/fast-binary-decode.js";
import { protobufRecursionLimit } from "../../src/server/protobuf-limits.js";
import { createDecodeFixtures } from "./decode-fixtures.js";
import { apiMessageSchemas, edgeJsonObjects, fillMessage, seededRandom } from "./random-messages.js";

const fixtures = createDecodeFixtures();
const wellKnown = [StructSchema, ValueSchema, ListValueSchema, TimestampSchema, DoubleValueSchema];
const allSchemas: DescMessage[] = [...apiMessageSchemas, ...wellKnown, fixtures.scalars, fixtures.flipped];

describe("fromBinaryFast()", function () {
  // Thousands of messages, each decoded and compared twice.
  this.timeout(120_000);
  it("decodes every message type of the API, filled at random, to what fromBinary gives, on its own", () => {
    expect(apiMessageSchemas.length).to.be.greaterThan(50);
    const random = seededRandom(7);
    let compared = 0;
    for (const schema of allSchemas) {
      for (let round = 0; round < 30; round++) {
        const bytes = encodeRandom(schema, random);
        expectCompiledAsProtobufEs(schema, bytes, `${schema.typeName}, round ${round}`);
        compared++;
      }
    }
    expect(compared).to.equal(allSchemas.length * 30);
  });

  it("merges a message read twice as protobuf-es does: scalars last one wins, lists append, messages merge", () => {
    const random = seededRandom(13);
    for (const schema of allSchemas) {
      for (let round = 0; round < 20; round++) {
        const bytes = concat(encodeRandom(schema, random), encodeRandom(schema, random), encodeRandom(schema, random));
        expectCompiledAsProtobufEs(schema, bytes, `${schema.typeName} merged, round ${round}`);
      }
    }
  });

  it("reads repeated scalars packed and unpacked, and a mix of both in one message", () => {
    const random = seededRandom(17);
    for (let round = 0; round < 40; round++) {
      const packed = encodeRandom(fixtures.scalars, random);
      const unpacked = encodeRandom(fixtures.flipped, random);
      expectCompiledAsProtobufEs(fixtures.scalars, unpacked, `unpacked as packed, round ${round}`);
      expectCompiledAsProtobufEs(fixtures.flipped, packed, `packed as unpacked, round ${round}`);
      expectCompiledAsProtobufEs(fixtures.scalars, concat(packed, unpacked), `mixed, round ${round}`);
    }
  });

  it("keeps unknown fields of every wire type, as views of the caller's bytes, or drops them when asked", () => {
    const random = seededRandom(19);
    const unknown = Uint8Array.from([
      ...[0xb8, 0x3e, 0x96, 0x01], // field 999, varint 150
      ...[0xb9, 0x3e, 1, 2, 3, 4, 5, 6, 7, 8], // field 999, fixed64
      ...[0xbd, 0x3e, 1, 2, 3, 4], // field 999, fixed32
      ...[0xba, 0x3e, 3, 0x61, 0x62, 0x63], // field 999, length-delimited "abc"
    ]);
    for (const schema of allSchemas) {
      const bytes = concat(encodeRandom(schema, random), unknown, encodeRandom(schema, random), unknown);
      expectCompiledAsProtobufEs(schema, bytes, schema.typeName);
      expectCompiledAsProtobufEs(schema, bytes, `${schema.typeName}, unknown dropped`, { readUnknownFields: false });
      const decoded = fromBinaryCompiled(schema, Buffer.from(bytes)) as { $unknown?: { data: Uint8Array }[] };
      expect(Buffer.isBuffer(decoded.$unknown?.[0]?.data), "a view of a Buffer is a Buffer").to.equal(true);
    }
  });

  it("reads Struct edge values: nested lists, nulls, -0, extreme doubles, surrogate pairs, empty and odd keys", () => {
    for (const json of edgeJsonObjects) {
      const request = create(ExecuteToolRequestSchema, { toolName: "t", inputs: json });
      const bytes = toBinary(ExecuteToolRequestSchema, request);
      expectCompiledAsProtobufEs(ExecuteToolRequestSchema, bytes, JSON.stringify(json));
      expectCompiledAsProtobufEs(ExecuteToolRequestSchema, concat(bytes, bytes), `twice ${JSON.stringify(json)}`);
    }
    const proto = fromBinaryFast(
      ExecuteToolRequestSchema,
      toBinary(
        ExecuteToolRequestSchema,
        create(ExecuteToolRequestSchema, { inputs: edgeJsonObjects[2] as JsonObject }),
      ),
    ).inputs as Record<string, unknown>;
    expect(Object.getPrototypeOf(proto)).to.equal(Object.prototype);
    expect(Object.keys(proto)).to.deep.equal(["__proto__", "constructor", "toString"]);
  });

  it("reads hand-written Struct encodings: entries without key or value, repeated kinds in one Value", () => {
    const value = (...fields: number[][]): number[] => [0x12, ...lengthOf(fields.flat()), ...fields.flat()];
    const entry = (...fields: number[][]): number[] => [0x0a, ...lengthOf(fields.flat()), ...fields.flat()];
    const key = (text: string): number[] => [0x0a, text.length, ...Buffer.from(text)];
    const struct = (...entries: number[][]): number[] => [0x2a, ...lengthOf(entries.flat()), ...entries.flat()];
    const list = (...values: number[][]): number[] => [0x32, ...lengthOf(values.flat()), ...values.flat()];
    const item = (...fields: number[][]): number[] => [0x0a, ...lengthOf(fields.flat()), ...fields.flat()];
    const cases: number[][] = [
      entry(), // no key, no value
      entry(key("a")), // no value
      entry(value()), // a Value with no kind
      entry(key("a"), value([0x08, 0x05])), // null_value 5 (an open enum)
      entry(key("a"), value([0x20, 0x02]), value([0x1a, 1, 0x78])), // a value field twice: the last kind
      entry(key("a"), value(struct(entry(key("x"), value([0x20, 1])))), value(struct(entry(key("y"))))), // merged
      entry(key("a"), value(list(item([0x20, 1]))), value(list(item()))), // appended
      entry(key("a"), value(list(item())), value(struct())), // replaced
      entry(key("a"), key("b"), value([0x11, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f])), // the last key; Infinity
      entry(key("a"), [0x18, 1], value([0x58, 1])), // unknown fields in an entry and in a Value
      [0x10, 0x01, ...entry(key("a"))], // an unknown field in a Struct
    ];
    for (const fields of cases) {
      const bytes = Uint8Array.from([0x1a, ...lengthOf(fields), ...fields]); // ExecuteToolRequest.inputs = 3
      expect(ExecuteToolRequestSchema.fields.find((field) => field.number === 3)?.name).to.equal("inputs");
      expectCompiledAsProtobufEs(ExecuteToolRequestSchema, bytes, Buffer.from(bytes).toString("hex"));
    }
  });

  it("fails on truncated, garbled or misplaced bytes exactly as fromBinary fails", () => {
    const random = seededRandom(23);
    let failures = 0;
    for (const schema of allSchemas) {
      const bytes = encodeRandom(schema, random);
      for (let length = 0; length < bytes.length; length += 1 + Math.floor(bytes.length / 40)) {
        failures += expectSameOutcome(schema, bytes.subarray(0, length));
      }
      for (let round = 0; round < 20 && bytes.length > 0; round++) {
        const garbled = Uint8Array.from(bytes);
        garbled[Math.floor(random() * garbled.length)] = Math.floor(random() * 256);
        failures += expectSameOutcome(schema, garbled);
      }
      const other = allSchemas[Math.floor(random() * allSchemas.length)] as DescMessage;
      failures += expectSameOutcome(schema, encodeRandom(other, random));
      failures += expectSameOutcome(
        schema,
        Uint8Array.from({ length: 24 }, () => Math.floor(random() * 256)),
      );
    }
    // Enough of them failed for the comparison to mean something.
    expect(failures).to.be.greaterThan(300);
  });

  it("fails on invalid UTF-8, a group, an end-group tag and an overlong varint as fromBinary does", () => {
    const cases = [
      [0x0a, 0x02, 0xc3, 0x28], // runner: invalid UTF-8
      [0x1a, 0x06, 0x0a, 0x04, 0x0a, 0x02, 0xff, 0xfe], // inputs: a key that is invalid UTF-8
      [0xbb, 0x3e, 0xbc, 0x3d], // an unknown group (field 999) ended by another field's end-group tag
      [0x0c], // an end-group tag
      [0x08, ...Array<number>(10).fill(0xff), 0x01], // a varint of eleven bytes
      [0x00], // field number 0
      [0x0f], // wire type 7
    ];
    for (const bytes of cases) {
      expect(expectSameOutcome(ExecuteToolRequestSchema, Uint8Array.from(bytes)), bytes.join(",")).to.equal(1);
    }
    // Left to protobuf-es, which keeps them: a well-formed unknown group, an unknown varint of eleven bytes.
    for (const bytes of [
      [0xbb, 0x3e, 0x08, 0x01, 0xbc, 0x3e],
      [0xb8, 0x3e, ...Array<number>(10).fill(0xff), 0x01],
    ]) {
      expect(expectSameOutcome(ExecuteToolRequestSchema, Uint8Array.from(bytes)), bytes.join(",")).to.equal(0);
    }
  });

  it("decodes strings of every short length, ASCII or not, valid or not, as fromBinary does", () => {
    const pieces = ["a", "é", "€", "😀", "\u0000", "~"];
    let compared = 0;
    for (let length = 0; length <= 9; length++) {
      for (const piece of pieces) {
        const ascii = "x".repeat(length);
        for (const text of [ascii, piece + ascii, ascii + piece]) {
          const request = create(ExecuteToolRequestSchema, { toolName: text, inputs: { [text]: text } });
          expectCompiledAsProtobufEs(ExecuteToolRequestSchema, toBinary(ExecuteToolRequestSchema, request), text);
          compared++;
        }
      }
      // A byte of 0x80 or more where UTF-8 cannot have it, at each place in a short string: refused as a
      // proto3 string (runner), refused as a Struct key (inputs) too, as fromBinary does.
      for (let at = 0; at <= length; at++) {
        const bytes = [...Buffer.from("y".repeat(length))];
        bytes.splice(at, 0, 0xff);
        expect(expectSameOutcome(ExecuteToolRequestSchema, Uint8Array.from([0x0a, bytes.length, ...bytes]))).to.equal(
          1,
        );
        const entry = [0x0a, bytes.length, ...bytes];
        const field = [0x0a, entry.length, ...entry];
        expect(expectSameOutcome(ExecuteToolRequestSchema, Uint8Array.from([0x1a, field.length, ...field]))).to.equal(
          1,
        );
      }
    }
    expect(compared).to.equal(10 * pieces.length * 3);
  });

  it("decodes thousands of recurring Struct keys and values, in two orders, as fromBinary does", () => {
    // More distinct strings than the table of recurring strings has slots (see recurring-strings.ts),
    // of every length around its bounds (keys up to 40 bytes, values up to 24), each decoded twice:
    // collisions, misses and hits must all give the string the bytes spell.
    const random = seededRandom(7);
    const texts: string[] = [];
    for (let index = 0; index < 5000; index++) {
      const length = index % 45;
      let text = "";
      for (let at = 0; at < length; at++) text += String.fromCharCode(0x20 + Math.floor(random() * 95));
      texts.push(text);
    }
    texts.push("é".repeat(3), "x".repeat(40) + "é", "\u0000");
    for (const order of [texts, [...texts].reverse()]) {
      for (let start = 0; start < order.length; start += 100) {
        const inputs: JsonObject = {};
        for (const text of order.slice(start, start + 100)) inputs[text] = { type: text, list: [text, text] };
        const request = create(ExecuteToolRequestSchema, { inputs });
        expectCompiledAsProtobufEs(
          ExecuteToolRequestSchema,
          toBinary(ExecuteToolRequestSchema, request),
          `at ${start}`,
        );
      }
    }
    // A key whose length runs past the end of the bytes: refused as fromBinary refuses it.
    const cut = [0x0a, 0x05, ...Buffer.from("type")];
    expect(expectSameOutcome(ExecuteToolRequestSchema, Uint8Array.from([0x1a, 0x08, 0x0a, 0x06, ...cut]))).to.equal(1);
  });

  it("stops nesting at the recursion limit as fromBinary does, and never overflows the stack differently", () => {
    const options = { recursionLimit: protobufRecursionLimit };
    const shallow = toBinary(ExecuteToolRequestSchema, create(ExecuteToolRequestSchema, { inputs: nest(450) }));
    expectCompiledAsProtobufEs(ExecuteToolRequestSchema, shallow, "450 levels", options);
    const deep = toBinary(ExecuteToolRequestSchema, create(ExecuteToolRequestSchema, { inputs: nest(600) }));
    expect(expectSameOutcome(ExecuteToolRequestSchema, deep, options)).to.equal(1);
    expect(() => fromBinaryFast(ExecuteToolRequestSchema, deep, options)).to.throw(
      Error,
      /^cannot decode message google\.protobuf\.\w+ from binary: maximum recursion depth of 1000 reached$/,
    );
    expect(expectSameOutcome(ExecuteToolRequestSchema, shallow)).to.equal(1);
    // Deeper than any stack: both run out of it (or reach the limit) alike.
    const abyss = deepStructBytes(20_000);
    expect(expectSameOutcome(ExecuteToolRequestSchema, abyss, options)).to.equal(1);
    expect(expectSameOutcome(ExecuteToolRequestSchema, abyss, { recursionLimit: Number.POSITIVE_INFINITY })).to.equal(
      1,
    );
  });

  it("decodes a RegisterToolRequest carrying a JSON Schema through the compiled path", () => {
    const spec = {
      name: "fs.read",
      inputSchema: {
        type: "object",
        properties: { path: { type: "string", description: "The path.", maxLength: 4096 } },
        required: ["path"],
        additionalProperties: false,
      },
    };
    const bytes = toBinary(RegisterToolRequestSchema, create(RegisterToolRequestSchema, { spec }));
    expect(fromBinaryCompiled(RegisterToolRequestSchema, bytes)?.spec?.inputSchema).to.deep.equal(spec.inputSchema);
  });
});

/** The encoding of a random message of `schema`. */
function encodeRandom(schema: DescMessage, random: () => number): Uint8Array {
  return toBinary(schema, create(schema, fillMessage(schema, random) as never));
}

/** Asserts that the compiled decoder, without falling back, gives what fromBinary gives, for a Buffer too. */
function expectCompiledAsProtobufEs(
  schema: DescMessage,
  bytes: Uint8Array,
  what: string,
  options?: Partial<BinaryReadOptions>,
): void {
  for (const input of [bytes, Buffer.from(bytes)]) {
    const expected = fromBinary(schema, input, options);
    const actual = fromBinaryCompiled(schema, input, options);
    expect(actual, what).to.deep.equal(expected);
    expectSameShape(actual, expected, what);
  }
}

/** Same prototypes and the same own keys in the same order, at every level. */
function expectSameShape(actual: unknown, expected: unknown, path: string): void {
  const difference = shapeDifference(actual, expected, path);
  expect(difference, path).to.equal(undefined);
}

/** Where two values' shapes first differ (prototype or own keys in order), or undefined. Plain
 * comparisons rather than an assertion per key: these tests compare thousands of large messages. */
function shapeDifference(actual: unknown, expected: unknown, path: string): string | undefined {
  if (typeof expected !== "object" || expected === null) return undefined;
  if (typeof actual !== "object" || actual === null) return `${path} is not an object`;
  if (Object.getPrototypeOf(actual) !== Object.getPrototypeOf(expected)) return `prototype at ${path}`;
  if (ArrayBuffer.isView(expected)) return undefined;
  const keys = Object.keys(expected);
  const actualKeys = Object.keys(actual);
  if (actualKeys.length !== keys.length || actualKeys.some((key, index) => key !== keys[index])) {
    return `keys at ${path}: ${actualKeys.join(",")} instead of ${keys.join(",")}`;
  }
  for (const key of keys) {
    const inner = shapeDifference(
      (actual as Record<string, unknown>)[key],
      (expected as Record<string, unknown>)[key],
      `${path}.${key}`,
    );
    if (inner) return inner;
  }
  return undefined;
}

/** Asserts that fromBinaryFast returns or throws what fromBinary does; 1 when it threw. */
function expectSameOutcome(schema: DescMessage, bytes: Uint8Array, options?: Partial<BinaryReadOptions>): number {
  const outcome = (decode: typeof fromBinary): unknown => {
    try {
      return { value: decode(schema, bytes, options) };
    } catch (error) {
      return { error: (error as Error).constructor.name, message: (error as Error).message };
    }
  };
  const expected = outcome(fromBinary) as { error?: string };
  expect(outcome(fromBinaryFast), `${schema.typeName} ${Buffer.from(bytes).toString("hex")}`).to.deep.equal(expected);
  return expected.error === undefined ? 0 : 1;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  return Uint8Array.from(Buffer.concat(parts));
}

function lengthOf(bytes: { readonly length: number }): number[] {
  const out: number[] = [];
  let length = bytes.length;
  while (length > 0x7f) {
    out.push((length & 0x7f) | 0x80);
    length >>>= 7;
  }
  out.push(length);
  return out;
}

function nest(depth: number): JsonObject {
  let value: JsonObject = { leaf: true };
  for (let level = 0; level < depth; level++) value = { inner: value };
  return value;
}

/** ExecuteToolRequest.inputs nesting `depth` Structs, built from the inside out (toBinary would recurse). */
function deepStructBytes(depth: number): Uint8Array {
  let inner = Buffer.alloc(0);
  for (let level = 0; level < depth; level++) {
    const valueFields = Buffer.concat([Buffer.from([0x2a, ...lengthOf(inner)]), inner]);
    const entry = Buffer.concat([Buffer.from([0x0a, 1, 0x61, 0x12, ...lengthOf(valueFields)]), valueFields]);
    inner = Buffer.concat([Buffer.from([0x0a, ...lengthOf(entry)]), entry]);
  }
  return Uint8Array.from(Buffer.concat([Buffer.from([0x1a, ...lengthOf(inner)]), inner]));
}
