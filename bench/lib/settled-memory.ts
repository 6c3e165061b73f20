import { setTimeout as sleep } from "node:timers/promises";
import { readProcessMemory } from "./proc-memory.js";

/** A process's RSS once it has given back what a burst of work left behind. */
export interface SettledMemory {
  /** The lowest RSS read while waiting. */
  readonly rssBytes: number;
  /** How long after the work ended that lowest RSS was first read. */
  readonly waitedMs: number;
  /** Whether the RSS fell by a tenth or more while waiting. */
  readonly fell: boolean;
}

/** The share the RSS must fall by for {@link SettledMemory.fell}. */
const fallShare = 0.1;
/** Longer than V8's memory reducer takes to start in an idle server after a burst (about 90 s here). */
const waitMs = 150_000;
const pollMs = 2_000;

/**
 * Reads the RSS of `pid` every 2 s for 150 s and gives the lowest reading. After a burst of calls,
 * V8's heap holds the burst's garbage and the room it grew for it, until its memory reducer
 * collects and shrinks the heap once the process is idle: here that came 50–100 s after the last
 * call. Waiting only until the RSS fell by a tenth and steadied was fooled by an earlier, partial
 * fall (645 → 528 MB at 44 s, then 224 MB once the reducer ran, with a 64 MB semi-space), so the
 * whole window is read. The RSS a process holding its data settles at is its cost; the one right
 * after is the burst's.
 */
export async function waitForSettledMemory(pid: number): Promise<SettledMemory> {
  const started = performance.now();
  const first = readProcessMemory(pid)?.rssBytes ?? Number.NaN;
  let lowest = first;
  let lowestAtMs = 0;
  for (;;) {
    await sleep(pollMs);
    const waitedMs = performance.now() - started;
    const rssBytes = readProcessMemory(pid)?.rssBytes ?? Number.NaN;
    if (!Number.isFinite(rssBytes)) throw new Error(`process ${pid} is gone`);
    if (rssBytes < lowest) {
      lowest = rssBytes;
      lowestAtMs = waitedMs;
    }
    if (waitedMs >= waitMs) return { rssBytes: lowest, waitedMs: lowestAtMs, fell: lowest <= first * (1 - fallShare) };
  }
}
