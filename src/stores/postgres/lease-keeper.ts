import { Worker } from "node:worker_threads";
import type { ReplicaLease } from "../run-store.js";
import type { LeaseKeeperData, LeaseKeeperMessage } from "./lease-keeper-thread.js";
import type { Database } from "./open-database.js";

/** Options of {@link startLeaseKeeper}. */
export interface LeaseKeeperOptions {
  readonly replicaId: string;
  /** How long the lease lasts without renewal, in milliseconds. */
  readonly leaseMs: number;
  /** Interval of the store checks behind readiness, in milliseconds (renewals are at least this often). */
  readonly availabilityIntervalMs: number;
  /**
   * Longest this process's event loop may be blocked before the lease is left to expire and its
   * runs are taken over, in milliseconds. Default six leases.
   */
  readonly maxStallMs?: number;
}

/** A lease kept by a thread, and what it tells; see {@link startLeaseKeeper}. */
export interface LeaseKeeper extends ReplicaLease {
  /** Resolves once the thread renewed the lease a first time (or failed to start). */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

const threadScript = new URL("./lease-keeper-thread.js", import.meta.url);
/** How often the main thread shows the keeper that its event loop turns, in milliseconds. */
const beatIntervalMs = 100;

/**
 * Starts the thread that keeps this replica's lease (see lease-keeper-thread.ts): it renews the
 * lease at least three times per lease on its own connection, and is the readiness check (so a
 * pool saturated by load never reads as a lost store). The main thread beats every 100 ms; a beat
 * that comes late by more than half a lease is a stall, told to `onStall` listeners.
 */
export function startLeaseKeeper(database: Database, options: LeaseKeeperOptions): LeaseKeeper {
  const { leaseMs } = options;
  const signals = database.signals;
  signals.mainBeatAt = Date.now();
  signals.leaseValidUntil = Date.now() + leaseMs;
  const data: LeaseKeeperData = {
    url: database.url,
    replicaId: options.replicaId,
    leaseMs,
    intervalMs: Math.max(50, Math.min(Math.floor(leaseMs / 3), options.availabilityIntervalMs)),
    // A slow answer is a loaded store, not a lost one: readiness turns NOT_SERVING only when the
    // store refuses, drops or leaves a check unanswered for 2 s.
    timeoutMs: 2000,
    maxStallMs: options.maxStallMs ?? leaseMs * 6,
    signals: signals.buffer,
  };
  const worker = new Worker(threadScript, { workerData: data, execArgv: [] });
  worker.unref();
  const availabilityListeners: ((available: boolean) => void)[] = [];
  const stallListeners: ((stalledMs: number) => void)[] = [];
  let available = true;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  worker.on("message", (message: LeaseKeeperMessage) => {
    if (message.kind === "ready") markReady();
    if (message.kind !== "available" || message.available === available) return;
    available = message.available;
    for (const listener of availabilityListeners) listener(available);
  });
  // The thread never ends by itself; if it fails, the lease lapses and readiness says so.
  worker.on("error", () => {
    markReady();
    available = false;
    for (const listener of availabilityListeners) listener(false);
  });

  let lastBeat = Date.now();
  const beat = setInterval(() => {
    const now = Date.now();
    const lateMs = now - lastBeat - beatIntervalMs;
    lastBeat = now;
    signals.mainBeatAt = now;
    if (lateMs > leaseMs / 2) for (const listener of stallListeners) listener(lateMs);
  }, beatIntervalMs);
  beat.unref();

  return {
    ready,
    leaseMs,
    validUntil: () => signals.leaseValidUntil,
    losses: () => signals.leaseLosses,
    available: () => available,
    onAvailabilityChange: (listener) => void availabilityListeners.push(listener),
    onStall: (listener) => void stallListeners.push(listener),
    async close() {
      clearInterval(beat);
      await worker.terminate();
    },
  };
}
