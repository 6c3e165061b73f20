import { parentPort, workerData } from "node:worker_threads";
import pg from "pg";
import { ReplicaSignals } from "./replica-signals.js";

// The body of the lease keeper's thread (see startLeaseKeeper): on a connection of its own, it
// renews this replica's lease, measures the database's clock, and tells whether the store answers.
// On its own thread it goes on while the main thread's event loop is blocked, so a handler that
// blocks it costs the replica neither its lease nor its readiness, up to `maxStallMs`: past that
// the replica is taken for stuck, and the lease is left to expire so that others take its runs.

/** What the main thread gives the thread. */
export interface LeaseKeeperData {
  readonly url: string;
  readonly replicaId: string;
  readonly leaseMs: number;
  /** Interval between renewals, in milliseconds. */
  readonly intervalMs: number;
  /** Longest a renewal may take before the store counts as unavailable, in milliseconds. */
  readonly timeoutMs: number;
  /** Longest the main thread's event loop may be blocked before the lease is left to expire. */
  readonly maxStallMs: number;
  readonly signals: SharedArrayBuffer;
}

/** What the thread tells the main thread. */
export type LeaseKeeperMessage =
  | { readonly kind: "available"; readonly available: boolean; readonly reason: string }
  | { readonly kind: "lost" }
  | { readonly kind: "ready" }
  | { readonly kind: "withheld"; readonly stalledMs: number };

const port = parentPort;
if (!port) throw new Error("lease-keeper-thread.js runs as a worker thread (see startLeaseKeeper)");
const data = workerData as LeaseKeeperData;
const signals = new ReplicaSignals(data.signals);
const lease = `${data.leaseMs} milliseconds`;
const post = (message: LeaseKeeperMessage): void => port.postMessage(message);

let client: pg.Client | undefined;
let available = true;
let withheld = false;
let ready = false;

async function connect(): Promise<pg.Client> {
  const next = new pg.Client({
    connectionString: data.url,
    application_name: "toolruntime-lease",
    connectionTimeoutMillis: data.timeoutMs,
    query_timeout: data.timeoutMs,
    keepAlive: true,
  });
  // A dropped connection fails the statement in flight; the next beat opens another.
  next.on("error", () => undefined);
  await next.connect();
  return next;
}

/** Renews the lease (or only reads the clock while the main thread is stuck), once. */
async function beat(): Promise<void> {
  const sentAt = Date.now();
  const stalledMs = sentAt - signals.mainBeatAt;
  const renew = stalledMs <= data.maxStallMs;
  if (!renew && !withheld) post({ kind: "withheld", stalledMs });
  withheld = !renew;
  client ??= await connect();
  const { rows } = await client.query<{ renewed: boolean; db_ms: number }>(
    `WITH renewed AS (
       UPDATE toolruntime.replicas SET lease_expires_at = now() + $2::interval
        WHERE $3 AND id = $1 AND lease_expires_at > now() RETURNING 1
     )
     SELECT EXISTS (SELECT 1 FROM renewed) AS renewed, extract(epoch FROM clock_timestamp())::float8 * 1000 AS db_ms`,
    [data.replicaId, lease, renew],
  );
  const answeredAt = Date.now();
  const row = rows[0] as { renewed: boolean; db_ms: number };
  if (renew && !row.renewed) {
    // Expired (the thread was cut off, or the main thread stuck): the runs may have been taken.
    // A new lease, and the main thread checks every run it holds before it trusts any. Its block
    // of admission slots went with the old lease (others may have taken the slots): it is dropped.
    await client.query(
      `WITH dropped AS (DELETE FROM toolruntime.slot_blocks WHERE replica = $1)
       INSERT INTO toolruntime.replicas (id, lease_expires_at) VALUES ($1, now() + $2::interval)
       ON CONFLICT (id) DO UPDATE SET lease_expires_at = excluded.lease_expires_at`,
      [data.replicaId, lease],
    );
    signals.leaseLosses += 1;
    post({ kind: "lost" });
  }
  if (renew) signals.leaseValidUntil = sentAt + data.leaseMs;
  signals.clockOffsetMs = row.db_ms - (sentAt + answeredAt) / 2;
  signals.storeAnsweredAt = answeredAt;
}

function setAvailable(next: boolean, reason: string): void {
  if (next === available) return;
  available = next;
  post({ kind: "available", available: next, reason });
}

async function loop(): Promise<void> {
  for (;;) {
    const started = Date.now();
    try {
      await beat();
      setAvailable(true, "");
      if (!ready) post({ kind: "ready" });
      ready = true;
    } catch (error) {
      const dropped = client;
      client = undefined;
      void dropped?.end().catch(() => undefined);
      setAvailable(false, error instanceof Error ? error.message : String(error));
    }
    const waitMs = Math.max(0, data.intervalMs - (Date.now() - started));
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}

void loop();
