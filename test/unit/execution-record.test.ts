import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { ExecutionSchema, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ToolResultSchema, ToolSpecSchema, type ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { ExecutionRecord } from "../../src/executions/execution-record.js";
import { plainLifecycle } from "../support/lifecycle.js";

const spec = create(ToolSpecSchema, { name: "unit.record", description: "a tool" });

function newRecord(id = "run-1"): ExecutionRecord {
  return new ExecutionRecord({
    id,
    ordinal: 1,
    toolName: spec.name,
    runnerName: "default",
    caller: "someone",
    inputs: { a: 1 },
    writes: false,
    idempotencyKey: "",
    eventLimits: { maxEvents: 100, maxBytes: 1 << 20 },
  });
}

function resultOf(success: boolean): ToolResult {
  return create(ToolResultSchema, { success, output: { done: success }, durationMs: 0.5, metadata: { x: 1 } });
}

/** Runs a record through a whole lifecycle, as the execution manager appends it. */
function runToEnd(record: ExecutionRecord, result: ToolResult, readAfter?: number): void {
  const bodies = [
    { case: "discovered", value: { spec } },
    { case: "activated", value: { toolName: spec.name } },
    { case: "executionStarted", value: { timeoutMs: 1000, attempt: 1 } },
    { case: "executionFinished", value: { success: result.success, durationMs: 0.5, attempt: 1 } },
    { case: "deactivated", value: { wasActive: true } },
  ] as const;
  record.setState(ExecutionState.QUEUED);
  bodies.forEach((body, index) => {
    if (index === 2) record.setState(ExecutionState.RUNNING);
    record.append(body);
    // A watcher reading part of the log builds the events so far.
    if (readAfter === index) expect(record.events).to.have.length(index + 1);
  });
  record.stopClock();
  const metadata = {};
  record.addTimings(metadata);
  result.metadata = { ...result.metadata, ...metadata };
  record.append({ case: "completed", value: { result } });
  record.finish(result);
}

const json = (events: readonly RunEvent[]) => events.map((event) => toJson(RunEventSchema, event));

describe("ExecutionRecord", () => {
  for (const readAfter of [undefined, 1]) {
    it(`tells the same events, times and record once compacted${readAfter === undefined ? "" : ", some events built before"}`, () => {
      const record = newRecord();
      const result = resultOf(true);
      runToEnd(record, result, readAfter);
      const before = json(record.eventsOnce());
      const protoBefore = toJson(ExecutionSchema, record.toProto());
      record.compact();
      const events = record.events;
      expect(json(events)).to.deep.equal(before);
      expect(toJson(ExecutionSchema, record.toProto())).to.deep.equal(protoBefore);
      expect(events.map((event) => Number(event.sequence))).to.deep.equal([1, 2, 3, 4, 5, 6]);
      expect(events.map((event) => event.event.case)).to.deep.equal([...plainLifecycle]);
      const completed = events[5]?.event;
      expect(completed?.case === "completed" && completed.value.result).to.equal(result);
      const discovered = events[0]?.event;
      expect(discovered?.case === "discovered" && discovered.value.spec).to.equal(spec);
    });
  }

  it("keeps times in order and timings that match the result's metadata", () => {
    const record = newRecord();
    const result = resultOf(true);
    runToEnd(record, result);
    record.compact();
    const proto = record.toProto();
    const created = timestampMs(proto.createdAt!);
    const finished = timestampMs(proto.finishedAt!);
    expect(created).to.equal(record.createdAt.getTime());
    expect(finished).to.equal(record.finishedAtMs);
    expect(finished).to.be.at.least(created);
    for (const event of record.events) {
      expect(timestampMs(event.time!)).to.be.within(created, finished);
    }
    expect(result.metadata).to.include({
      awaiting_approval_ms: proto.awaitingApprovalMs,
      queued_ms: proto.queuedMs,
      running_ms: proto.runningMs,
    });
    for (const ms of [proto.queuedMs, proto.runningMs]) {
      expect(ms).to.be.at.least(0);
      expect(Math.round(ms * 1000) / 1000).to.equal(ms);
    }
  });

  it("tells the same events once compacted for a run retried after a failed first attempt", () => {
    const record = newRecord();
    const result = resultOf(true);
    const error = { toolName: spec.name, errorType: "ExecutionError", details: "first attempt failed" };
    record.append({ case: "discovered", value: { spec } });
    record.append({ case: "executionStarted", value: { timeoutMs: 250, attempt: 1 } });
    record.append({ case: "executionFinished", value: { success: false, durationMs: 0.5, attempt: 1, error } });
    record.append({ case: "retryScheduled", value: { nextAttempt: 2, delayMs: 10, error } });
    record.append({ case: "executionStarted", value: { timeoutMs: 250, attempt: 2 } });
    record.append({ case: "executionFinished", value: { success: true, durationMs: 0.5, attempt: 2 } });
    record.append({ case: "completed", value: { result } });
    record.finish(result);
    const before = json(record.eventsOnce());
    record.compact();
    expect(json(record.events)).to.deep.equal(before);
    expect(
      before.map((event) =>
        Object.keys(event as object).find((key) => key !== "sequence" && key !== "time" && key !== "executionId"),
      ),
    ).to.deep.equal([
      "discovered",
      "executionStarted",
      "executionFinished",
      "retryScheduled",
      "executionStarted",
      "executionFinished",
      "completed",
    ]);
  });

  it("keeps a COMPLETED event whose result is not the record's own", () => {
    const record = newRecord();
    const other = resultOf(false);
    const own = resultOf(false);
    record.append({ case: "completed", value: { result: other } });
    record.finish(own);
    record.compact();
    const completed = record.events[0]?.event;
    expect(completed?.case === "completed" && completed.value.result).to.equal(other);
  });

  it("lets the cancellation of a finished run go, and keeps a cancelled run's reason", () => {
    const finished = newRecord("a");
    const cancellation = finished.cancellation;
    runToEnd(finished, resultOf(true));
    finished.compact();
    expect(finished.cancellation).to.not.equal(cancellation);
    expect(finished.cancellation.aborted).to.equal(false);

    const cancelled = newRecord("b");
    const reason = new Error("stop");
    cancelled.cancellation.abort(reason);
    runToEnd(cancelled, resultOf(false));
    cancelled.compact();
    expect(cancelled.cancellation.aborted).to.equal(true);
    expect(cancelled.cancellation.reason).to.equal(reason);
  });

  it("does not compact a live run", () => {
    const record = newRecord();
    const cancellation = record.cancellation;
    record.append({ case: "discovered", value: { spec } });
    record.compact();
    expect(record.cancellation).to.equal(cancellation);
    record.append({ case: "executionStarted", value: { timeoutMs: 10, attempt: 1 } });
    expect(record.events.map((event) => event.event.case)).to.deep.equal(["discovered", "executionStarted"]);
  });

  it("makes the message create() would make of the same fields, live, finished and decided", () => {
    const live = newRecord("run-live");
    live.setState(ExecutionState.RUNNING);
    const finished = newRecord("run-finished");
    runToEnd(finished, resultOf(true));
    const decided = newRecord("run-decided");
    decided.decision = {
      approved: false,
      decidedBy: "reviewer",
      decidedAt: new Date(1_700_000_000_123),
      comment: "no",
    };
    decided.setState(ExecutionState.FAILED);
    for (const record of [live, finished, decided]) {
      const proto = record.toProto();
      const made = create(ExecutionSchema, {
        ...proto,
        ...(proto.approval ? { approval: { ...proto.approval } } : {}),
      });
      expect(proto, record.id).to.deep.equal(made);
      expect(toBinary(ExecutionSchema, proto), record.id).to.deep.equal(toBinary(ExecutionSchema, made));
    }
    expect(decided.toProto().approval?.decidedBy).to.equal("reviewer");
    expect(finished.toProto().result?.success).to.equal(true);
  });
});
