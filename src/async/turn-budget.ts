import { performance } from "node:perf_hooks";

/**
 * A bound on how long work that can wait may hold one turn of the event loop. Code doing such work
 * asks {@link pause} at its natural breaks: while the turn has budget left it goes on at once;
 * past it, it continues in a later turn, after the event loop has read the sockets that waited
 * (health probes, other clients). Thousands of runs whose sleeps end in the same millisecond free
 * as many slots at once, and every queued run they admit would otherwise start in that one turn.
 */
export class TurnBudget {
  readonly #budgetMs: number;
  readonly #now: () => number;
  #waiting: (() => void)[] = [];
  #head = 0;
  // When this turn's budgeted work began; undefined while it has done none.
  #turnStartedAt: number | undefined;
  #turnEndScheduled = false;

  constructor(budgetMs = 10, now: () => number = () => performance.now()) {
    this.#budgetMs = budgetMs;
    this.#now = now;
  }

  /** Work waiting for a later turn. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }

  /**
   * Undefined while this turn has budget left and nothing waits (go on); otherwise a promise that
   * resolves in a later turn, in the order asked.
   */
  pause(): Promise<void> | undefined {
    if (this.waiting === 0 && this.#budgetLeft()) {
      this.#turnStartedAt ??= this.#now();
      this.#scheduleTurnEnd();
      return undefined;
    }
    const resumed = new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#scheduleTurnEnd();
    return resumed;
  }

  #budgetLeft(): boolean {
    return this.#turnStartedAt === undefined || this.#now() - this.#turnStartedAt < this.#budgetMs;
  }

  #scheduleTurnEnd(): void {
    if (this.#turnEndScheduled) return;
    this.#turnEndScheduled = true;
    setImmediate(this.#nextTurn);
  }

  // After the turn's I/O (setImmediate): a fresh budget for the work that waits.
  readonly #nextTurn = (): void => {
    this.#turnEndScheduled = false;
    this.#turnStartedAt = this.#now();
    this.#resumeNext();
  };

  // Resumes one waiter, then (as a microtask, so after the resumed work's first steps) the next,
  // while the budget lasts; the rest wait for the next turn.
  readonly #resumeNext = (): void => {
    if (this.waiting === 0) {
      this.#waiting = [];
      this.#head = 0;
      // Nothing waits: the next work starts its own budget (no turn end is scheduled to reset it).
      this.#turnStartedAt = undefined;
      return;
    }
    if (!this.#budgetLeft()) {
      this.#turnStartedAt = undefined;
      this.#scheduleTurnEnd();
      return;
    }
    const resume = this.#waiting[this.#head] as () => void;
    this.#waiting[this.#head] = undefined as never;
    this.#head += 1;
    resume();
    queueMicrotask(this.#resumeNext);
  };
}

/** The process's budget for starting queued runs that were granted a slot: 5 ms a turn. */
export const runWorkBudget = new TurnBudget(5);
