import { ErrorType, ToolRuntimeError } from "../../errors/tool-runtime-error.js";
import { quote } from "../../registry/names.js";

/** Options of {@link ConnectionGate}. */
export interface ConnectionGateOptions {
  /** Connections of the pool: operations let through at once. */
  readonly connections: number;
  /**
   * Longest a new run waits for a connection before it is refused, in milliseconds: a quarter of
   * the time its operation has (so what it waited leaves it time to run), within these bounds.
   * Default 100 to 250.
   */
  readonly newWorkWaitMs?: { readonly min: number; readonly max: number };
}

/** A turn on one of the pool's connections; give it back exactly once. */
export interface GateTurn {
  release(): void;
}

interface Waiter {
  readonly grant: (turn: GateTurn) => void;
  readonly refuse: (error: Error) => void;
  timer?: NodeJS.Timeout | undefined;
  settled: boolean;
}

/**
 * Decides who gets the pool's connections, and in which order: work already under way (the
 * writes of runs already started, reads, registrations) before new runs. A new run waits at most
 * a quarter of its operation's time (100 to 250 ms) for a connection; past that the store is busy
 * with work already admitted, and
 * the run is refused with RESOURCE_EXHAUSTED and a retry delay rather than queued behind it. So
 * past the store's capacity a replica admits new runs only as fast as it finishes the ones it
 * has, and those finish in time instead of every call missing its deadline; a burst within the
 * store's capacity is let in whole (its runs get connections as the earlier ones give theirs back).
 */
export class ConnectionGate {
  readonly #connections: number;
  readonly #newWorkWaitMs: { readonly min: number; readonly max: number };
  #free: number;
  readonly #underWay: Waiter[] = [];
  readonly #newWork: Waiter[] = [];
  /** Moving average of how long a turn is held, in milliseconds. */
  #holdMs = 5;

  constructor(options: ConnectionGateOptions) {
    this.#connections = options.connections;
    this.#free = options.connections;
    this.#newWorkWaitMs = options.newWorkWaitMs ?? { min: 100, max: 250 };
  }

  /** Operations waiting now, under way and new. */
  get waiting(): number {
    return this.#underWay.length + this.#newWork.length;
  }

  /**
   * A turn for an operation: at once when a connection is free, else when one is given back
   * (work under way first, each kind in order). `newRun` marks the creation of a run, refused
   * with RESOURCE_EXHAUSTED (naming `toolName`) when no connection comes within the wait allowed
   * (a quarter of `operationMs`, the time the operation has, within the gate's bounds).
   * `signal` gives up waiting (rejecting with its reason).
   */
  enter(newRun: boolean, toolName: string, signal?: AbortSignal, operationMs = 0): Promise<GateTurn> {
    if (this.#free > 0 && (newRun ? this.waiting === 0 : this.#underWay.length === 0)) {
      this.#free -= 1;
      return Promise.resolve(this.#turn(performance.now()));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { grant: resolve, refuse: reject, settled: false };
      const queue = newRun ? this.#newWork : this.#underWay;
      queue.push(waiter);
      if (newRun) {
        const { min, max } = this.#newWorkWaitMs;
        const waitMs = Math.round(Math.min(max, Math.max(min, operationMs / 4)));
        waiter.timer = setTimeout(() => this.#drop(queue, waiter, () => this.#busy(toolName, waitMs)), waitMs);
      }
      signal?.addEventListener("abort", () => this.#drop(queue, waiter, () => signal.reason as Error), {
        once: true,
      });
    });
  }

  #turn(since: number): GateTurn {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        // About the last twenty turns weigh.
        this.#holdMs += (performance.now() - since - this.#holdMs) / 20;
        this.#next();
      },
    };
  }

  /** A connection was given back: to the first waiting operation, under way before new. */
  #next(): void {
    const waiter = this.#underWay.shift() ?? this.#newWork.shift();
    if (!waiter) {
      this.#free += 1;
      return;
    }
    waiter.settled = true;
    clearTimeout(waiter.timer);
    waiter.grant(this.#turn(performance.now()));
  }

  #drop(queue: Waiter[], waiter: Waiter, reason: () => Error): void {
    if (waiter.settled) return;
    waiter.settled = true;
    clearTimeout(waiter.timer);
    queue.splice(queue.indexOf(waiter), 1);
    waiter.refuse(reason());
  }

  #busy(toolName: string, waitedMs: number): ToolRuntimeError {
    const waiting = this.waiting;
    // Time for the operations waiting now to go through, at the recent pace.
    const retryAfterMs = Math.round(
      Math.min(5000, Math.max(50, ((waiting + 1) / this.#connections) * this.#holdMs * 2)),
    );
    return new ToolRuntimeError(
      "RESOURCE_EXHAUSTED",
      ErrorType.ResourceExhausted,
      `run of ${quote(toolName)} not started: this replica's ${this.#connections} connections to the store stayed busy with work under way for ${waitedMs} ms (${waiting} operations wait); retry in ${retryAfterMs} ms or on another replica`,
      toolName,
      retryAfterMs,
    );
  }
}
