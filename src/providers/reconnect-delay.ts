/** Backoff of a provider that reconnects; see {@link reconnectDelayMs}. */
export interface ReconnectOptions {
  /** Delay before the first new attempt, in milliseconds. Default 250. */
  readonly initialDelayMs?: number;
  /** Longest delay between two attempts, in milliseconds. Default 10,000. */
  readonly maxDelayMs?: number;
}

/**
 * The delay before reconnect attempt `attempt` (0 for the first): `initialDelayMs` doubled once per
 * earlier attempt, capped at `maxDelayMs`, then jittered to between half and all of it (`random`
 * gives a number in [0, 1)), so that providers dropped together do not come back together.
 */
export function reconnectDelayMs(
  attempt: number,
  options: ReconnectOptions = {},
  random: () => number = Math.random,
): number {
  const initial = Math.max(1, options.initialDelayMs ?? 250);
  const cap = Math.max(initial, options.maxDelayMs ?? 10_000);
  const base = Math.min(cap, initial * 2 ** Math.min(attempt, 30));
  return Math.round(base / 2 + (random() * base) / 2);
}
