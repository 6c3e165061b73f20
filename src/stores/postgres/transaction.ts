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
import type { GateTurn } from "./connection-gate.js";
import type { Database } from "./open-database.js";

/** A transaction's connection: each statement gets what is left of the operation's time. */
export interface TransactionClient {
  query<Row extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<Row>>;
}

/**
 * Runs `work` in a transaction on a pooled connection: COMMIT when it resolves, ROLLBACK when it
 * throws. The whole operation, waiting for a connection included, gets the database's operation
 * timeout or what is left before `call`'s deadline, whichever ends first (see {@link OperationTime}).
 * The database itself checks that end in the message that commits, so a transaction held up in the
 * network past it never commits afterwards. A domain error (ToolRuntimeError)
 * passes through; an unreachable database becomes UNAVAILABLE naming the store, a passed deadline
 * DEADLINE_EXCEEDED; anything else is rethrown as is (a bug, logged by the server).
 */
export async function inTransaction<T>(
  database: Database,
  work: (client: TransactionClient) => Promise<T>,
  call: StoreCall | OperationTime = {},
): Promise<T> {
  const time = OperationTime.of(database, call);
  const held = await acquire(database, time);
  const client = held.client;
  let broken = false;
  try {
    const transaction: TransactionClient = {
      query: <Row extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
        client.query<Row>(time.statement(text, values)),
    };
    await transaction.query("BEGIN");
    const result = await work(transaction);
    await transaction.query(`SELECT toolruntime.check_deadline('${time.databaseEnd()}'::timestamptz); COMMIT`);
    return result;
  } catch (error) {
    broken = isBrokenConnection(error);
    if (!broken) await client.query("ROLLBACK").catch(() => (broken = true));
    throw time.mapError(error);
  } finally {
    release(held, broken);
  }
}

/** Runs one statement outside a transaction, with the time and error mapping of {@link inTransaction}. */
export async function query<Row extends pg.QueryResultRow>(
  database: Database,
  text: string,
  values: unknown[] = [],
  call: StoreCall | OperationTime = {},
): Promise<pg.QueryResult<Row>> {
  const time = OperationTime.of(database, call);
  const held = await acquire(database, time);
  let broken = false;
  try {
    return await held.client.query<Row>(time.statement(text, values));
  } catch (error) {
    broken = isBrokenConnection(error);
    throw time.mapError(error);
  } finally {
    release(held, broken);
  }
}

/**
 * The time one store operation gets: the database's operation timeout, or less when the call's
 * deadline comes first. Each statement is given what is left (pg's `query_timeout`), so a
 * statement whose answer never comes (a partition) fails in time instead of hanging the call; and
 * a write checks the end in the database as its last step (see check_deadline), so a write given
 * up on never commits afterwards. An operation of several statements (a retried creation) shares one.
 */
export class OperationTime {
  readonly #database: Database;
  readonly #endsAt: number;
  readonly #byDeadline: boolean;
  /**
   * The tool of the run this operation creates, while it is new work (see ConnectionGate); the
   * creator clears it once a first statement was sent, as what follows may have to finish it.
   */
  newRun: string | undefined;

  constructor(database: Database, call: StoreCall = {}, newRun?: string) {
    this.#database = database;
    this.newRun = newRun;
    const byTimeout = Date.now() + database.options.operationTimeoutMs;
    this.#byDeadline = call.deadline !== undefined && call.deadline < byTimeout;
    this.#endsAt = this.#byDeadline ? (call.deadline as number) : byTimeout;
  }

  /** `call` when it is an operation's time already, else a new one for it. */
  static of(database: Database, call: StoreCall | OperationTime): OperationTime {
    return call instanceof OperationTime ? call : new OperationTime(database, call);
  }

  /**
   * The end in the database's clock, as a timestamptz literal for a statement: the lease keeper
   * measures how far the database's clock is from this process's.
   */
  databaseEnd(): string {
    return new Date(this.#endsAt + this.#database.signals.clockOffsetMs).toISOString();
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
    if (isDeadlinePassed(error)) return this.expired();
    if (error instanceof Error && /Query read timeout/.test(error.message)) return this.expired();
    if (isDatabaseUnavailable(error)) return databaseUnavailable(this.#database.maskedUrl, error);
    return error;
  }
}

/** A pooled connection, and the gate's turn it was taken on. */
interface Held {
  readonly client: pg.PoolClient;
  readonly turn: GateTurn;
}

/**
 * A pooled connection within the operation's time: first a turn at the replica's connection gate
 * (work under way before new runs; see ConnectionGate), then the connection. A checked-out
 * connection has no listener of pg-pool's: one is added, since a connection that drops
 * mid-operation emits "error", which would otherwise end the process (the statement in flight
 * fails with the same error, and is mapped).
 */
async function acquire(database: Database, time: OperationTime): Promise<Held> {
  const waitMs = time.remainingMs();
  const expiry = new AbortController();
  const timer = setTimeout(() => expiry.abort(time.expired()), waitMs);
  let turn: GateTurn | undefined;
  try {
    turn = await database.gate.enter(time.newRun !== undefined, time.newRun ?? "", expiry.signal, waitMs);
    const connecting = database.pool.connect();
    const expired = new Promise<never>((_, reject) => {
      if (expiry.signal.aborted) reject(expiry.signal.reason as Error);
      expiry.signal.addEventListener("abort", () => reject(expiry.signal.reason as Error), { once: true });
    });
    try {
      const client = await Promise.race([connecting, expired]);
      client.on("error", ignoreError);
      return { client, turn };
    } catch (error) {
      // A connection that comes after the wait goes back to the pool unused.
      connecting.then((late) => late.release(), ignoreError);
      throw error;
    }
  } catch (error) {
    turn?.release();
    throw time.mapError(error);
  } finally {
    clearTimeout(timer);
  }
}

function release(held: Held, broken: boolean): void {
  held.client.off("error", ignoreError);
  // A connection that failed is destroyed rather than returned to the pool.
  held.client.release(broken);
  held.turn.release();
}

function ignoreError(): void {
  // The failure reaches the statement in flight, or the next one; see acquire.
}
