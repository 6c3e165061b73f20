import { create, equals, fromBinary, fromJson, toBinary, toJson, type JsonObject } from "@bufbuild/protobuf";
import { StructSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { RunEventSchema } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ExecuteToolResponseSchema, RunToolResponseSchema } from "../../gen/toolruntime/v1/runner_pb.js";
import { ListToolsResponseSchema } from "../../gen/toolruntime/v1/registry_pb.js";
import { ToolResultSchema, ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { markUnchanging, preEncodedMessage, toBinaryFast, toFramedBinaryFast } from "../../src/codec/fast-binary.js";
import { framesOf, messagesOfFrames } from "../../src/server/grpc-frame-writer.js";
import { encodeStruct } from "../../src/codec/struct-binary.js";
import { apiMessageSchemas, fillMessage, seededRandom } from "./random-messages.js";

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

  it("frames several messages in one buffer as gRPC frames of what toBinaryFast writes, up to untilBytes", () => {
    const events = [1n, 2n, 3n].map((sequence) =>
      create(RunToolResponseSchema, {
        event: create(RunEventSchema, {
          sequence,
          executionId: "e-3",
          event: { case: "completed", value: { result: create(ToolResultSchema, { success: true, metadata }) } },
        }),
      }),
    );
    const each = events.map((event) => Buffer.from(toBinaryFast(RunToolResponseSchema, event)));
    const total = each.reduce((sum, bytes) => sum + bytes.length, 0);
    const frames = toFramedBinaryFast(RunToolResponseSchema, events);
    expect(frames.equals(framesOf(each, total))).to.equal(true);
    const sequences = messagesOfFrames(frames).map((bytes) => fromBinary(RunToolResponseSchema, bytes).event?.sequence);
    expect(sequences).to.deep.equal([1n, 2n, 3n]);
    // It stops after the message that brings the bytes to untilBytes: here the second.
    const two = toFramedBinaryFast(RunToolResponseSchema, events, each[0]!.length + 1);
    expect(two.equals(framesOf(each.slice(0, 2), each[0]!.length + each[1]!.length))).to.equal(true);
    expect(toFramedBinaryFast(RunToolResponseSchema, events, each[0]!.length)).to.have.length(each[0]!.length + 5);
    expect(toFramedBinaryFast(RunToolResponseSchema, [])).to.have.length(0);
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
    const schemas = apiMessageSchemas;
    expect(schemas.length).to.be.greaterThan(50);
    const random = seededRandom(11);
    let compared = 0;
    for (const schema of [...schemas, StructSchema, TimestampSchema]) {
      for (let round = 0; round < 25; round++) {
        const message = fillMessage(schema, random);
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

  it("writes lengths of every size, and messages larger than its scratch space, as protobuf-es does", () => {
    // Nested contents around each varint boundary of their length (127/128, 16383/16384…), and
    // a whole message of several MiB: the one-byte length reserved for each gets moved up.
    const lengths = [0, 1, 126, 127, 128, 129, 16_382, 16_383, 16_384, 16_385, 300_000, 2_097_152];
    const nested: JsonObject = {};
    for (const length of lengths) {
      nested[`s${length}`] = "a".repeat(length);
      nested[`o${length}`] = { inner: { text: "é".repeat(Math.floor(length / 2)), list: ["x".repeat(length)] } };
    }
    const expected = toBinary(StructSchema, fromJson(StructSchema, nested));
    expect(expected.byteLength).to.be.greaterThan(4 * 1024 * 1024);
    expect(Buffer.from(encodeStruct(nested)).equals(Buffer.from(expected))).to.equal(true);
    const specs = Array.from({ length: 300 }, (_, i) =>
      create(ToolSpecSchema, {
        name: `bulk.tool_${i}`,
        description: "d".repeat(i * 7),
        inputSchema: { type: "object", properties: { ["p".repeat(i)]: { description: "q".repeat(i * 3) } } },
      }),
    );
    const page = create(ListToolsResponseSchema, { tools: specs, nextPageToken: "t" });
    const pageBytes = Buffer.from(toBinary(ListToolsResponseSchema, page));
    expect(Buffer.from(toBinaryFast(ListToolsResponseSchema, page)).equals(pageBytes)).to.equal(true);
    // The scratch space left behind by a large message does not leak into the next one.
    const small = create(ExecuteToolResponseSchema, { executionId: "e-4" });
    const smallBytes = Buffer.from(toBinary(ExecuteToolResponseSchema, small));
    expect(Buffer.from(toBinaryFast(ExecuteToolResponseSchema, small)).equals(smallBytes)).to.equal(true);
  });

  it("leaves every type to protobuf-es, with the same bytes, where Node forbids code made from strings", () => {
    const module = fileURLToPath(new URL("../../src/codec/fast-binary.js", import.meta.url));
    const gen = fileURLToPath(new URL("../../gen/toolruntime/v1/runner_pb.js", import.meta.url));
    const script = `
      const { toBinaryFast } = await import(${JSON.stringify(module)});
      const { ExecuteToolResponseSchema } = await import(${JSON.stringify(gen)});
      const metadata = ${JSON.stringify(metadata)};
      const bytes = toBinaryFast(ExecuteToolResponseSchema, { executionId: "e-1", result: { success: true, metadata } });
      process.stdout.write(Buffer.from(bytes).toString("base64"));`;
    const encoded = execFileSync(
      process.execPath,
      ["--disallow-code-generation-from-strings", "--input-type=module", "--eval", script],
      { encoding: "utf8" },
    );
    const expected = toBinary(
      ExecuteToolResponseSchema,
      create(ExecuteToolResponseSchema, { executionId: "e-1", result: { success: true, metadata } }),
    );
    expect(encoded).to.equal(Buffer.from(expected).toString("base64"));
  });

  it("refuses a value that is not JSON", () => {
    expect(() => encodeStruct({ bad: 1n } as unknown as JsonObject)).to.throw(TypeError, /bigint/);
  });

  it("keeps the encoding of a message marked unchanging, wherever it is nested, and only of those", () => {
    const specOf = (name: string) =>
      create(ToolSpecSchema, {
        name,
        description: "kept",
        inputSchema: { type: "object", properties: { text: { type: "string", maxLength: 64 } } },
      });
    const eventOf = (spec: ReturnType<typeof specOf>, sequence: bigint) =>
      create(RunEventSchema, { sequence, executionId: "e-1", event: { case: "discovered", value: { spec } } });
    const marked = specOf("kept.marked");
    const plain = specOf("kept.plain");
    markUnchanging(ToolSpecSchema, marked);
    for (const spec of [marked, plain]) {
      // First as an event's spec, then on its own, then in another event: all as protobuf-es writes them.
      for (const [schema, message] of [
        [RunEventSchema, eventOf(spec, 1n)],
        [ToolSpecSchema, spec],
        [RunEventSchema, eventOf(spec, 2n)],
      ] as const) {
        expect(
          Buffer.from(toBinaryFast(schema, message)).equals(Buffer.from(toBinary(schema, message as never))),
        ).to.equal(true);
      }
    }
    // Changing a marked message breaks its owner's promise: the kept bytes show it is not encoded again.
    const keptBytes = toBinary(ToolSpecSchema, marked);
    marked.description = "changed";
    plain.description = "changed";
    expect(Buffer.from(toBinaryFast(ToolSpecSchema, marked)).equals(Buffer.from(keptBytes))).to.equal(true);
    expect(fromBinary(ToolSpecSchema, toBinaryFast(ToolSpecSchema, plain)).description).to.equal("changed");
  });

  it("keeps the Struct encoding of a frozen object of primitives, and writes one holding an object each time", () => {
    const flags = Object.freeze({ read_only: true, writes: false, limit: 3, name: "kept", nothing: null });
    const inner = { count: 1 };
    const holder = Object.freeze({ inner });
    const encoded = (value: JsonObject) => Buffer.from(encodeStruct({ value }));
    const expected = (value: JsonObject) => Buffer.from(toBinary(StructSchema, fromJson(StructSchema, { value })));
    for (let i = 0; i < 2; i++) {
      expect(encoded(flags).equals(expected(flags))).to.equal(true);
      expect(encoded(holder).equals(expected(holder))).to.equal(true);
    }
    // The nested object may change: the frozen object holding it is written anew.
    inner.count = 2;
    expect(encoded(holder).equals(expected(holder))).to.equal(true);
    expect(toJson(StructSchema, fromBinary(StructSchema, encoded(holder)))).to.deep.equal({
      value: { inner: { count: 2 } },
    });
  });
});
