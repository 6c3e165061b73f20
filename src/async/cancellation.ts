/** What reads a cancellation: whether it happened, why, and a way to hear of it. */
export interface CancellationView {
  readonly aborted: boolean;
  readonly reason: unknown;
  /** Calls `listener` once, when cancelled (at once if it already was); returns the function that stops it. */
  onAbort(listener: (reason: unknown) => void): () => void;
  /**
   * Stops calling a listener given to {@link onAbort}: the same as calling the function it
   * returned, for a caller that keeps the listener rather than a second closure.
   */
  offAbort(listener: (reason: unknown) => void): void;
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
  /**
   * The listeners: one function, or an array of them once there are two or more. Most
   * cancellations have one listener (the run's own), and an array with one item holds room for
   * seventeen (about 150 bytes) for as long as its run is in flight or retained.
   */
  #listeners: ((reason: unknown) => void) | ((reason: unknown) => void)[] | undefined;
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
    if (typeof listeners === "function") listeners(reason);
    else if (listeners) for (const listener of listeners) listener(reason);
  }

  onAbort(listener: (reason: unknown) => void): () => void {
    if (this.#aborted) {
      listener(this.#reason);
      return noop;
    }
    const listeners = this.#listeners;
    if (listeners === undefined) this.#listeners = listener;
    else if (typeof listeners === "function") this.#listeners = [listeners, listener];
    else listeners.push(listener);
    return () => this.offAbort(listener);
  }

  offAbort(listener: (reason: unknown) => void): void {
    const listeners = this.#listeners;
    if (listeners === listener) {
      // A cancellation outlives its run in a retained record: a removed listener is let go.
      this.#listeners = undefined;
      return;
    }
    if (!listeners || typeof listeners === "function") return;
    const index = listeners.indexOf(listener);
    if (index >= 0) listeners.splice(index, 1);
    if (listeners.length === 0) this.#listeners = undefined;
  }
}

/** A {@link CancellationView} of an AbortSignal, for callers that hold one. */
export function cancellationOfSignal(signal: AbortSignal): CancellationView {
  return new SignalCancellation(signal);
}

/**
 * The view of {@link cancellationOfSignal}. A class, and its map of listeners made at the first
 * one: an object literal with getters, and a Map, made for every call of the HTTP port whose end
 * was only read, cost about a microsecond.
 */
class SignalCancellation implements CancellationView {
  readonly signal: AbortSignal;
  /** The signal's listener made for each listener given, so that offAbort can remove it. */
  #attached: Map<(reason: unknown) => void, () => void> | undefined;

  constructor(signal: AbortSignal) {
    this.signal = signal;
  }

  get aborted(): boolean {
    return this.signal.aborted;
  }

  get reason(): unknown {
    return this.signal.reason as unknown;
  }

  onAbort(listener: (reason: unknown) => void): () => void {
    const signal = this.signal;
    if (signal.aborted) {
      listener(signal.reason);
      return noop;
    }
    const attached = (this.#attached ??= new Map());
    const onAbort = (): void => {
      attached.delete(listener);
      listener(signal.reason);
    };
    attached.set(listener, onAbort);
    signal.addEventListener("abort", onAbort, { once: true });
    return () => this.offAbort(listener);
  }

  offAbort(listener: (reason: unknown) => void): void {
    const onAbort = this.#attached?.get(listener);
    if (!onAbort) return;
    this.#attached?.delete(listener);
    this.signal.removeEventListener("abort", onAbort);
  }
}

function noop(): void {}
