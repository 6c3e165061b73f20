import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { RunEventSchema, ToolActivatedSchema } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ErrorType } from "../../src/errors/tool-runtime-error.js";
import type { EventBody } from "../../src/executions/execution-record.js";
import { runEvent } from "../../src/executions/run-event.js";
import { succeeded } from "../../src/runner/run-outcome.js";
import { ToolResultSchema } from "../../gen/toolruntime/v1/tool_pb.js";

const bodies: EventBody[] = [
  { case: "discovered", value: { spec: { name: "a.b", description: "d", inputSchema: { type: "object" } } } },
  { case: "activated", value: { toolName: "a.b" } },
  { case: "executionStarted", value: { timeoutMs: 1000, attempt: 2 } },
  { case: "progress", value: { fraction: 0.5, message: "half" } },
  { case: "log", value: { level: "info", message: "line" } },
  { case: "output", value: { chunk: { kind: { case: "stringValue", value: "x" } } } },
  { case: "heartbeat", value: {} },
  {
    case: "completed",
    value: { result: { success: false, error: { errorType: ErrorType.Timeout, details: "late" } } },
  },
  { case: "deactivated", value: { wasActive: false } },
  { case: undefined },
];

describe("messages built as literals", () => {
  it("builds the message create() builds, for every kind of body, field for field and byte for byte", () => {
    for (const [index, body] of bodies.entries()) {
      const timeMs = 1_764_790_000_000 + index * 377;
      const built = runEvent(index + 1, timeMs, "run-1", body);
      const expected = create(RunEventSchema, {
        sequence: BigInt(index + 1),
        time: timestampFromMs(timeMs),
        executionId: "run-1",
        event: body,
      });
      expect(built, String(body.case)).to.deep.equal(expected);
      expect(Object.keys(built)).to.deep.equal(Object.keys(expected));
      expect(toBinary(RunEventSchema, built)).to.deep.equal(toBinary(RunEventSchema, expected));
    }
  });

  it("succeeded() builds the ToolResult create() builds", () => {
    const built = succeeded({ answer: 42 }, 1.5, { tool_name: "a.b" });
    const expected = create(ToolResultSchema, {
      success: true,
      output: { answer: 42 },
      durationMs: 1.5,
      metadata: { tool_name: "a.b" },
    });
    expect(built).to.deep.equal(expected);
    expect(Object.keys(built)).to.deep.equal(Object.keys(expected));
  });

  it("keeps a body that is a message already rather than copying it", () => {
    const value = create(ToolActivatedSchema, { toolName: "a.b" });
    const built = runEvent(1, 0, "run-1", { case: "activated", value });
    expect(built.event.value).to.equal(value);
  });
});
