import { performance } from "node:perf_hooks";
import { ChurnMap } from "../collections/churn-map.js";

/**
 * Starts admitted calls, and sends their last messages, with a bounded amount of work per turn of
 * the event loop; connections take turns, so that one client's burst does not hold everyone else's
 * calls behind it.
 */
export interface CallPacer {
  /**
   * Runs `start` at once while the current turn of the event loop has used less than its budget
   * and no call waits; otherwise queues it for a later turn, behind the calls waiting on the same
   * connection (`connection` names it; it is asked only when the call must wait). Waiting calls
   * start one connection after another, in arrival order on each.
   */
  run(start: () => void, connection?: () => unknown): void;
  /**
   * Runs `send` (a call's response, a stream's next message or its end) at once while the turn has
   * budget left and no other sending waits; otherwise queues it for a later turn, ahead of calls
   * waiting to start: a call under way finishes before a new one begins.
   */
  send(send: () => void): void;
  /** Calls waiting for a later turn to start or to send. */
  readonly waiting: number;
}

/** A FIFO with a moving head: shift() would copy the array at every start. */
class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  take(): T {
    const item = this.#items[this.#head] as T;
    this.#items[this.#head] = undefined;
    this.#head += 1;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    }
    return item;
  }
}

type Work = () => void;

/** Work waiting per connection, taken round-robin: one item of each connection in turn. */
class RoundRobin {
  readonly #byConnection = new ChurnMap<unknown, Fifo<Work>>();
  /** The connections with work waiting, in the order they are served next. */
  readonly #turns = new Fifo<unknown>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(connection: unknown, work: Work): void {
    let queue = this.#byConnection.get(connection);
    if (!queue) {
      queue = new Fifo<Work>();
      this.#byConnection.set(connection, queue);
      this.#turns.push(connection);
    }
    queue.push(work);
    this.#size += 1;
  }

  take(): Work {
    const connection = this.#turns.take();
    const queue = this.#byConnection.get(connection) as Fifo<Work>;
    const work = queue.take();
    this.#size -= 1;
    if (queue.size > 0) this.#turns.push(connection);
    else this.#byConnection.delete(connection);
    return work;
  }
}

/** The connection of calls that name none: they share one queue. */
const anyConnection = Symbol("any connection");

/**
 * Creates a pacer that spends at most about `turnBudgetMs` (default 10) of each turn of the event
 * loop starting calls and sending their results. A flood of streams read in one turn (up to
 * MAX_CONCURRENT_STREAMS per connection, on every connection at once) would otherwise run every
 * call's first steps (decoding, authentication, the run itself when it is short) back to back, and
 * thousands of runs that end together (their timers due in the same millisecond) would encode and
 * write every last message at once: a health probe that arrived meanwhile would wait seconds behind
 * them. Past the budget, work waits for a later turn (`setImmediate`), so the event loop reads
 * other sockets (probes, other clients) in between. Calls that wait are started one connection
 * after another, so a client that arrives behind another's burst waits for a call of each busy
 * connection, not for the whole burst. Under light load everything runs at once: no added
 * latency. `now` is the clock, in ms.
 */
export function createCallPacer(turnBudgetMs = 10, now: () => number = () => performance.now()): CallPacer {
  const starts = new RoundRobin();
  const sends = new Fifo<Work>();
  // When this turn began its paced work; undefined while it has done none.
  let turnStartedAt: number | undefined;
  let turnEndScheduled = false;

  const budgetLeft = (): boolean => turnStartedAt === undefined || now() - turnStartedAt < turnBudgetMs;
  const scheduleTurn = (): void => {
    if (!turnEndScheduled) {
      turnEndScheduled = true;
      setImmediate(nextTurn);
    }
  };
  const runNow = (work: Work): void => {
    turnStartedAt ??= now();
    scheduleTurn();
    work();
  };
  // Runs after the I/O of the turn (setImmediate): a fresh budget for the work still waiting,
  // sending first.
  const nextTurn = (): void => {
    turnEndScheduled = false;
    turnStartedAt = undefined;
    while (sends.size > 0 && budgetLeft()) runNow(sends.take());
    while (sends.size === 0 && starts.size > 0 && budgetLeft()) runNow(starts.take());
    if (sends.size > 0 || starts.size > 0) scheduleTurn();
    // The next turn's I/O starts its own budget.
    turnStartedAt = undefined;
  };

  return {
    run(start, connection) {
      if (starts.size === 0 && sends.size === 0 && budgetLeft()) {
        runNow(start);
        return;
      }
      starts.push(connection ? connection() : anyConnection, start);
      scheduleTurn();
    },
    send(send) {
      if (sends.size === 0 && budgetLeft()) {
        runNow(send);
        return;
      }
      sends.push(send);
      scheduleTurn();
    },
    get waiting() {
      return starts.size + sends.size;
    },
  };
}

/**
 * Runs `send` when the pacer lets it (see CallPacer.send): returns undefined when it ran at once
 * (or there is no pacer), or a promise that resolves once it ran in a later turn.
 */
export function sendPaced(pacer: CallPacer | undefined, send: () => void): Promise<void> | undefined {
  if (!pacer) {
    send();
    return undefined;
  }
  let sent = false;
  let resolve: (() => void) | undefined;
  pacer.send(() => {
    send();
    sent = true;
    resolve?.();
  });
  return sent ? undefined : new Promise<void>((done) => (resolve = done));
}
