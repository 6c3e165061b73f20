import type { Database } from "./open-database.js";

/** Options of {@link watchAvailability}. */
export interface AvailabilityOptions {
  /** Interval between checks, in milliseconds. Default 1,000. */
  readonly intervalMs?: number;
  /** Longest a check may take before the database counts as unavailable, in milliseconds. Default 2,000. */
  readonly timeoutMs?: number;
}

/** Follows whether the database answers; see {@link watchAvailability}. */
export interface Availability {
  /** Whether the last check succeeded. */
  readonly available: boolean;
  /** Calls `listener` each time availability changes. */
  onChange(listener: (available: boolean) => void): void;
  close(): void;
}

/**
 * Checks the database with `SELECT 1` at an interval, so that readiness and health follow it: a
 * replica whose database went away reports NOT_SERVING (a load balancer then sends calls
 * elsewhere) and reports SERVING again by itself once the database is back.
 */
export function watchAvailability(database: Database, options: AvailabilityOptions = {}): Availability {
  const intervalMs = options.intervalMs ?? 1000;
  const timeoutMs = options.timeoutMs ?? 2000;
  const listeners: ((available: boolean) => void)[] = [];
  let available = true;
  let checking = false;
  let closed = false;

  const set = (next: boolean): void => {
    if (next === available || closed) return;
    available = next;
    for (const listener of listeners) listener(next);
  };
  const check = async (): Promise<void> => {
    if (checking) return;
    checking = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        database.pool.query("SELECT 1"),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error("timed out")), timeoutMs);
        }),
      ]);
      set(true);
    } catch {
      set(false);
    } finally {
      clearTimeout(timer);
      checking = false;
    }
  };
  const interval = setInterval(() => void check(), intervalMs);
  interval.unref();
  return {
    get available() {
      return available;
    },
    onChange(listener) {
      listeners.push(listener);
    },
    close() {
      closed = true;
      clearInterval(interval);
    },
  };
}
