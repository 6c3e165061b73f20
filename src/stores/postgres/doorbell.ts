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
  close(): Promise<void>;
}

/**
 * A dedicated connection that LISTENs for NOTIFY on the channels asked for, reconnecting with
 * backoff when it drops. Notifications are only a doorbell: they say "something may have changed",
 * never what, and readers always re-read rows and also poll, so a lost notification costs latency,
 * never correctness.
 */
export function openDoorbell(url: string): Doorbell {
  const listeners = new Map<string, Set<RingListener>>();
  const reconnectListeners: (() => void)[] = [];
  let client: pg.Client | undefined;
  let closed = false;
  let attempt = 0;
  let retryTimer: NodeJS.Timeout | undefined;

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
      for (const channel of [...listeners.keys()]) await next.query(`LISTEN ${quoteIdentifier(channel)}`);
    } catch {
      drop(next);
      return;
    }
    attempt = 0;
    for (const listener of reconnectListeners) listener();
  };

  const drop = (dropped: pg.Client): void => {
    dropped.removeAllListeners("notification");
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

  void connect();
  return {
    listen(channel, listener) {
      let set = listeners.get(channel);
      if (!set) {
        set = new Set();
        listeners.set(channel, set);
        void client?.query(`LISTEN ${quoteIdentifier(channel)}`).catch(() => undefined);
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
      const current = client;
      client = undefined;
      await current?.end().catch(() => undefined);
    },
  };
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
