// Execution control at scale, in one process (run with --expose-gc):
//  1. admission: 10,000 concurrent runs of a slow tool under a limit of 50 — none lost or
//     duplicated, the running count never above 50, the queue never above its bound; wall time
//     against the ideal (runs / limit × run time) as the baseline.
//  2. retention: heap after 100,000 finished runs against heap after 10,000 (the default retention
//     bound), both in the same process — flat memory means a ratio near 1.
// Prints a Markdown table and exits non-zero if an invariant breaks.
import { performance } from "node:perf_hooks";
import { createToolRuntime } from "../../src/runtime.js";
import { defineTool } from "../../src/tools/define-tool.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");

function heapAfterGc(): number {
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed;
}

async function admissionAtScale(runs: number, limit: number, runMs: number) {
  let running = 0;
  let maxRunning = 0;
  const runtime = createToolRuntime({
    tools: [
      defineTool({
        name: "bench.slow",
        handler: async () => {
          running += 1;
          maxRunning = Math.max(maxRunning, running);
          await new Promise((resolve) => setTimeout(resolve, runMs));
          running -= 1;
          return {};
        },
      }),
    ],
    executions: { maxConcurrent: limit, maxQueued: runs },
  });
  const started = performance.now();
  const records = Array.from(
    { length: runs },
    () =>
      runtime.executions.start({
        runner: runtime.runners.createPrivate(),
        requireActive: false,
        toolName: "bench.slow",
        inputs: {},
        timeoutMs: 0,
        caller: "bench",
      }).record,
  );
  const results = await Promise.all(records.map((record) => record.done));
  const wallMs = performance.now() - started;
  const ids = new Set(records.map((record) => record.id));
  const completed = records.filter(
    (record) => record.events.filter((event) => event.event.case === "completed").length === 1,
  );
  const failures = results.filter((result) => !result.success).length;
  const queueBound = runtime.executions.admission.maxQueued;
  const maxQueued = runtime.executions.admission.maxQueuedSeen;
  runtime.close();
  const ok =
    ids.size === runs && completed.length === runs && failures === 0 && maxRunning <= limit && maxQueued <= queueBound;
  return { wallMs, idealMs: (runs / limit) * runMs, maxRunning, maxQueued, queueBound, failures, ok };
}

async function retention(total: number, checkpoint: number) {
  const runtime = createToolRuntime({ tools: [defineTool({ name: "bench.noop", handler: () => ({ ok: true }) })] });
  const batch = 1000;
  let heapAtCheckpoint = 0;
  for (let done = 0; done < total; done += batch) {
    const records = Array.from(
      { length: batch },
      () =>
        runtime.executions.start({
          runner: runtime.runners.createPrivate(),
          requireActive: false,
          toolName: "bench.noop",
          inputs: { n: done },
          timeoutMs: 0,
          caller: "bench",
        }).record,
    );
    await Promise.all(records.map((record) => record.done));
    if (done + batch === checkpoint) heapAtCheckpoint = heapAfterGc();
  }
  const heapAtEnd = heapAfterGc();
  const store = runtime.executions.store;
  const result = {
    heapAtCheckpoint,
    heapAtEnd,
    retained: store.size,
    retainedBytes: store.finishedBytes,
    evicted: store.evicted,
    bound: store.maxRetained,
    ok: store.size <= store.maxRetained && store.finishedBytes <= store.maxRetainedBytes,
  };
  runtime.close();
  return result;
}

const full = process.argv.includes("--full");
const admission = await admissionAtScale(full ? 10_000 : 4_000, 50, 10);
const kept = await retention(full ? 100_000 : 30_000, 10_000);
const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);
console.log(`| case | ours | baseline | ratio | invariant |
| --- | --- | --- | --- | --- |
| ${full ? "10,000" : "4,000"} concurrent runs, limit 50: wall time ÷ ideal | ${admission.wallMs.toFixed(0)} ms | ${admission.idealMs.toFixed(0)} ms | ${(admission.wallMs / admission.idealMs).toFixed(2)}× | max running ${admission.maxRunning} ≤ 50, max queued ${admission.maxQueued} ≤ ${admission.queueBound}, ${admission.failures} failed: ${admission.ok ? "held" : "BROKEN"} |
| heap after ${full ? "100,000" : "30,000"} finished runs ÷ after 10,000 | ${mib(kept.heapAtEnd)} MiB | ${mib(kept.heapAtCheckpoint)} MiB | ${(kept.heapAtEnd / kept.heapAtCheckpoint).toFixed(2)}× | ${kept.retained} records kept ≤ ${kept.bound}, ${mib(kept.retainedBytes)} MiB of events, ${kept.evicted} evicted: ${kept.ok ? "held" : "BROKEN"} |`);
if (!admission.ok || !kept.ok) process.exit(1);
