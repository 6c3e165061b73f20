import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ExecutionOptionsSchema, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import type { ExecutionManagerOptions } from "../../src/executions/execution-manager.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { Cancellation } from "../../src/async/cancellation.js";
import type { ExecutionRecord } from "../../src/executions/execution-record.js";
import { isToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import { createToolRuntime, type ToolRuntime } from "../../src/runtime.js";
import { defineTool, type DefinedTool } from "../../src/tools/define-tool.js";
import { plainLifecycle } from "../support/lifecycle.js";

/** A promise with its resolve function, to decide exactly when a handler returns. */
function deferred<T>() {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((settle) => (resolve = settle));
  return { promise, resolve };
}

/** A runtime with `tools` and execution options, and a way to start runs in it. */
function harness(tools: DefinedTool[], options: ExecutionManagerOptions = {}) {
  const runtime: ToolRuntime = createToolRuntime({ tools, executions: options });
  const start = (
    toolName: string,
    inputs: JsonObject = {},
    runOptions: MessageInitShape<typeof ExecutionOptionsSchema> = {},
  ) =>
    runtime.executions.start({
      runner: runtime.runners.createPrivate(),
      requireActive: false,
      toolName,
      inputs,
      timeoutMs: 0,
      options: create(ExecutionOptionsSchema, runOptions),
      caller: "tester",
    }).record;
  return { runtime, start, close: () => runtime.close() };
}

const completedEvents = (record: ExecutionRecord) => record.events.filter((event) => event.event.case === "completed");

/** Waits until the record has an event of `kind`, without sleeping. */
async function until(record: ExecutionRecord, kind: string): Promise<void> {
  while (!record.events.some((event) => event.event.case === kind)) {
    if (!record.isLive) throw new Error(`run ended without a ${kind} event`);
    await record.changed();
  }
}

describe("ExecutionManager races", () => {
  it("decides cancel against completion once: one outcome, one COMPLETED, a consistent state", async () => {
    const gate = { current: deferred<JsonObject>() };
    const { start, runtime, close } = harness([defineTool({ name: "race.gate", handler: () => gate.current.promise })]);
    const outcomes = new Set<ExecutionState>();
    for (let round = 0; round < 50; round++) {
      gate.current = deferred<JsonObject>();
      const record = start("race.gate");
      await until(record, "executionStarted");
      // Completion and cancellation arrive in the same turn; which wins depends on the order.
      if (round % 2 === 0) {
        gate.current.resolve({ round });
        runtime.executions.cancel(record.id, "race");
      } else {
        runtime.executions.cancel(record.id, "race");
        gate.current.resolve({ round });
      }
      const result = await record.done;
      outcomes.add(record.state);
      expect(completedEvents(record)).to.have.length(1);
      expect(record.state).to.equal(result.success ? ExecutionState.SUCCEEDED : ExecutionState.CANCELLED);
      if (record.state === ExecutionState.SUCCEEDED) {
        expect(() => runtime.executions.cancel(record.id, "late")).to.throw("already finished");
      } else {
        expect(runtime.executions.cancel(record.id, "again").state).to.equal(ExecutionState.CANCELLED);
      }
    }
    expect(outcomes.size).to.be.at.least(1);
    close();
  });

  it("lets exactly one of an approval and the approval timeout decide", async () => {
    const { start, runtime, close } = harness([
      defineTool({ name: "race.approve", capabilities: { humanApprovalRequired: true }, handler: () => ({}) }),
    ]);
    for (let round = 0; round < 20; round++) {
      const record = start("race.approve", {}, { approvalTimeoutMs: 1 });
      await until(record, "awaitingApproval");
      let approvedByCall = false;
      await new Promise<void>((resolve) =>
        setTimeout(() => {
          try {
            runtime.executions.decide(record.id, true, record.inputsDigest, "alice", "");
            approvedByCall = true;
          } catch (error) {
            expect(isToolRuntimeError(error) && error.code).to.equal("FAILED_PRECONDITION");
          }
          resolve();
        }, 1),
      );
      const result = await record.done;
      expect(result.success).to.equal(approvedByCall);
      expect(result.error?.errorType ?? "").to.equal(approvedByCall ? "" : "ApprovalTimeoutError");
      expect(record.decision?.decidedBy).to.equal(approvedByCall ? "alice" : "(timeout)");
    }
    close();
  });

  it("accepts one of two approvals and refuses the second", async () => {
    const { start, runtime, close } = harness([
      defineTool({ name: "race.twice", capabilities: { humanApprovalRequired: true }, handler: () => ({ ran: true }) }),
    ]);
    const record = start("race.twice");
    await until(record, "awaitingApproval");
    runtime.executions.decide(record.id, true, record.inputsDigest, "alice", "");
    expect(() => runtime.executions.decide(record.id, false, record.inputsDigest, "bob", "")).to.throw(
      "already decided",
    );
    const result = await record.done;
    expect(result.success).to.equal(true);
    expect(record.decision?.decidedBy).to.equal("alice");
    close();
  });

  it("gives a watcher that reattaches while the run finishes every remaining event exactly once", async () => {
    const gate = deferred<JsonObject>();
    const { start, runtime, close } = harness([defineTool({ name: "race.reattach", handler: () => gate.promise })]);
    const record = start("race.reattach");
    await until(record, "executionStarted");
    const seen = record.lastSequence;
    const watcher = runtime.executions.watch(record, seen, new AbortController().signal);
    gate.resolve({ done: true });
    const rest = [];
    for await (const event of watcher) rest.push(event);
    expect(rest.map((event) => Number(event.sequence))).to.deep.equal(
      Array.from({ length: record.lastSequence - seen }, (_, index) => seen + index + 1),
    );
    expect(rest.at(-1)?.event.case).to.equal("completed");
    close();
  });

  it("hands a watcher every event recorded since its last step in one batch, in order, COMPLETED last", async () => {
    const gate = deferred<JsonObject>();
    const { start, runtime, close } = harness([defineTool({ name: "race.batches", handler: () => gate.promise })]);
    const record = start("race.batches");
    await until(record, "executionStarted");
    const recorded = record.lastSequence;
    const watcher = runtime.executions.watchBatches(record, 0, new Cancellation());
    const first = await watcher.next();
    // What was recorded before the watcher came arrives at once, as one batch.
    expect(first.done).to.equal(false);
    expect((first.value as RunEvent[]).map((event) => Number(event.sequence))).to.deep.equal(
      Array.from({ length: recorded }, (_, index) => index + 1),
    );
    gate.resolve({ done: true });
    const later: RunEvent[][] = [];
    for (let next = await watcher.next(); !next.done; next = await watcher.next()) later.push([...next.value]);
    expect(later.every((batch) => batch.length > 0)).to.equal(true);
    expect(later.flat().map((event) => Number(event.sequence))).to.deep.equal(
      Array.from({ length: record.lastSequence - recorded }, (_, index) => recorded + index + 1),
    );
    expect(later.flat().at(-1)?.event.case).to.equal("completed");
    close();
  });

  it("ends a watcher quietly when its stop is cancelled while it waits", async () => {
    const gate = deferred<JsonObject>();
    const { start, runtime, close } = harness([defineTool({ name: "race.stop", handler: () => gate.promise })]);
    const record = start("race.stop");
    await until(record, "executionStarted");
    const stop = new Cancellation();
    const watcher = runtime.executions.watchBatches(record, record.lastSequence, stop);
    const waiting = watcher.next();
    stop.abort(undefined);
    expect((await waiting).done).to.equal(true);
    gate.resolve({});
    await record.done;
    close();
  });

  it("stops a run cancelled while it waits to retry, without another attempt", async () => {
    let attempts = 0;
    const { start, runtime, close } = harness([
      defineTool({
        name: "race.retry",
        capabilities: { idempotent: true },
        handler: () => {
          attempts += 1;
          throw new Error("always");
        },
      }),
    ]);
    const record = start(
      "race.retry",
      {},
      { retryPolicy: { maxAttempts: 5, initialBackoffMs: 60_000, maxBackoffMs: 60_000 } },
    );
    await until(record, "retryScheduled");
    runtime.executions.cancel(record.id, "enough");
    const result = await record.done;
    expect(result.error?.errorType).to.equal("CancelledError");
    expect(result.error?.details).to.contain("while waiting to retry");
    expect(attempts).to.equal(1);
    expect(record.attempts).to.equal(1);
    close();
  });

  it("says in the result's metadata how many events a run over its event limits dropped", async () => {
    const { start, close } = harness(
      [
        defineTool({
          name: "race.chatty",
          handler: (_inputs, context) => {
            for (let index = 0; index < 30; index++) context.log("info", `line ${index}`);
            return {};
          },
        }),
        defineTool({ name: "race.quiet", handler: () => ({}) }),
      ],
      { eventLimits: { maxEvents: 10, maxBytes: 1 << 20 } },
    );
    const chatty = start("race.chatty");
    const result = await chatty.done;
    const logs = chatty.events.filter((event) => event.event.case === "log");
    // The stages are kept beyond the limit; the log lines past it are dropped and counted.
    expect(logs.length + (result.metadata?.["dropped_events"] as number)).to.equal(30);
    expect(result.metadata?.["dropped_events"]).to.be.above(0);
    expect(chatty.events.at(-1)?.event.case).to.equal("completed");
    const quiet = await start("race.quiet").done;
    expect(quiet.metadata).to.not.have.property("dropped_events");
    close();
  });

  it("does not count an attempt whose checkpoint failed: attempts are those started", async () => {
    let checkpoints = 0;
    const { start, close } = harness([
      defineTool({
        name: "race.checkpoint_fails",
        capabilities: { idempotent: true, checkpointable: true, writes: true },
        hooks: {
          checkpoint: () => {
            checkpoints += 1;
            if (checkpoints === 2) throw new Error("no room for a second backup");
            return checkpoints;
          },
          rollback: () => undefined,
        },
        handler: () => {
          throw new Error("fails");
        },
      }),
    ]);
    const record = start("race.checkpoint_fails", {}, { retryPolicy: { maxAttempts: 3, initialBackoffMs: 1 } });
    const result = await record.done;
    expect(result.error?.details).to.contain("so attempt 2 did not start: Error: no room for a second backup");
    expect(record.attempts).to.equal(1);
    expect(result.metadata?.["attempts"]).to.equal(1);
    expect(record.events.filter((event) => event.event.case === "executionStarted")).to.have.length(1);
    close();
  });

  it("cancels every live run on shutdown: running, queued and awaiting approval", async () => {
    const { start, runtime, close } = harness(
      [
        defineTool({
          name: "race.hold",
          handler: (_inputs, context) =>
            new Promise((_resolve, reject) =>
              context.signal.addEventListener("abort", () => reject(new Error("stop"))),
            ),
        }),
        defineTool({ name: "race.ask", capabilities: { humanApprovalRequired: true }, handler: () => ({}) }),
      ],
      { maxConcurrent: 1 },
    );
    const running = start("race.hold");
    const queued = start("race.hold");
    const asking = start("race.ask");
    await until(running, "executionStarted");
    await until(queued, "queued");
    await until(asking, "awaitingApproval");
    runtime.executions.cancelAll("the server is shutting down");
    const results = await Promise.all([running.done, queued.done, asking.done]);
    for (const result of results) {
      expect(result.error?.errorType).to.equal("CancelledError");
      expect(result.error?.details).to.contain("the server is shutting down");
    }
    expect(runtime.executions.admission.running).to.equal(0);
    expect(runtime.executions.admission.queued).to.equal(0);
    close();
  });
});

describe("ExecutionManager: runs of handlers that return a value", () => {
  const startWith = (runtime: ToolRuntime, toolName: string, awaitsResult: boolean, retries = 0) =>
    runtime.executions.start({
      runner: runtime.runners.createPrivate(),
      requireActive: false,
      awaitsResult,
      toolName,
      inputs: {},
      timeoutMs: 0,
      options: create(ExecutionOptionsSchema, retries > 0 ? { retryPolicy: { maxAttempts: retries + 1 } } : {}),
      caller: "tester",
    }).record;

  it("end inside start for a caller that waits for the result, with every event and fact", () => {
    const { runtime, close } = harness([defineTool({ name: "sync.answer", handler: () => ({ answer: 42 }) })]);
    const record = startWith(runtime, "sync.answer", true);
    expect(record.isLive).to.equal(false);
    expect(record.answeredWith).to.equal(record.result);
    expect(record.result?.output).to.deep.equal({ answer: 42 });
    expect(record.result?.metadata?.["attempts"]).to.equal(1);
    expect(record.events.map((event) => event.event.case)).to.deep.equal([...plainLifecycle]);
    close();
  });

  it("give their events once without keeping them built: a later read builds the same events", () => {
    const { runtime, close } = harness([defineTool({ name: "sync.answer", handler: () => ({ answer: 42 }) })]);
    const record = startWith(runtime, "sync.answer", true);
    const once = record.eventsOnce();
    expect(once.map((event) => event.event.case).at(-1)).to.equal("completed");
    // Not kept: the record builds a new list (of equal events) when read again.
    const again = record.eventsOnce();
    expect(again).to.not.equal(once);
    expect(again).to.deep.equal(once);
    const kept = record.events;
    expect(kept).to.deep.equal(once);
    // Once built and kept, every read gives the kept list.
    expect(record.eventsOnce()).to.equal(kept);
    close();
  });

  it("end after start returns for a caller that does not wait (StartExecution answers the run as it started)", async () => {
    const { runtime, close } = harness([defineTool({ name: "sync.answer", handler: () => ({ answer: 42 }) })]);
    const record = startWith(runtime, "sync.answer", false);
    expect(record.isLive).to.equal(true);
    expect(record.toProto().state).to.equal(ExecutionState.RUNNING);
    const result = await record.done;
    expect(result.output).to.deep.equal({ answer: 42 });
    expect(record.state).to.equal(ExecutionState.SUCCEEDED);
    close();
  });

  it("go on to a retry, through the attempt loop, when a first attempt that failed at once allows one", async () => {
    let calls = 0;
    const flaky = defineTool({
      name: "sync.flaky",
      capabilities: { idempotent: true },
      handler: () => {
        calls += 1;
        if (calls === 1) throw new Error("first attempt fails");
        return { calls };
      },
    });
    const { runtime, close } = harness([flaky]);
    const record = startWith(runtime, "sync.flaky", true, 1);
    const result = await record.done;
    expect(result.success).to.equal(true);
    expect(result.output).to.deep.equal({ calls: 2 });
    expect(result.metadata?.["attempts"]).to.equal(2);
    const cases = record.events.map((event) => event.event.case);
    expect(cases.filter((kind) => kind === "executionStarted")).to.have.length(2);
    expect(cases).to.include("retryScheduled");
    expect(cases.at(-1)).to.equal("completed");
    close();
  });
});

describe("ExecutionManager under load", () => {
  it("completes 2,000 concurrent runs under a limit of 50, none lost or duplicated, the queue within bound", async () => {
    let running = 0;
    let maxRunning = 0;
    const { start, runtime, close } = harness(
      [
        defineTool({
          name: "load.slow",
          handler: async (inputs) => {
            running += 1;
            maxRunning = Math.max(maxRunning, running);
            await new Promise((resolve) => setTimeout(resolve, 2));
            running -= 1;
            return { n: inputs["n"] ?? null };
          },
        }),
      ],
      { maxConcurrent: 50, maxQueued: 2000 },
    );
    const records = Array.from({ length: 2000 }, (_, n) => start("load.slow", { n }));
    const results = await Promise.all(records.map((record) => record.done));
    expect(new Set(records.map((record) => record.id)).size).to.equal(2000);
    expect(results.every((result) => result.success)).to.equal(true);
    expect(results.map((result) => (result.output as { n: number }).n)).to.deep.equal(
      Array.from({ length: 2000 }, (_, n) => n),
    );
    expect(records.every((record) => completedEvents(record).length === 1)).to.equal(true);
    expect(maxRunning).to.be.at.most(50);
    expect(runtime.executions.admission.maxQueuedSeen).to.be.within(1, 2000);
    expect(runtime.executions.admission.running).to.equal(0);
    close();
  });

  /** Runs `batches` batches of `size` quick runs, each batch ended before the next; their ids in order. */
  async function quickRunIds(
    start: (name: string) => ExecutionRecord,
    batches: number,
    size: number,
  ): Promise<string[]> {
    const ids: string[] = [];
    for (let batch = 0; batch < batches; batch++) {
      const records = Array.from({ length: size }, () => start("load.quick"));
      await Promise.all(records.map((record) => record.done));
      ids.push(...records.map((record) => record.id));
    }
    return ids;
  }
  const quickTool = (): DefinedTool[] => [defineTool({ name: "load.quick", handler: () => ({ ok: true }) })];

  it("keeps finished records within the count and byte bounds, and reports evicted ones as NOT_FOUND", async () => {
    const { start, runtime, close } = harness(quickTool(), { maxRetained: 200, maxRetainedBytes: 100_000 });
    const ids = await quickRunIds(start, 20, 100);
    const store = runtime.executions.store;
    expect(store.finishedCount).to.be.at.most(200);
    expect(store.finishedBytes).to.be.at.most(100_000);
    expect(store.evicted).to.equal(2000 - store.finishedCount);
    expect(() => runtime.executions.get(ids[0] as string)).to.throw("unknown or no longer retained");
    expect(runtime.executions.get(ids.at(-1) as string).state).to.equal(ExecutionState.SUCCEEDED);
    close();
  });

  it("finds every retained record and no evicted one, and lists exactly the retained ones, newest first", async () => {
    // 100 retained: the store's index holds them in chunks of 64, so lookups and listings cross chunks.
    const { start, runtime, close } = harness(quickTool(), { maxRetained: 100 });
    const ids = await quickRunIds(start, 10, 97);
    const store = runtime.executions.store;
    expect(store.finishedCount).to.equal(100);
    expect(store.size).to.equal(100);
    const retained = ids.slice(-100);
    for (const id of ids.slice(0, -100)) expect(store.get(id), id).to.equal(undefined);
    for (const id of retained) expect(store.get(id)?.id).to.equal(id);
    const page = store.list({ toolName: "", state: ExecutionState.UNSPECIFIED, pageSize: 100, pageToken: "" });
    expect(page.records.map((record) => record.id)).to.deep.equal([...retained].reverse());
    expect(page.nextPageToken).to.equal("");
    close();
  });
});

describe("ExecutionManager: what a run's metadata and the lull's collections read", () => {
  it("gives a managed run's metadata its attempt, and output_bytes when it succeeded", async () => {
    const { start, close } = harness([
      defineTool({ name: "facts.ok", handler: () => ({ answer: 42 }) }),
      defineTool({
        name: "facts.fails",
        handler: () => {
          throw new Error("no");
        },
      }),
    ]);
    const succeeded = await start("facts.ok").done;
    expect(succeeded.metadata?.["attempt"]).to.equal(1);
    expect(succeeded.metadata?.["attempts"]).to.equal(1);
    expect(succeeded.metadata?.["output_bytes"]).to.equal(JSON.stringify({ answer: 42 }).length);
    const failed = await start("facts.fails").done;
    expect(failed.success).to.equal(false);
    expect(failed.metadata?.["attempt"]).to.equal(1);
    expect(failed.metadata ?? {}).to.not.have.property("output_bytes");
    close();
  });

  it("keeps an embedder's reservation without an attempt as it was, and the measured output size over extra facts", async () => {
    const { runtime, close } = harness([defineTool({ name: "facts.direct", handler: () => ({ answer: 42 }) })]);
    const runner = runtime.runners.createPrivate();
    runner.activate("facts.direct");
    const { result } = await runner.execute(
      "facts.direct",
      {},
      { reserveRunFacts: true, extraMetadata: { output_bytes: 5, note: "extra" } },
    );
    expect(result.metadata ?? {}).to.not.have.property("attempt");
    expect(result.metadata?.["attempts"]).to.equal(0);
    expect(result.metadata?.["note"]).to.equal("extra");
    expect(result.metadata?.["output_bytes"]).to.equal(JSON.stringify({ answer: 42 }).length);
    close();
  });

  it("counts runs queued or running as in flight, not runs awaiting approval", async () => {
    const gate = deferred<JsonObject>();
    const { start, runtime, close } = harness([
      defineTool({ name: "flight.approve", capabilities: { humanApprovalRequired: true }, handler: () => ({}) }),
      defineTool({ name: "flight.gate", handler: () => gate.promise }),
    ]);
    const awaiting = [start("flight.approve"), start("flight.approve"), start("flight.approve")];
    for (const record of awaiting) await until(record, "awaitingApproval");
    const running = [start("flight.gate"), start("flight.gate")];
    for (const record of running) await until(record, "executionStarted");
    expect(runtime.executions.takePeakRunsInFlight(), "five live, three awaiting approval").to.equal(2);
    gate.resolve({});
    for (const record of running) await record.done;
    expect(runtime.executions.takePeakRunsInFlight(), "the two were live in this span").to.equal(2);
    expect(runtime.executions.takePeakRunsInFlight(), "none now").to.equal(0);
    for (const record of awaiting) runtime.executions.decide(record.id, false, record.inputsDigest, "tester", "");
    for (const record of awaiting) await record.done;
    close();
  });
});
