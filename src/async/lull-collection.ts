import { constants, performance, PerformanceObserver, type EventLoopUtilization } from "node:perf_hooks";
import v8 from "node:v8";

/** V8's `gc` function as `--expose-gc` exposes it, with the options used here. */
type ExposedGc = (options: { type: "major"; execution: "async" }) => unknown;

export interface LullCollectionOptions {
  /** How often the event loop's utilization is read, in milliseconds (default 250). */
  readonly intervalMs?: number;
  /** Utilization under which an interval counts as a lull, 0 to 1 (default 0.5). */
  readonly lullUtilization?: number;
  /** Utilization of an interval that counts as a burst, 0 to 1 (default 0.9). */
  readonly burstUtilization?: number;
  /** Intervals a burst counts for: a lull within as many after one follows it (default 40, 10 s at 250 ms). */
  readonly burstMemoryIntervals?: number;
  /** Intervals in a row under the lull's utilization before it counts as a lull (default 1). */
  readonly minLullIntervals?: number;
  /** Intervals after asking before it may ask again (default 40, 10 s at 250 ms). */
  readonly minSpacingIntervals?: number;
  /** Growth of the old generation since the last full collection that makes one worth starting, in bytes (default 32 MiB). */
  readonly minGrowthBytes?: number;
  /**
   * Runs in flight at once (queued or running; not awaiting approval) that a busy interval must
   * have seen to count as a burst (default 1,000): see {@link LullPolicy}.
   */
  readonly minBurstRuns?: number;
}

/** What the policy reads at each interval. */
export interface LullReading {
  /** The event loop's utilization over the interval, 0 to 1. */
  readonly utilization: number;
  /** Bytes used in V8's old generation now (its old and large-object spaces). */
  readonly oldSpaceBytes: number;
  /** The most runs in flight at once (queued or running) during the interval. */
  readonly runsInFlight: number;
}

/**
 * When to start a full collection: in a lull that follows a burst (enough intervals in a row under
 * the lull's utilization, within a few seconds of one over the burst's), once the old generation
 * grew by enough since the last full collection, not again until that one has ended, and not more
 * often than every few seconds. A burst is an interval of saturation that also saw many runs in
 * flight at once: those are what a burst of admissions leaves in the old generation (each run's
 * state lives through several young collections while it waits or runs). Saturation with few runs in
 * flight (a steady stream of unary calls, however fast) is no burst: V8 collects it well enough on
 * its own, and a collection forced at each of its pauses cost more than it saved (the bench's steady
 * cases, which load and idle by turns, paid up to a fifth more CPU per call). A load that stays
 * moderate has no burst either. The spacing bounds what bursts that come every second pay. Pure, so
 * that tests drive it with readings of their choosing.
 */
export class LullPolicy {
  readonly #lullUtilization: number;
  readonly #burstUtilization: number;
  readonly #burstMemoryIntervals: number;
  readonly #minLullIntervals: number;
  readonly #minSpacingIntervals: number;
  readonly #minGrowthBytes: number;
  readonly #minBurstRuns: number;
  #baselineBytes: number;
  /** Intervals since the last one over the burst's utilization (Infinity: none since the last collection). */
  #sinceBurst = Number.POSITIVE_INFINITY;
  /** Intervals in a row under the lull's utilization, this one included. */
  #lullIntervals = 0;
  /** Intervals since it last asked. */
  #sinceAsked = Number.POSITIVE_INFINITY;
  /** A collection was asked for and has not been seen to end. */
  #asked = false;

  constructor(oldSpaceBytes: number, options: LullCollectionOptions = {}) {
    this.#lullUtilization = options.lullUtilization ?? 0.5;
    this.#burstUtilization = options.burstUtilization ?? 0.9;
    this.#burstMemoryIntervals = options.burstMemoryIntervals ?? 40;
    this.#minLullIntervals = options.minLullIntervals ?? 1;
    this.#minSpacingIntervals = options.minSpacingIntervals ?? 40;
    this.#minGrowthBytes = options.minGrowthBytes ?? 32 * 1024 * 1024;
    this.#minBurstRuns = options.minBurstRuns ?? 1000;
    this.#baselineBytes = oldSpaceBytes;
  }

  /** A full collection ended (whoever started it): growth counts from what it left. */
  collected(oldSpaceBytes: number): void {
    this.#baselineBytes = oldSpaceBytes;
    this.#asked = false;
  }

  /** Takes one interval's reading; whether to start a full collection now. */
  shouldCollect(reading: LullReading): boolean {
    const burst = reading.utilization >= this.#burstUtilization && reading.runsInFlight >= this.#minBurstRuns;
    this.#sinceBurst = burst ? 0 : this.#sinceBurst + 1;
    this.#lullIntervals = reading.utilization < this.#lullUtilization ? this.#lullIntervals + 1 : 0;
    this.#sinceAsked += 1;
    if (this.#asked || this.#lullIntervals < this.#minLullIntervals) return false;
    if (this.#sinceAsked <= this.#minSpacingIntervals) return false;
    if (this.#sinceBurst > this.#burstMemoryIntervals) return false;
    if (reading.oldSpaceBytes - this.#baselineBytes < this.#minGrowthBytes) return false;
    this.#asked = true;
    this.#sinceAsked = 0;
    this.#sinceBurst = Number.POSITIVE_INFINITY;
    return true;
  }
}

/** A running {@link collectInLulls}. */
export interface LullCollection {
  /** Whether it runs: V8's `gc` is exposed (`--expose-gc`). */
  readonly active: boolean;
  /** Full collections it asked for so far. */
  readonly started: number;
  stop(): void;
}

/** Bytes used in the old generation: V8's old space and its large-object space (big arrays and strings). */
function oldSpaceBytes(): number {
  let bytes = 0;
  for (const space of v8.getHeapSpaceStatistics())
    if (space.space_name === "old_space" || space.space_name === "large_object_space") bytes += space.space_used_size;
  return bytes;
}

/**
 * Starts V8's full collection (mark-compact) in the lull after a burst of load, once enough may
 * have built up in the old generation, rather than leaving V8 to start it when the old generation
 * reaches its limit, which under the next burst is in the middle of it. A full collection's final
 * pause grows with what it must finalize since the previous one, notably an external string for
 * every HTTP/2 request header value Node has read (see docs/design-notes.md, "A second burst's
 * longest stall"); a burst of 10,000 runs adds about 45 MB to the old generation, and the next
 * burst met a pause of 66–72 ms. The collection V8 runs when asked is a forced, stop-the-world one
 * ("async" only means it runs from a task, after this turn): 30–110 ms for 100–150 MB of heap, in
 * the lull. `takePeakRunsInFlight` gives the most runs in flight at once since it was last called
 * (the execution manager counts them), for what counts as a burst (see {@link LullPolicy}). The
 * server starts this unless `--no-lull-collection`. Needs `--expose-gc`, which the server ships with
 * (server-node-flags.ts); without it this does nothing. The timer never keeps the process alive.
 */
export function collectInLulls(
  takePeakRunsInFlight: () => number,
  options: LullCollectionOptions = {},
): LullCollection {
  const gc = (globalThis as { gc?: ExposedGc }).gc;
  if (typeof gc !== "function") return { active: false, started: 0, stop: () => undefined };
  const policy = new LullPolicy(oldSpaceBytes(), options);
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)
        policy.collected(oldSpaceBytes());
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  let started = 0;
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilization = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const reading = { utilization, oldSpaceBytes: oldSpaceBytes(), runsInFlight: takePeakRunsInFlight() };
    if (!policy.shouldCollect(reading)) return;
    started += 1;
    try {
      gc({ type: "major", execution: "async" });
    } catch {
      // A `gc` replaced by a tool module that throws: V8 still collects on its own.
      clearInterval(timer);
      observer.disconnect();
    }
  }, options.intervalMs ?? 250).unref();
  return {
    active: true,
    get started() {
      return started;
    },
    stop() {
      clearInterval(timer);
      observer.disconnect();
    },
  };
}
