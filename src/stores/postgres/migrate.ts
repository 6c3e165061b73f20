import type pg from "pg";
import { migrations as allMigrations, type Migration } from "./schema.js";

/**
 * A lock key of our own (any constant works; this one spells "toolrt" in ASCII) so that replicas
 * starting at once migrate one after the other.
 */
const migrationLockKey = 0x746f6f6c7274;

/**
 * Brings the database's `toolruntime` schema up to the latest migration and returns the versions
 * it applied. Safe when several replicas start at once: they take a session advisory lock in turn,
 * and each applies only what is still missing. Each migration runs in its own transaction, so a
 * failed one leaves the schema at the previous version. Rejects when the database holds a newer
 * schema than this server knows (a newer release migrated it): running old code against it could
 * corrupt data.
 */
export async function migrate(pool: pg.Pool, migrations: readonly Migration[] = allMigrations): Promise<number[]> {
  const client = await pool.connect();
  // A connection that drops while checked out emits "error": the statement in flight fails with it.
  const ignore = (): void => undefined;
  client.on("error", ignore);
  let failed = false;
  try {
    await client.query("SELECT pg_advisory_lock($1)", [migrationLockKey]);
    try {
      await client.query("CREATE SCHEMA IF NOT EXISTS toolruntime");
      await client.query(
        `CREATE TABLE IF NOT EXISTS toolruntime.schema_migrations (
           version integer PRIMARY KEY,
           name text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const applied = new Set(
        (await client.query<{ version: number }>("SELECT version FROM toolruntime.schema_migrations")).rows.map(
          (row) => row.version,
        ),
      );
      const latestKnown = Math.max(0, ...migrations.map((migration) => migration.version));
      const newest = Math.max(0, ...applied);
      if (newest > latestKnown) {
        throw new Error(
          `the store's schema is at version ${newest}, newer than this server's ${latestKnown}: upgrade this server`,
        );
      }
      const done: number[] = [];
      for (const migration of migrations) {
        if (applied.has(migration.version)) continue;
        await client.query("BEGIN");
        try {
          await client.query(migration.sql);
          await client.query("INSERT INTO toolruntime.schema_migrations (version, name) VALUES ($1, $2)", [
            migration.version,
            migration.name,
          ]);
          await client.query("COMMIT");
        } catch (error) {
          await client.query("ROLLBACK");
          throw new Error(`migration ${migration.version} (${migration.name}) failed: ${(error as Error).message}`, {
            cause: error,
          });
        }
        done.push(migration.version);
      }
      return done;
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [migrationLockKey]);
    }
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    client.off("error", ignore);
    client.release(failed);
  }
}
