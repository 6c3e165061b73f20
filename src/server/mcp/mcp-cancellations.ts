/**
 * The tools/call requests in flight on this replica, by who sent them, so that a 2025-era
 * `notifications/cancelled` — which arrives in a POST of its own, served by a fresh per-request
 * server — reaches the request it names. A request is named by the client's session id (a random
 * id the gateway hands out at `initialize`; it holds no state), the caller's identity and the
 * JSON-RPC request id: request ids alone repeat across clients.
 */
export class McpCancellations {
  readonly #inFlight = new Map<string, AbortController>();

  /** Number of requests in flight that a notification could cancel. */
  get size(): number {
    return this.#inFlight.size;
  }

  /**
   * Tracks one request: returns the signal a matching cancellation aborts and the function that
   * stops tracking it (call it when the request ends). A second request under the same key (a
   * client reusing an id) replaces the first, which a cancellation can then no longer reach.
   */
  track(key: string): { signal: AbortSignal; release: () => void } {
    const controller = new AbortController();
    this.#inFlight.set(key, controller);
    return {
      signal: controller.signal,
      release: () => {
        if (this.#inFlight.get(key) === controller) this.#inFlight.delete(key);
      },
    };
  }

  /** Cancels the request under `key`, if one is in flight. Returns whether one was. */
  cancel(key: string, reason: string): boolean {
    const controller = this.#inFlight.get(key);
    if (!controller) return false;
    this.#inFlight.delete(key);
    controller.abort(new Error(reason));
    return true;
  }
}

/** The key of a request: session, caller and JSON-RPC id (a number and its string differ). */
export function cancellationKey(sessionId: string, caller: string, requestId: string | number): string {
  return JSON.stringify([sessionId, caller, requestId]);
}
