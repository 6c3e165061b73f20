import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ToolResultSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { ExecutionRecord } from "../../src/executions/execution-record.js";
import { ExecutionStore } from "../../src/executions/execution-store.js";

/** A record of a run of demo.tool, live until finished. */
function liveRecord(id: string): ExecutionRecord {
  return new ExecutionRecord({
    id,
    ordinal: 0,
    toolName: "demo.tool",
    runnerName: "default",
    caller: "anonymous",
    inputs: {},
    writes: false,
    idempotencyKey: "",
    eventLimits: { maxEvents: 100, maxBytes: 1024 * 1024 },
  });
}

function finish(store: ExecutionStore, record: ExecutionRecord): void {
  record.finish(create(ToolResultSchema, { success: true }));
  store.finished(record);
}

describe("ExecutionStore", () => {
  it("gives the most runs live at once since it was last asked, at least those live now", () => {
    const store = new ExecutionStore();
    expect(store.takePeakLive(), "none yet").to.equal(0);
    const records = ["a", "b", "c"].map(liveRecord);
    for (const record of records) store.add(record);
    for (const record of records) finish(store, record);
    expect(store.takePeakLive(), "three, though none is live").to.equal(3);
    expect(store.takePeakLive(), "a new span").to.equal(0);
    const held = liveRecord("d");
    store.add(held);
    finish(store, liveRecord("e"));
    expect(store.takePeakLive(), "the live one").to.equal(1);
    expect(store.takePeakLive(), "still live").to.equal(1);
    finish(store, held);
    expect(store.takePeakLive(), "live until the span began").to.equal(1);
    expect(store.takePeakLive()).to.equal(0);
  });
});
