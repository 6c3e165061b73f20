// The closed loop both job-queue anchors share (pg-boss-anchor.ts, graphile-worker-anchor.ts):
// exactly `inFlight` jobs in the engine at any time, each slot submitting its next job once the
// engine's handler has run the one before. Warm-up: until every slot has seen its first job done
// (at 64 in flight the engines' pools take about 2 s to open their connections here, and the first
// jobs wait that long), then 1 s more; then the measure window. The script prints `measuring` when
// the window opens and `window closed` when it closes (run-anchor.ts reads PostgreSQL's counters on
// each), lets the jobs in flight finish, and prints its result as one JSON line.
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { percentileOfSorted } from "../lib/stats.js";

/** The engines with an anchor script: `<engine>-anchor.ts` in this folder. */
export type AnchorEngine = "pg-boss" | "graphile-worker";

/** What an anchor script prints as its last line. */
export interface AnchorResult {
  readonly engine: AnchorEngine;
  readonly inFlight: number;
  /** Jobs whose completion the producer learnt within the window, per second of it. */
  readonly jobsPerSecond: number;
  /** Submit → completion known, over the jobs submitted within the window (all are waited for). */
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Jobs completed within the window. */
  readonly jobs: number;
  /** The window's length in seconds, as timed. */
  readonly measuredS: number;
}

/** The line an anchor script prints when its measure window opens. */
export const measuringLine = "measuring";

/** The line an anchor script prints when its measure window closes. */
export const windowClosedLine = "window closed";

/** How long a script runs its loop, once every slot has had a job done, before the window opens. */
export const warmUpS = 1;

/** An anchor script's command line: `<connection string> <in flight> <measure s>`. */
export interface AnchorArgs {
  readonly connectionString: string;
  readonly inFlight: number;
  readonly measureS: number;
}

/** Reads an anchor script's {@link AnchorArgs}; throws a usage message when they are not valid. */
export function parseAnchorArgs(argv: readonly string[] = process.argv.slice(2)): AnchorArgs {
  const { positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true });
  const [connectionString, inFlight, measureS] = positionals;
  const args = { connectionString: connectionString ?? "", inFlight: Number(inFlight), measureS: Number(measureS) };
  if (!args.connectionString || !Number.isInteger(args.inFlight) || args.inFlight < 1 || !(args.measureS > 0)) {
    throw new Error(`usage: <postgres connection string> <in flight ≥ 1> <measure seconds>; got ${argv.join(" ")}`);
  }
  return args;
}

/** Jobs submitted and not yet reported done by the engine's handler, by job number. */
export class Completions {
  readonly #waiting = new Map<number, () => void>();

  /** A promise that resolves when {@link done} is called with `job`. Call before submitting it. */
  expect(job: number): Promise<void> {
    return new Promise((resolve) => this.#waiting.set(job, resolve));
  }

  /** Called from the engine's handler: job `job` has run. */
  done(job: number): void {
    const resolve = this.#waiting.get(job);
    if (resolve === undefined) throw new Error(`job ${job} ran but was not expected (ran twice?)`);
    this.#waiting.delete(job);
    resolve();
  }
}

/**
 * Runs the closed loop: `submit(job)` hands job number `job` to the engine (its payload carries the
 * number), whose handler calls `completions.done(job)`. Prints {@link measuringLine} and
 * {@link windowClosedLine} at the window's edges, then, once every job in flight has finished, the
 * result as one JSON line; resolves with the result.
 */
export async function runClosedLoop(
  engine: AnchorEngine,
  { inFlight, measureS }: AnchorArgs,
  submit: (job: number) => Promise<unknown>,
  completions: Completions,
): Promise<AnchorResult> {
  let nextJob = 0;
  let windowStart = Number.POSITIVE_INFINITY;
  let windowEnd = Number.POSITIVE_INFINITY;
  let stopping = false;
  let completed = 0;
  const latencies: number[] = [];
  let firstDone = 0;
  let allSlotsWarm: () => void = () => {};
  const slotsWarm = new Promise<void>((resolve) => (allSlotsWarm = resolve));
  const slot = async (): Promise<void> => {
    for (let first = true; !stopping; first = false) {
      const job = nextJob++;
      const done = completions.expect(job);
      const began = performance.now();
      await submit(job);
      await done;
      const ended = performance.now();
      if (ended >= windowStart && ended < windowEnd) completed += 1;
      if (began >= windowStart) latencies.push(ended - began);
      if (first && ++firstDone === inFlight) allSlotsWarm();
    }
  };
  const slots = Promise.all(Array.from({ length: inFlight }, slot));
  // A slot that fails (the engine refused a job) ends the run at once rather than after the window.
  const failed = slots.then(() => {
    if (!stopping) throw new Error("the loop ended before the window closed");
  });
  await Promise.race([slotsWarm, failed]);
  await Promise.race([sleep(warmUpS * 1000), failed]);
  windowStart = performance.now();
  process.stdout.write(`${measuringLine}\n`);
  await Promise.race([sleep(measureS * 1000), failed]);
  windowEnd = performance.now();
  stopping = true;
  const measuredS = (windowEnd - windowStart) / 1000;
  process.stdout.write(`${windowClosedLine}\n`);
  // The jobs still in flight were submitted within the window: their latencies count.
  await slots;
  const sorted = latencies.sort((a, b) => a - b);
  const round = (value: number): number => Math.round(value * 1000) / 1000;
  const result: AnchorResult = {
    engine,
    inFlight,
    jobsPerSecond: round(completed / measuredS),
    p50Ms: round(percentileOfSorted(sorted, 50)),
    p99Ms: round(percentileOfSorted(sorted, 99)),
    jobs: completed,
    measuredS: round(measuredS),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  return result;
}
