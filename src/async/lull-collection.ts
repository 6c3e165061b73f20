import { constants, performance, PerformanceObserver, type EventLoopUtilization } from "node:perf_hooks";
import v8 from "node:v8";

/** V8's `gc` function as `--expose-gc` exposes it, with the options used here. */
type ExposedGc = (options: { type: "major"; execution: "async" }) => void;

export interface LullCollectionOptions {
  /** How often the event loop's utilization is read, in milliseconds (default 250). */
  readonly intervalMs?: number;
  /** Utilization under which an interval counts as a lull, 0 to 1 (default 0.5). */
  readonly lullUtilization?: number;
  /** Growth of the old space since the last full collection that makes one worth starting, in bytes (default 32 MiB). */
  readonly minGrowthBytes?: number;
}

/** What the policy reads at each interval. */
export interface LullReading {
  /** The event loop's utilization over the interval, 0 to 1. */
  readonly utilization: number;
  /** Bytes used in V8's old space now. */
  readonly oldSpaceBytes: number;
}

/**
 * When to start a full collection: in a lull (an interval whose event-loop utilization was under
 * the threshold), once the old space grew by enough since the last full collection, and not again
 * until that one has happened. Pure, so that tests drive it with readings of their choosing.
 */
export class LullPolicy {
  readonly #lullUtilization: number;
  readonly #minGrowthBytes: number;
  #baselineBytes: number;
  /** A collection was asked for and has not been seen to end. */
  #asked = false;

  constructor(oldSpaceBytes: number, options: LullCollectionOptions = {}) {
    this.#lullUtilization = options.lullUtilization ?? 0.5;
    this.#minGrowthBytes = options.minGrowthBytes ?? 32 * 1024 * 1024;
    this.#baselineBytes = oldSpaceBytes;
  }

  /** A full collection ended (whoever started it): growth counts from what it left. */
  collected(oldSpaceBytes: number): void {
    this.#baselineBytes = oldSpaceBytes;
    this.#asked = false;
  }

  /** Whether to start a full collection now. */
  shouldCollect(reading: LullReading): boolean {
    if (this.#asked || reading.utilization >= this.#lullUtilization) return false;
    if (reading.oldSpaceBytes - this.#baselineBytes < this.#minGrowthBytes) return false;
    this.#asked = true;
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

function oldSpaceBytes(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === "old_space")?.space_used_size ?? 0;
}

/**
 * Starts V8's full collection (mark-compact) in lulls of the load, once enough may have built up in
 * the old space, rather than leaving V8 to start it when the old space reaches its limit, which
 * under a burst of calls is in the middle of the burst. A full collection's final pause grows with
 * what it must finalize since the previous one, notably an external string for every HTTP/2 request
 * header value Node has read (see docs/design-notes.md, "A second burst's longest stall"); a burst
 * of 10,000 runs adds about 45 MB to the old space, and the next burst met a pause of 66–72 ms. The
 * collection is asynchronous (V8 marks incrementally and on its helper threads, then finishes in a
 * pause of its own, in the lull). Needs `--expose-gc`, which the server ships with
 * (server-node-flags.ts); without it this does nothing. The timer never keeps the process alive.
 */
export function collectInLulls(options: LullCollectionOptions = {}): LullCollection {
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
    if (!policy.shouldCollect({ utilization, oldSpaceBytes: oldSpaceBytes() })) return;
    started += 1;
    gc({ type: "major", execution: "async" });
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
