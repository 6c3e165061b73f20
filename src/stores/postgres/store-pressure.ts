import { ErrorType, ToolRuntimeError } from "../../errors/tool-runtime-error.js";
import { quote } from "../../registry/names.js";

/** Options of {@link StorePressure}. */
export interface StorePressureOptions {
  /** Connections of the pool. */
  readonly connections: number;
  /** A wait for a connection longer than this, for everyone over a whole window, is a standing queue (ms). Default 100. */
  readonly targetWaitMs?: number;
  /** The window over which the shortest wait is taken, in milliseconds. Default 500. */
  readonly windowMs?: number;
  /** The clock, in milliseconds (tests give their own). Default performance.now. */
  readonly now?: () => number;
}

/**
 * Tells a burst from overload by how long operations wait for one of the pool's connections, as
 * CoDel tells a burst from a standing queue: when even the shortest wait of those that got a
 * connection during a whole window (or, when none did, the wait of the oldest still waiting) is
 * longer than the target, the queue stands because the
 * store is past its capacity, and new runs are refused (RESOURCE_EXHAUSTED with a retry delay) so
 * that the work already admitted goes through in time instead of every call missing its deadline.
 * A burst, however large, has short waits at its front and is let in whole.
 */
export class StorePressure {
  readonly #connections: number;
  readonly #targetWaitMs: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  /** When each operation still waiting for a connection began waiting (performance.now()). */
  readonly #waiting = new Set<number>();
  #windowStart: number;
  #windowShortest = Number.POSITIVE_INFINITY;
  #standing = false;
  /** Moving average of the time an operation holds a connection, in milliseconds. */
  #holdMs = 5;

  constructor(options: StorePressureOptions) {
    this.#connections = options.connections;
    this.#targetWaitMs = options.targetWaitMs ?? 100;
    this.#windowMs = options.windowMs ?? 500;
    this.#now = options.now ?? (() => performance.now());
    this.#windowStart = this.#now();
  }

  /** An operation begins to wait for a connection; returns the token {@link acquired} takes. */
  waiting(): number {
    let token = this.#now();
    // Two waits that began in the same instant are told apart.
    while (this.#waiting.has(token)) token += 1e-6;
    this.#waiting.add(token);
    return token;
  }

  /** The operation that began waiting at `token` has a connection now, or gave up waiting. */
  acquired(token: number): void {
    this.#waiting.delete(token);
    const now = this.#now();
    this.#windowShortest = Math.min(this.#windowShortest, now - token);
    this.#roll(now);
  }

  /** Records that an operation held a connection for `ms`. */
  held(ms: number): void {
    // About the last twenty operations weigh.
    this.#holdMs += (ms - this.#holdMs) / 20;
  }

  /** Whether the queue for connections stands (see the class). */
  get standing(): boolean {
    this.#roll(this.#now());
    return this.#standing;
  }

  /** Throws RESOURCE_EXHAUSTED, naming the tool and when to retry, while the queue stands. */
  checkRoomForNewRun(toolName: string): void {
    if (!this.standing) return;
    const waiting = this.#waiting.size;
    // Time for the operations waiting now to go through, at the recent pace.
    const retryAfterMs = Math.round(
      Math.min(5000, Math.max(50, ((waiting + 1) / this.#connections) * this.#holdMs * 2)),
    );
    throw new ToolRuntimeError(
      "RESOURCE_EXHAUSTED",
      ErrorType.ResourceExhausted,
      `run of ${quote(toolName)} not started: this replica's ${this.#connections} connections to the store are all busy and ${waiting} operations wait for one; retry in ${retryAfterMs} ms or on another replica`,
      toolName,
      retryAfterMs,
    );
  }

  #roll(now: number): void {
    if (now - this.#windowStart < this.#windowMs) return;
    let shortest = this.#windowShortest;
    // No one got a connection in the whole window: the queue is stuck if anyone waits (the
    // oldest, first in the set, waited longest).
    if (!Number.isFinite(shortest)) {
      const oldest = this.#waiting.values().next();
      if (!oldest.done) shortest = now - oldest.value;
    }
    // A window without a wait is an idle pool, not a standing queue.
    this.#standing = Number.isFinite(shortest) && shortest > this.#targetWaitMs;
    this.#windowStart = now;
    this.#windowShortest = Number.POSITIVE_INFINITY;
  }
}
