/** What reads a cancellation: whether it happened, why, and a way to hear of it. */
export interface CancellationView {
  readonly aborted: boolean;
  readonly reason: unknown;
  /** Calls `listener` once, when cancelled (at once if it already was); returns the function that stops it. */
  onAbort(listener: (reason: unknown) => void): () => void;
  /** The same cancellation as an AbortSignal, for code that takes one. */
  readonly signal: AbortSignal;
}

/**
 * A cancellation flag with listeners: what an AbortController does for a run, at a fraction of
 * its cost. An AbortSignal (an EventTarget, costly to create, listen to and abort) is made only
 * when some code asks for {@link signal}; a run that nobody cancels and whose handler never reads
 * its signal makes none.
 */
export class Cancellation implements CancellationView {
  #aborted = false;
  #reason: unknown;
  #listeners: ((reason: unknown) => void)[] | undefined;
  #controller: AbortController | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Cancels, once: later calls change nothing. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    this.#controller?.abort(reason);
    if (listeners) for (const listener of listeners) listener(reason);
  }

  onAbort(listener: (reason: unknown) => void): () => void {
    if (this.#aborted) {
      listener(this.#reason);
      return noop;
    }
    (this.#listeners ??= []).push(listener);
    return () => {
      const listeners = this.#listeners;
      if (!listeners) return;
      const index = listeners.indexOf(listener);
      if (index >= 0) listeners.splice(index, 1);
      // A cancellation outlives its run in a retained record: an emptied list is let go.
      if (listeners.length === 0) this.#listeners = undefined;
    };
  }
}

/** A {@link CancellationView} of an AbortSignal, for callers that hold one. */
export function cancellationOfSignal(signal: AbortSignal): CancellationView {
  return {
    get aborted() {
      return signal.aborted;
    },
    get reason(): unknown {
      return signal.reason as unknown;
    },
    signal,
    onAbort(listener) {
      if (signal.aborted) {
        listener(signal.reason);
        return noop;
      }
      const onAbort = (): void => listener(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      return () => signal.removeEventListener("abort", onAbort);
    },
  };
}

function noop(): void {}
