import { setMaxListeners } from "node:events";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { ToolRegistry } from "../../src/registry/tool-registry.js";
import { ToolRunner } from "../../src/runner/tool-runner.js";
import { sleepTool } from "../../src/tools/sleep-tool.js";
import { reachableHeapBytes, requireGc } from "./measure-heap.js";

/** One kind of concurrent slow run, measured twice (see {@link measureBatch}). */
export interface BatchResult {
  /** Reachable heap growth while every run is in flight, per run, in bytes. */
  readonly heapBytesPerRun: number;
  /** Event-loop delay p99 and max over the timed batch (launch included), in milliseconds. */
  readonly eventLoopDelayP99Ms: number;
  readonly eventLoopDelayMaxMs: number;
  /** From the first launch to the last completion of the timed batch, in milliseconds. */
  readonly wallMs: number;
  /** Runs of the timed batch that did not succeed: must be 0. */
  readonly errors: number;
}

/** What the concurrency case measured (printed as JSON, the last line of stdout). */
export interface ConcurrencyResult {
  readonly runs: number;
  readonly sleepMs: number;
  readonly toolruntime: BatchResult;
  /** Baseline: as many bare cancellable sleeps (an AbortController, a listener and a timer each). */
  readonly bare: BatchResult;
}

/** Starts one run that sleeps `ms`; resolves to whether it succeeded. Aborting `signal` cancels it. */
type StartRun = (ms: number, signal: AbortSignal) => Promise<boolean>;

function launchAll(runs: number, ms: number, start: StartRun, signal: AbortSignal): Promise<boolean[]> {
  setMaxListeners(runs + 10, signal); // every run listens to the one signal
  const pending: Promise<boolean>[] = [];
  for (let i = 0; i < runs; i++) pending.push(start(ms, signal).catch(() => false));
  return Promise.all(pending);
}

/**
 * Measures `runs` concurrent runs twice: a timed batch with the event-loop delay monitor on, run to
 * completion (every run must succeed); then a batch weighed by a full collection once all are in
 * flight, then cancelled (a forced collection would distort the delay figures, hence two batches).
 */
async function measureBatch(runs: number, sleepMs: number, start: StartRun): Promise<BatchResult> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const began = performance.now();
  const results = await launchAll(runs, sleepMs, start, new AbortController().signal);
  const wallMs = performance.now() - began;
  delay.disable();

  const heapBefore = reachableHeapBytes();
  const cancel = new AbortController();
  const weighed = launchAll(runs, sleepMs, start, cancel.signal);
  const heapInFlight = reachableHeapBytes();
  cancel.abort();
  await weighed;
  return {
    heapBytesPerRun: (heapInFlight - heapBefore) / runs,
    eventLoopDelayP99Ms: delay.percentile(99) / 1e6,
    eventLoopDelayMaxMs: delay.max / 1e6,
    wallMs,
    errors: results.filter((ok) => !ok).length,
  };
}

const bareSleep: StartRun = (ms, signal) =>
  new Promise((resolve) => {
    const controller = new AbortController();
    const onAbort = (): void => controller.abort();
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
    controller.signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(false);
    });
  });

/**
 * `runs` concurrent runs of builtin.sleep through a ToolRunner of the library, against as many bare
 * cancellable sleeps: heap per run in flight, event-loop delay, wall time and errors.
 */
export async function measureConcurrency(runs: number, sleepMs: number): Promise<ConcurrencyResult> {
  requireGc();
  const registry = new ToolRegistry("bench");
  registry.register({ spec: sleepTool.spec, handler: sleepTool.handler });
  const runner = new ToolRunner("bench", registry);
  runner.activate(sleepTool.spec.name);
  const runTool: StartRun = async (ms, signal) =>
    (await runner.execute(sleepTool.spec.name, { ms }, { signal })).result.success;
  // Warm both paths up so that the batches measure steady code, not the JIT.
  const warm = new AbortController().signal;
  await launchAll(500, 1, runTool, warm);
  await launchAll(500, 1, bareSleep, warm);
  const bare = await measureBatch(runs, sleepMs, bareSleep);
  const toolruntime = await measureBatch(runs, sleepMs, runTool);
  return { runs, sleepMs, toolruntime, bare };
}
