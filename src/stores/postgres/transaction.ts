import type pg from "pg";
import { isToolRuntimeError } from "../../errors/tool-runtime-error.js";
import {
  databaseUnavailable,
  isBrokenConnection,
  isDatabaseUnavailable,
  isDeadlinePassed,
  storeDeadlinePassed,
  storeTimedOut,
} from "./database-errors.js";
import type { StoreCall } from "../store-call.js";
import type { Database } from "./open-database.js";

/** A transaction's connection: each statement gets what is left of the operation's time. */
export interface TransactionClient {
  query<Row extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<Row>>;
}

/**
 * Runs `work` in a transaction on a pooled connection: COMMIT when it resolves, ROLLBACK when it
 * throws. The whole operation, waiting for a connection included, gets the database's operation
 * timeout or what is left before `call`'s deadline, whichever ends first (see {@link OperationTime}).
 * With a deadline, the database itself checks it in the message that commits, so a transaction held
 * up in the network past the deadline never commits afterwards. A domain error (ToolRuntimeError)
 * passes through; an unreachable database becomes UNAVAILABLE naming the store, a passed deadline
 * DEADLINE_EXCEEDED; anything else is rethrown as is (a bug, logged by the server).
 */
export async function inTransaction<T>(
  database: Database,
  work: (client: TransactionClient) => Promise<T>,
  call: StoreCall = {},
): Promise<T> {
  const time = new OperationTime(database, call);
  const client = await acquire(database, time);
  const acquiredAt = performance.now();
  let broken = false;
  try {
    const transaction: TransactionClient = {
      query: <Row extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
        client.query<Row>(time.statement(text, values)),
    };
    await transaction.query("BEGIN");
    const result = await work(transaction);
    await transaction.query(commitStatement(database, call));
    return result;
  } catch (error) {
    broken = isBrokenConnection(error);
    if (!broken) await client.query("ROLLBACK").catch(() => (broken = true));
    throw time.mapError(error);
  } finally {
    release(database, client, broken, acquiredAt);
  }
}

/** Runs one statement outside a transaction, with the time and error mapping of {@link inTransaction}. */
export async function query<Row extends pg.QueryResultRow>(
  database: Database,
  text: string,
  values: unknown[] = [],
  call: StoreCall = {},
): Promise<pg.QueryResult<Row>> {
  const time = new OperationTime(database, call);
  const client = await acquire(database, time);
  const acquiredAt = performance.now();
  let broken = false;
  try {
    return await client.query<Row>(time.statement(text, values));
  } catch (error) {
    broken = isBrokenConnection(error);
    throw time.mapError(error);
  } finally {
    release(database, client, broken, acquiredAt);
  }
}

/**
 * The call's deadline in the database's clock, as a timestamptz literal for a statement, or null
 * when the call has none: the lease keeper measures how far the database's clock is from ours.
 */
export function databaseDeadline(database: Database, call: StoreCall): string | null {
  if (call.deadline === undefined) return null;
  return new Date(call.deadline + database.signals.clockOffsetMs).toISOString();
}

/**
 * The time one store operation gets: the database's operation timeout, or less when the call's
 * deadline comes first. Each statement is given what is left (pg's `query_timeout`), so a
 * statement whose answer never comes (a partition) fails in time instead of hanging the call.
 */
class OperationTime {
  readonly #database: Database;
  readonly #endsAt: number;
  readonly #byDeadline: boolean;

  constructor(database: Database, call: StoreCall) {
    this.#database = database;
    const byTimeout = Date.now() + database.options.operationTimeoutMs;
    this.#byDeadline = call.deadline !== undefined && call.deadline < byTimeout;
    this.#endsAt = this.#byDeadline ? (call.deadline as number) : byTimeout;
  }

  /** Milliseconds left; throws the operation's timeout error when none is. */
  remainingMs(): number {
    const left = this.#endsAt - Date.now();
    if (left <= 0) throw this.expired();
    return left;
  }

  /** A statement with the time left as its read timeout. */
  statement(text: string, values: unknown[]): pg.QueryConfig {
    return { text, values, query_timeout: this.remainingMs() } as pg.QueryConfig;
  }

  /** The error a call gets when the operation's time ran out. */
  expired(): Error {
    const maskedUrl = this.#database.maskedUrl;
    return this.#byDeadline
      ? storeDeadlinePassed(maskedUrl)
      : storeTimedOut(maskedUrl, this.#database.options.operationTimeoutMs);
  }

  /** Maps a failure of the operation to what the call answers (see inTransaction). */
  mapError(error: unknown): unknown {
    if (isToolRuntimeError(error)) return error;
    if (isDeadlinePassed(error)) return storeDeadlinePassed(this.#database.maskedUrl);
    if (error instanceof Error && /Query read timeout/.test(error.message)) return this.expired();
    if (isDatabaseUnavailable(error)) return databaseUnavailable(this.#database.maskedUrl, error);
    return error;
  }
}

/**
 * A pooled connection within the operation's time. A checked-out connection has no listener of
 * pg-pool's: one is added, since a connection that drops mid-operation emits "error", which would
 * otherwise end the process (the statement in flight fails with the same error, and is mapped).
 */
async function acquire(database: Database, time: OperationTime): Promise<pg.PoolClient> {
  const waitMs = time.remainingMs();
  const connecting = database.pool.connect();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(time.expired()), waitMs);
  });
  try {
    const client = await Promise.race([connecting, timedOut]);
    client.on("error", ignoreError);
    return client;
  } catch (error) {
    // A connection that comes after the wait goes back to the pool unused.
    connecting.then((late) => late.release(), ignoreError);
    throw time.mapError(error);
  } finally {
    clearTimeout(timer);
  }
}

function release(database: Database, client: pg.PoolClient, broken: boolean, acquiredAt: number): void {
  database.pressure.held(performance.now() - acquiredAt);
  client.off("error", ignoreError);
  // A connection that failed is destroyed rather than returned to the pool.
  client.release(broken);
}

/**
 * The message that commits: with a deadline, the database checks it in the same message, so a
 * COMMIT held up in the network past the deadline fails the check and rolls back instead.
 */
function commitStatement(database: Database, call: StoreCall): string {
  const deadline = databaseDeadline(database, call);
  return deadline === null ? "COMMIT" : `SELECT toolruntime.check_deadline('${deadline}'::timestamptz); COMMIT`;
}

function ignoreError(): void {
  // The failure reaches the statement in flight, or the next one; see acquire.
}
