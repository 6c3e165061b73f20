import { reconnectDelayMs, type ReconnectOptions } from "../../providers/reconnect-delay.js";
import { abortableDelay } from "../../tools/abortable-delay.js";

/** A live connection to an MCP server, as {@link superviseConnection} sees it. */
export interface SupervisedConnection {
  /** Settles when the connection is gone (child exited, transport closed). */
  readonly closed: Promise<unknown>;
}

/** Hooks and options of {@link superviseConnection}. */
export interface SuperviseOptions<Connection extends SupervisedConnection> {
  /** Opens one connection (starts the child, or connects over HTTP); rejects when it cannot. */
  readonly connect: (signal: AbortSignal) => Promise<Connection>;
  /** Called once per connection that came up (register its tools here). */
  readonly onUp: (connection: Connection) => Promise<void> | void;
  /** Called when a connection that was up is gone (remove its tools here). */
  readonly onDown: (connection: Connection) => void;
  /**
   * Called for each failed attempt, with the delay before the next one in milliseconds and the
   * attempt's place in the current streak of failures (0 for the first since start or since the
   * last connection came up).
   */
  readonly onRetry?: (error: unknown, delayMs: number, attempt: number) => void;
  /** Ends supervision: no further attempt is made; the caller closes the live connection. */
  readonly signal: AbortSignal;
  /** Backoff between attempts (see reconnectDelayMs); reset once a connection came up. */
  readonly backoff?: ReconnectOptions;
}

/**
 * Keeps one MCP server connected until `signal` aborts: connects, calls `onUp`, waits until the
 * connection closes, calls `onDown`, and tries again after a capped, jittered exponential delay.
 * A server unreachable at start is retried the same way, so it never blocks the caller: the
 * returned promise settles only when `signal` aborts (`onDown` is then called for a live connection).
 */
export async function superviseConnection<Connection extends SupervisedConnection>(
  options: SuperviseOptions<Connection>,
): Promise<void> {
  const { signal } = options;
  let attempt = 0;
  while (!signal.aborted) {
    let connection: Connection | undefined;
    let reason: unknown = new Error("the connection closed");
    try {
      connection = await options.connect(signal);
      attempt = 0;
      await options.onUp(connection);
      await untilClosedOrAborted(connection.closed, signal);
    } catch (error) {
      reason = error;
    }
    if (connection !== undefined) options.onDown(connection);
    if (signal.aborted) break;
    const delayMs = reconnectDelayMs(attempt, options.backoff);
    options.onRetry?.(reason, delayMs, attempt++);
    await abortableDelay(delayMs, signal).catch(() => undefined);
  }
}

/** Waits until `closed` settles or `signal` aborts, leaving no listener behind. */
async function untilClosedOrAborted(closed: Promise<unknown>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return;
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve;
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([closed.then(noop, noop), aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

function noop(): void {}
