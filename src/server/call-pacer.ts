import { performance } from "node:perf_hooks";

/** Starts admitted calls in arrival order, with a bounded amount of work per turn of the event loop. */
export interface CallPacer {
  /**
   * Runs `start` at once while the current turn of the event loop has used less than its budget
   * on starting calls and no call waits; otherwise queues it for a later turn. Calls start in
   * arrival order either way.
   */
  run(start: () => void): void;
  /** Calls waiting for a later turn. */
  readonly waiting: number;
}

/**
 * Creates a pacer that spends at most about `turnBudgetMs` (default 10) of each turn of the event
 * loop starting calls. A flood of streams read in one turn (up to MAX_CONCURRENT_STREAMS per
 * connection, on every connection at once) would otherwise run every call's first steps (decoding,
 * authentication, the run itself when it is short) back to back, and a health probe that arrived
 * meanwhile would wait seconds behind them. Past the budget, calls wait for a later turn
 * (`setImmediate`), so the event loop reads other sockets (probes, other clients) in between.
 * Under light load every call starts at once: no added latency. `now` is the clock, in ms.
 */
export function createCallPacer(turnBudgetMs = 10, now: () => number = () => performance.now()): CallPacer {
  // A FIFO with a moving head: shift() would copy the array at every start.
  let queue: ((() => void) | undefined)[] = [];
  let head = 0;
  // When this turn began starting calls; undefined while it has started none.
  let turnStartedAt: number | undefined;
  let turnEndScheduled = false;

  const budgetLeft = (): boolean => turnStartedAt === undefined || now() - turnStartedAt < turnBudgetMs;
  const startNow = (start: () => void): void => {
    turnStartedAt ??= now();
    if (!turnEndScheduled) {
      turnEndScheduled = true;
      setImmediate(nextTurn);
    }
    start();
  };
  // Runs after the I/O of the turn (setImmediate): a fresh budget for the calls still waiting.
  const nextTurn = (): void => {
    turnEndScheduled = false;
    turnStartedAt = undefined;
    while (head < queue.length && budgetLeft()) {
      const start = queue[head] as () => void;
      queue[head] = undefined;
      head += 1;
      startNow(start);
    }
    if (head === queue.length) {
      queue = [];
      head = 0;
    } else if (!turnEndScheduled) {
      turnEndScheduled = true;
      setImmediate(nextTurn);
    }
    // The next turn's I/O starts its own budget.
    turnStartedAt = undefined;
  };

  return {
    run(start) {
      if (head === queue.length && budgetLeft()) {
        startNow(start);
        return;
      }
      queue.push(start);
      if (!turnEndScheduled) {
        turnEndScheduled = true;
        setImmediate(nextTurn);
      }
    },
    get waiting() {
      return queue.length - head;
    },
  };
}
