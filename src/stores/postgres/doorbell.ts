import pg from "pg";
import { reconnectDelayMs } from "../../providers/reconnect-delay.js";

/** Receives the payload of a notification on the channel it listens to. */
export type RingListener = (payload: string) => void;

/** A LISTEN connection that stays connected; see {@link openDoorbell}. */
export interface Doorbell {
  /** Calls `listener` for each notification on `channel` until the returned function is called. */
  listen(channel: string, listener: RingListener): () => void;
  /** Called after each (re)connection: notifications sent while disconnected are lost, so re-read. */
  onReconnect(listener: () => void): void;
  /**
   * Whether the connection is known to deliver now: a heartbeat sent on it less than
   * {@link deliveryBoundMs} ago was answered. PostgreSQL signals a notification's listeners as its
   * transaction commits, before the writer is answered, and hands pending notifications to a
   * connection before it answers a query; so every notification of a commit acknowledged before
   * that heartbeat was sent has been received. What a process holds by following the doorbell is
   * then at most `deliveryBoundMs` behind the store, and in practice a notification's delivery.
   */
  delivering(): boolean;
  /** How far behind the store a process following a delivering doorbell can be, at worst, in ms. */
  readonly deliveryBoundMs: number;
  close(): Promise<void>;
}

/**
 * A dedicated connection that LISTENs for NOTIFY on the channels asked for, reconnecting with
 * backoff when it drops. Notifications are only a doorbell: they say "something may have changed",
 * never what, and readers always re-read rows and also poll, so a lost notification costs latency,
 * never correctness.
 */
export function openDoorbell(url: string, heartbeatMs = 100): Doorbell {
  const listeners = new Map<string, Set<RingListener>>();
  const reconnectListeners: (() => void)[] = [];
  let client: pg.Client | undefined;
  let closed = false;
  let attempt = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  /** When the last answered heartbeat was sent (ms since the epoch); 0 while none since connecting. */
  let confirmedSentAt = 0;
  let beating = false;
  const deliveryBoundMs = 3 * heartbeatMs;
  /** The connection's statements, one at a time (pg queues them, but warns of overlapping calls). */
  let statements: Promise<unknown> = Promise.resolve();
  const send = (on: pg.Client, config: string | pg.QueryConfig): Promise<unknown> => {
    const sent = statements.then(() => on.query(config));
    statements = sent.catch(() => undefined);
    return sent;
  };

  const connect = async (): Promise<void> => {
    if (closed) return;
    const next = new pg.Client({ connectionString: url, application_name: "toolruntime-doorbell" });
    next.on("notification", (message) => {
      for (const listener of listeners.get(message.channel) ?? []) listener(message.payload ?? "");
    });
    next.on("error", () => drop(next));
    next.on("end", () => drop(next));
    try {
      await next.connect();
      if (closed) {
        await next.end().catch(() => undefined);
        return;
      }
      // Current before LISTEN, so a channel added meanwhile is listened to by listen() itself.
      client = next;
      statements = Promise.resolve();
      for (const channel of [...listeners.keys()]) await send(next, `LISTEN ${quoteIdentifier(channel)}`);
    } catch {
      drop(next);
      return;
    }
    attempt = 0;
    for (const listener of reconnectListeners) listener();
  };

  const drop = (dropped: pg.Client): void => {
    dropped.removeAllListeners("notification");
    if (client === dropped) confirmedSentAt = 0;
    void dropped.end().catch(() => undefined);
    if (client === dropped) client = undefined;
    if (closed || retryTimer) return;
    retryTimer = setTimeout(
      () => {
        retryTimer = undefined;
        void connect();
      },
      reconnectDelayMs(attempt++, { initialDelayMs: 100, maxDelayMs: 5000 }),
    );
    retryTimer.unref();
  };

  // Each heartbeat confirms delivery up to when it was sent (see delivering); one that is not
  // answered within the bound drops the connection, which is then made again.
  const heartbeat = setInterval(() => {
    const current = client;
    if (!current || beating) return;
    beating = true;
    const sentAt = Date.now();
    send(current, { text: "SELECT 1", query_timeout: deliveryBoundMs } as pg.QueryConfig)
      .then(
        () => {
          if (client === current) confirmedSentAt = sentAt;
        },
        () => drop(current),
      )
      .finally(() => (beating = false));
  }, heartbeatMs);
  heartbeat.unref();

  void connect();
  return {
    deliveryBoundMs,
    delivering: () => client !== undefined && Date.now() - confirmedSentAt < deliveryBoundMs,
    listen(channel, listener) {
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        if (client) void send(client, `LISTEN ${quoteIdentifier(channel)}`).catch(() => undefined);
      }
      set.add(listener);
      return () => set.delete(listener);
    },
    onReconnect(listener) {
      reconnectListeners.push(listener);
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      clearInterval(heartbeat);
      const current = client;
      client = undefined;
      await current?.end().catch(() => undefined);
    },
  };
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
