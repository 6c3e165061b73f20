import { create, equals, fromBinary, fromJson, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { RunEventSchema } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ExecuteToolResponseSchema, RunToolResponseSchema } from "../../gen/toolruntime/v1/runner_pb.js";
import { ToolResultSchema, ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { encodeStruct, toBinaryFast } from "../../src/server/fast-binary.js";

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

  it("refuses a value that is not JSON", () => {
    expect(() => encodeStruct({ bad: 1n } as unknown as JsonObject)).to.throw(TypeError, /bigint/);
  });
});
