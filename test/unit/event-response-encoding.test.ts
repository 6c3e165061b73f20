import { create, equals, fromBinary, type DescMessage } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { WatchExecutionResponseSchema } from "../../gen/toolruntime/v1/execution_pb.js";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ExecuteToolResponseSchema, RunToolResponseSchema } from "../../gen/toolruntime/v1/runner_pb.js";
import { createToolRuntime } from "../../src/runtime.js";
import { eventResponseEncoder, type ResponseEncoder } from "../../src/server/event-response-encoding.js";
import { toBinaryFast } from "../../src/codec/fast-binary.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";
import { defineTool } from "../../src/tools/define-tool.js";

/**
 * The bytes the gRPC port wrote before: protobuf-es's, with Struct fields written by toBinaryFast
 * (as the last fields of their message). They decode to the same message as protobuf-es's own.
 */
function expected(schema: DescMessage, response: object): Buffer {
  const message = create(schema, response as never);
  const bytes = Buffer.from(toBinaryFast(schema, message));
  expect(equals(schema, fromBinary(schema, bytes), message)).to.equal(true);
  return bytes;
}

function encoderOf(schema: DescMessage): { encode: ResponseEncoder; fallbacks: () => number } {
  let fallbacks = 0;
  const encode = eventResponseEncoder(schema, (response) => {
    fallbacks += 1;
    return Buffer.from(toBinaryFast(schema, create(schema, response as never)));
  });
  if (!encode) throw new Error(`no encoder for ${schema.typeName}`);
  return { encode, fallbacks: () => fallbacks };
}

/** The events of real runs: the no-op's lifecycle, and a tool that reports progress, logs and output. */
async function eventsOfRuns(): Promise<RunEvent[]> {
  const chatty = defineTool({
    name: "test.chatty",
    handler: (_inputs, context) => {
      context.reportProgress({ fraction: 0.5, message: "half way: ünïcödé" });
      context.log("info", "a line");
      context.emitOutput({ part: [1, "two", { three: null }] });
      return { answer: 42 };
    },
  });
  const runtime = createToolRuntime({ tools: [...builtinTools, chatty] });
  try {
    const events: RunEvent[] = [];
    for (const toolName of ["builtin.noop", "test.chatty"]) {
      const { record } = runtime.executions.start({
        runner: runtime.runners.createPrivate(),
        requireActive: false,
        toolName,
        inputs: {},
        timeoutMs: 0,
        caller: "tester",
      });
      await record.done;
      events.push(...record.events);
    }
    return events;
  } finally {
    runtime.close();
  }
}

describe("eventResponseEncoder()", () => {
  it("is made only for responses that hold one RunEvent", () => {
    const fallback: ResponseEncoder = () => Buffer.alloc(0);
    expect(eventResponseEncoder(RunToolResponseSchema, fallback)).to.be.a("function");
    expect(eventResponseEncoder(WatchExecutionResponseSchema, fallback)).to.be.a("function");
    expect(eventResponseEncoder(ExecuteToolResponseSchema, fallback)).to.equal(undefined);
    expect(eventResponseEncoder(RunEventSchema, fallback)).to.equal(undefined);
  });

  it("writes the events of real runs byte for byte as before (protobuf-es with toBinaryFast), without falling back", async () => {
    const events = await eventsOfRuns();
    expect(events.map((event) => event.event.case)).to.include.members([
      "discovered",
      "activated",
      "executionStarted",
      "progress",
      "log",
      "output",
      "executionFinished",
      "deactivated",
      "completed",
    ]);
    for (const schema of [RunToolResponseSchema, WatchExecutionResponseSchema]) {
      const { encode, fallbacks } = encoderOf(schema);
      for (const event of events) {
        expect(encode({ event }).equals(expected(schema, { event })), `${event.event.case}`).to.equal(true);
      }
      expect(fallbacks()).to.equal(0);
    }
  });

  it("writes edge values as before: zeros left out, long varints, UTF-8, an empty body, no event", () => {
    const { encode, fallbacks } = encoderOf(RunToolResponseSchema);
    const cases: RunEvent[] = [
      create(RunEventSchema, {}),
      create(RunEventSchema, { sequence: 0n, time: timestampFromMs(0), executionId: "" }),
      create(RunEventSchema, {
        sequence: 2n ** 40n,
        time: { seconds: 2n ** 35n, nanos: 999_999_999 },
        executionId: "ключ-ü-🙂",
        event: { case: "deactivated", value: {} },
      }),
      create(RunEventSchema, {
        sequence: 127n,
        time: { seconds: 128n, nanos: 0 },
        event: { case: "heartbeat", value: {} },
      }),
      create(RunEventSchema, { sequence: 1n, event: { case: "log", value: { message: "x".repeat(300) } } }),
    ];
    for (const event of cases) {
      expect(encode({ event }).equals(expected(RunToolResponseSchema, { event }))).to.equal(true);
    }
    expect(encode({}).length).to.equal(0);
    expect(fallbacks()).to.equal(0);
  });

  it("leaves to protobuf-es what it does not write itself: unknown fields, negative times, messages", () => {
    const { encode, fallbacks } = encoderOf(RunToolResponseSchema);
    const withUnknown = create(RunEventSchema, { sequence: 3n });
    withUnknown.$unknown = [{ no: 99, wireType: 0, data: new Uint8Array([1]) }];
    const beforeEpoch = create(RunEventSchema, { sequence: 4n, time: { seconds: -5n, nanos: 0 } });
    const asMessage = create(RunToolResponseSchema, { event: create(RunEventSchema, { sequence: 5n }) });
    for (const response of [{ event: withUnknown }, { event: beforeEpoch }, asMessage]) {
      expect(encode(response).equals(expected(RunToolResponseSchema, response))).to.equal(true);
    }
    expect(fallbacks()).to.equal(3);
  });
});
