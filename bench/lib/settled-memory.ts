import { setTimeout as sleep } from "node:timers/promises";
import { readProcessMemory } from "./proc-memory.js";

/** A process's RSS once it has given back what a burst of work left behind. */
export interface SettledMemory {
  readonly rssBytes: number;
  /** How long after the work ended the RSS was read. */
  readonly waitedMs: number;
  /** Whether the RSS fell by a tenth or more while waiting (else it is the last reading). */
  readonly fell: boolean;
}

/** Waiting is over when the RSS fell by this share, or after this long. */
const fallShare = 0.1;
/** Longer than V8's memory reducer takes to start in an idle server after a burst (about 90 s here). */
const longestWaitMs = 150_000;
const pollMs = 2_000;

/**
 * Waits, reading the RSS of `pid` every 2 s, until it falls by a tenth below what it was when the
 * work ended (and two readings agree within 2%), or for at most 150 s. After a burst of calls, V8's
 * heap holds the burst's garbage and the room it grew for it, until its memory reducer collects
 * and shrinks the heap once the process is idle: here that came about 90 s after the last call.
 * The RSS a process holding its data settles at is its cost; the one right after is the burst's.
 */
export async function waitForSettledMemory(pid: number): Promise<SettledMemory> {
  const started = performance.now();
  const first = readProcessMemory(pid)?.rssBytes ?? Number.NaN;
  let previous = first;
  for (;;) {
    await sleep(pollMs);
    const waitedMs = performance.now() - started;
    const rssBytes = readProcessMemory(pid)?.rssBytes ?? Number.NaN;
    if (!Number.isFinite(rssBytes)) throw new Error(`process ${pid} is gone`);
    const fell = rssBytes <= first * (1 - fallShare);
    if (fell && Math.abs(rssBytes - previous) <= previous * 0.02) return { rssBytes, waitedMs, fell };
    if (waitedMs >= longestWaitMs) return { rssBytes, waitedMs, fell };
    previous = rssBytes;
  }
}
