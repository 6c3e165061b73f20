import type pg from "pg";
import { isToolRuntimeError } from "../../errors/tool-runtime-error.js";
import { databaseUnavailable, isDatabaseUnavailable } from "./database-errors.js";
import type { Database } from "./open-database.js";

/**
 * Runs `work` in a transaction on a pooled connection: COMMIT when it resolves, ROLLBACK when it
 * throws. A domain error (ToolRuntimeError) passes through; an unreachable database becomes
 * UNAVAILABLE naming the store; anything else is rethrown as is (a bug, logged by the server).
 */
export async function inTransaction<T>(database: Database, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await database.pool.connect();
  } catch (error) {
    throw databaseUnavailable(database.maskedUrl, error);
  }
  let broken = false;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    broken = isDatabaseUnavailable(error);
    if (!broken) await client.query("ROLLBACK").catch(() => (broken = true));
    if (isToolRuntimeError(error)) throw error;
    if (broken) throw databaseUnavailable(database.maskedUrl, error);
    throw error;
  } finally {
    // A connection that failed is destroyed rather than returned to the pool.
    client.release(broken);
  }
}

/** Runs one query outside a transaction, with the same error mapping as {@link inTransaction}. */
export async function query<Row extends pg.QueryResultRow>(
  database: Database,
  text: string,
  values: unknown[] = [],
): Promise<pg.QueryResult<Row>> {
  try {
    return await database.pool.query<Row>(text, values);
  } catch (error) {
    if (isDatabaseUnavailable(error)) throw databaseUnavailable(database.maskedUrl, error);
    throw error;
  }
}
