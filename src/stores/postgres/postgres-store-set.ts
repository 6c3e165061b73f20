import type { RegistrySet } from "../../registry/registry-set.js";
import type { RunnerSet } from "../../runner/runner-set.js";
import type { RunStore } from "../run-store.js";
import type { StoreSet } from "../store-set.js";
import { openDoorbell } from "./doorbell.js";
import { migrate } from "./migrate.js";
import { openDatabase } from "./open-database.js";
import { createPostgresActivationStore } from "./postgres-activation-store.js";
import type { PostgresStoreOptions } from "./postgres-options.js";
import { createPostgresRunStore } from "./postgres-run-store.js";
import { createPostgresToolStore } from "./postgres-tool-store.js";

/**
 * Opens the stores on the PostgreSQL database at `url`: connects (rejecting with an Error that
 * names the masked URL when it cannot), applies the schema's migrations, loads the default
 * registry, and starts following the other replicas' writes.
 */
export async function openPostgresStoreSet(
  url: string,
  registries: RegistrySet,
  runners: RunnerSet,
  options: PostgresStoreOptions = {},
): Promise<StoreSet> {
  // A paused replica's open transaction is ended well within a lease, so its locks block nobody.
  const database = await openDatabase(url, {
    idleInTransactionTimeoutMs: Math.max(1000, Math.floor((options.leaseMs ?? 10_000) / 2)),
    ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
    ...(options.operationTimeoutMs === undefined ? {} : { operationTimeoutMs: options.operationTimeoutMs }),
  });
  const doorbell = openDoorbell(url);
  let runs: RunStore | undefined;
  try {
    await migrate(database.pool);
    const opened = await createPostgresRunStore(database, doorbell, options);
    runs = opened;
    const lease = opened.lease;
    const tools = await createPostgresToolStore(database, registries, doorbell, runs.replicaId, options);
    return {
      tools,
      activations: createPostgresActivationStore(database, runners, doorbell),
      runs: opened,
      description: database.maskedUrl,
      // The lease keeper's own connection: a pool saturated by load never reads as a lost store.
      available: () => lease.available(),
      onAvailabilityChange: (listener) => lease.onAvailabilityChange(listener),
      async close() {
        await opened.close();
        await tools.close();
        await doorbell.close();
        await database.pool.end();
      },
    };
  } catch (error) {
    await runs?.close().catch(() => undefined);
    await doorbell.close();
    await database.pool.end().catch(() => undefined);
    throw new Error(`store ${database.maskedUrl}: ${(error as Error).message}`, { cause: error });
  }
}
