import {
  create,
  equals,
  fromBinary,
  fromJson,
  ScalarType,
  toBinary,
  type DescField,
  type DescMessage,
  type JsonObject,
} from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { isWrapperDesc, StructSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { file_toolruntime_v1_execution } from "../../gen/toolruntime/v1/execution_pb.js";
import { file_toolruntime_v1_provider } from "../../gen/toolruntime/v1/provider_pb.js";
import { file_toolruntime_v1_registry } from "../../gen/toolruntime/v1/registry_pb.js";
import { file_toolruntime_v1_run_event, RunEventSchema } from "../../gen/toolruntime/v1/run_event_pb.js";
import {
  ExecuteToolResponseSchema,
  file_toolruntime_v1_runner,
  RunToolResponseSchema,
} from "../../gen/toolruntime/v1/runner_pb.js";
import { file_toolruntime_v1_tool, ToolResultSchema, ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { preEncodedMessage, toBinaryFast } from "../../src/codec/fast-binary.js";
import { encodeStruct } from "../../src/codec/struct-binary.js";

const metadata: JsonObject = {
  execution_id: "2b6f0c1e-6a57-4a8e-9d0c-0f1f5b0e2c11",
  tool_name: "builtin.noop",
  started_at: "2026-12-03T10:00:00.000Z",
  timeout_ms: 30000,
  running_ms: 0.123,
  negative: -1e300,
  nothing: null,
  flags: { read_only: true, writes: false },
  list: [1, "two", false, null, { nested: [[], {}] }],
  empty: {},
  "ünïcödé ключ": "ß".repeat(70),
  long: "x".repeat(300),
};

describe("toBinaryFast()", () => {
  it("writes a Struct byte for byte as protobuf-es does", () => {
    const expected = toBinary(StructSchema, fromJson(StructSchema, metadata));
    expect(Buffer.from(encodeStruct(metadata)).equals(Buffer.from(expected))).to.equal(true);
    expect(encodeStruct({})).to.have.length(0);
  });

  it("encodes a response whose result has metadata and output to the same message", () => {
    const result = create(ToolResultSchema, { success: true, output: { answer: [42] }, durationMs: 1.5, metadata });
    const response = create(ExecuteToolResponseSchema, { executionId: "e-1", result });
    const decoded = fromBinary(ExecuteToolResponseSchema, toBinaryFast(ExecuteToolResponseSchema, response));
    expect(equals(ExecuteToolResponseSchema, decoded, response)).to.equal(true);
    // The message given is not changed.
    expect(response.result?.metadata).to.equal(metadata);
  });

  it("reaches Structs inside oneof cases and nested messages (an event's result, a spec's schemas)", () => {
    const result = create(ToolResultSchema, { success: false, metadata });
    const completed = create(RunToolResponseSchema, {
      event: create(RunEventSchema, {
        sequence: 7n,
        executionId: "e-2",
        event: { case: "completed", value: { result } },
      }),
    });
    const spec = create(ToolSpecSchema, { name: "a.b", inputSchema: { type: "object", properties: { x: {} } } });
    const discovered = create(RunToolResponseSchema, {
      event: create(RunEventSchema, { sequence: 1n, event: { case: "discovered", value: { spec } } }),
    });
    for (const message of [completed, discovered]) {
      const decoded = fromBinary(RunToolResponseSchema, toBinaryFast(RunToolResponseSchema, message));
      expect(equals(RunToolResponseSchema, decoded, message)).to.equal(true);
    }
  });

  it("encodes every message type of the API byte for byte as protobuf-es does, filled at random", () => {
    const files = [
      file_toolruntime_v1_execution,
      file_toolruntime_v1_provider,
      file_toolruntime_v1_registry,
      file_toolruntime_v1_run_event,
      file_toolruntime_v1_runner,
      file_toolruntime_v1_tool,
    ];
    const schemas = files.flatMap((file) => [...nestedTypes(file)].filter((type) => type.kind === "message"));
    expect(schemas.length).to.be.greaterThan(50);
    const random = seededRandom(11);
    let compared = 0;
    for (const schema of [...schemas, StructSchema, TimestampSchema]) {
      for (let round = 0; round < 25; round++) {
        const message = fill(schema, random, 0);
        const expected = Buffer.from(toBinary(schema, message as never));
        const actual = Buffer.from(toBinaryFast(schema, message));
        expect(actual.toString("hex"), `${schema.typeName}, round ${round}`).to.equal(expected.toString("hex"));
        // What Connect sends for it: protobuf-es writing the pre-encoded bytes back.
        const carried = Buffer.from(toBinary(schema, preEncodedMessage(schema, actual) as never));
        expect(carried.toString("hex"), `${schema.typeName} carried`).to.equal(expected.toString("hex"));
        compared++;
      }
    }
    expect(compared).to.equal((schemas.length + 2) * 25);
  });

  it("takes the plain objects create() takes, with fields left out", () => {
    const init = { executionId: "e-3", result: { success: true, output: { a: 1 }, durationMs: 2, metadata } };
    const expected = toBinary(ExecuteToolResponseSchema, create(ExecuteToolResponseSchema, init));
    expect(Buffer.from(toBinaryFast(ExecuteToolResponseSchema, init)).equals(Buffer.from(expected))).to.equal(true);
    const event = { sequence: 2n ** 60n, event: { case: "log", value: { level: "info", message: "ß" } } };
    const expectedEvent = toBinary(RunEventSchema, create(RunEventSchema, event as never));
    expect(Buffer.from(toBinaryFast(RunEventSchema, event)).equals(Buffer.from(expectedEvent))).to.equal(true);
    expect(toBinaryFast(ExecuteToolResponseSchema, {})).to.have.length(0);
  });

  it("refuses a value that is not JSON", () => {
    expect(() => encodeStruct({ bad: 1n } as unknown as JsonObject)).to.throw(TypeError, /bigint/);
  });
});

/** A deterministic generator of numbers in [0, 1). */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

/** A message of `schema` with about half its fields set to values that probe the encoding's edges. */
function fill(schema: DescMessage, random: () => number, depth: number): Record<string, unknown> {
  const message = create(schema) as unknown as Record<string, unknown>;
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  for (const oneof of schema.oneofs) {
    if (random() < 0.3) continue;
    const field = pick(oneof.fields);
    const value = singular(field, random, depth);
    if (value !== undefined) message[oneof.localName] = { case: field.localName, value };
  }
  for (const field of schema.fields) {
    if (field.oneof || random() < 0.4) continue;
    if (field.fieldKind === "list") {
      const items = Array.from({ length: Math.floor(random() * 4) }, () => singular(field, random, depth));
      if (items.every((item) => item !== undefined)) message[field.localName] = items;
    } else if (field.fieldKind === "map") {
      const record: Record<string, unknown> = {};
      for (let i = Math.floor(random() * 3); i > 0; i--)
        record[pick(["k", "", "ключ", `k${i}`])] = singular(field, random, depth);
      if (Object.values(record).every((value) => value !== undefined)) message[field.localName] = record;
    } else {
      const value = singular(field, random, depth);
      if (value !== undefined) message[field.localName] = value;
    }
  }
  return message;
}

function singular(field: DescField, random: () => number, depth: number): unknown {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  if (field.enum) return pick(field.enum.values).number;
  if (field.message) {
    if (depth > 3) return undefined;
    if (field.message.typeName === "google.protobuf.Struct" && field.parent.typeName !== "google.protobuf.Value") {
      return pick<JsonObject>([{}, metadata, { nested: { list: [1, "x", null, true] } }]);
    }
    if (field.fieldKind === "message" && !field.oneof && isWrapperDesc(field.message)) return pick([0, -0, 1.25, -3]);
    return create(field.message, fill(field.message, random, depth + 1) as never);
  }
  const scalar = field.scalar;
  switch (scalar) {
    case ScalarType.DOUBLE:
      return pick([0, -0, 1.5, -1e300, Number.NaN, Number.POSITIVE_INFINITY, random() * 1e6]);
    case ScalarType.FLOAT:
      return Math.fround(pick([0, -0, 1.5, -2.25, random() * 1000]));
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return pick([0, 1, -1, 2 ** 31 - 1, -(2 ** 31), Math.floor(random() * 1e6)]);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return pick([0, 1, 127, 128, 2 ** 32 - 1, Math.floor(random() * 1e9)]);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return pick([0n, 1n, -1n, 2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n]);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return pick([0n, 1n, 300n, 2n ** 53n + 1n, 2n ** 64n - 1n, BigInt(Math.floor(random() * 1e9))]);
    case ScalarType.BOOL:
      return pick([true, false]);
    case ScalarType.STRING:
      return pick(["", "a", "ünïcödé", "x".repeat(200), "ß".repeat(70), "\u{1f600}"]);
    case ScalarType.BYTES:
      return pick([new Uint8Array(0), new Uint8Array([0, 255, 7]), new Uint8Array(300).fill(9)]);
  }
}
