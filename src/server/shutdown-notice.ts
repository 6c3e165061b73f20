import { ChurnSet } from "../collections/churn-set.js";

/**
 * Tells the long-lived streams that shutdown has begun, at its first moment, before the grace
 * period the calls in flight get: a stream with nothing left to deliver (a watch of the registry,
 * of the runs, of health) ends then, so that it does not hold the drain for the whole grace.
 */
export class ShutdownNotice {
  #begun = false;
  // A Set rather than Cancellation's array: watch streams come and go by the thousand, and each
  // leaving one is taken out in constant time.
  readonly #listeners = new ChurnSet<() => void>();

  /** Whether shutdown has begun. */
  get begun(): boolean {
    return this.#begun;
  }

  /** Calls `listener` once, when shutdown begins (at once if it has); returns the function that stops it. */
  onBegin(listener: () => void): () => void {
    if (this.#begun) {
      listener();
      return () => undefined;
    }
    // A wrapper of its own, so that the same function given twice is called twice and removed once.
    const entry = (): void => listener();
    this.#listeners.add(entry);
    return () => this.#listeners.delete(entry);
  }

  /** Begins shutdown, once: every listener is called. */
  begin(): void {
    if (this.#begun) return;
    this.#begun = true;
    const listeners: (() => void)[] = [];
    this.#listeners.forEach((listener) => listeners.push(listener));
    this.#listeners.clear();
    for (const listener of listeners) listener();
  }
}
