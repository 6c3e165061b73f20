import pg from "pg";
import { maskUrl } from "./mask-url.js";
import { ReplicaSignals } from "./replica-signals.js";
import { ConnectionGate } from "./connection-gate.js";

/** Options of {@link openDatabase}. */
export interface DatabaseOptions {
  /**
   * Most connections the pool opens. Default 16. A replica opens two more: the doorbell's LISTEN
   * connection and the lease keeper's.
   */
  readonly maxConnections?: number;
  /**
   * Longest one store operation may take, waiting for a connection included, before the call
   * that needs it fails with UNAVAILABLE naming the store (sooner when the call's deadline comes
   * first), in milliseconds. Default 5,000.
   */
  readonly operationTimeoutMs?: number;
  /**
   * Longest a new run waits for a connection behind work under way before it is refused with
   * RESOURCE_EXHAUSTED, in milliseconds: a quarter of its operation's time, within these bounds.
   * Default 100 to 250 (see ConnectionGate).
   */
  readonly newRunWaitMs?: { readonly min: number; readonly max: number };
  /** Longest a statement may run before the server cancels it, in milliseconds. Default 30,000. */
  readonly statementTimeoutMs?: number;
  /**
   * Longest a transaction may sit idle before the server ends it, in milliseconds. Default 5,000.
   * A replica paused (or cut off) mid-transaction would otherwise keep its locks, and the others
   * could not take over its runs or admit any run.
   */
  readonly idleInTransactionTimeoutMs?: number;
}

/** A connection pool to the store's database, with its URL masked for messages. */
export interface Database {
  readonly pool: pg.Pool;
  /** The store URL with its password replaced by "***". */
  readonly maskedUrl: string;
  /** The full URL, for the dedicated LISTEN connection. */
  readonly url: string;
  readonly options: Required<DatabaseOptions>;
  /** What the lease keeper measured: the database's clock offset, among others. */
  readonly signals: ReplicaSignals;
  /** Who gets the pool's connections first (see ConnectionGate). */
  readonly gate: ConnectionGate;
}

/**
 * Opens a pool to `url` (postgres://user:password@host:port/db) and checks, once, that the database
 * answers. Rejects with an Error naming the masked URL and the reason when it does not, so a
 * misconfigured replica fails at start rather than on its first call.
 */
export async function openDatabase(url: string, options: DatabaseOptions = {}): Promise<Database> {
  const resolved: Required<DatabaseOptions> = {
    maxConnections: options.maxConnections ?? 16,
    operationTimeoutMs: options.operationTimeoutMs ?? 5000,
    newRunWaitMs: options.newRunWaitMs ?? { min: 100, max: 250 },
    statementTimeoutMs: options.statementTimeoutMs ?? 30_000,
    idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs ?? 5000,
  };
  const maskedUrl = maskUrl(url);
  let pool: pg.Pool;
  try {
    pool = new pg.Pool({
      connectionString: url,
      max: resolved.maxConnections,
      connectionTimeoutMillis: resolved.operationTimeoutMs,
      // A connection cut off without a reset (a partition) is found dead by the kernel, not kept.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      statement_timeout: resolved.statementTimeoutMs,
      idle_in_transaction_session_timeout: resolved.idleInTransactionTimeoutMs,
      application_name: "toolruntime",
    });
  } catch (error) {
    throw new Error(`store ${maskedUrl} is not a valid PostgreSQL URL: ${(error as Error).message}`, {
      cause: error,
    });
  }
  // An idle client whose connection drops emits "error" on the pool; without a listener that would
  // crash the process. The client is discarded and the next query opens a new one.
  pool.on("error", () => undefined);
  try {
    await pool.query("SELECT 1");
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new Error(`cannot reach the store at ${maskedUrl}: ${(error as Error).message}`, { cause: error });
  }
  return {
    pool,
    maskedUrl,
    url,
    options: resolved,
    signals: new ReplicaSignals(),
    gate: new ConnectionGate({ connections: resolved.maxConnections, newWorkWaitMs: resolved.newRunWaitMs }),
  };
}
