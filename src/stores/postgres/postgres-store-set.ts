import type { RegistrySet } from "../../registry/registry-set.js";
import type { RunnerSet } from "../../runner/runner-set.js";
import type { StoreSet } from "../store-set.js";
import { openDoorbell } from "./doorbell.js";
import { migrate } from "./migrate.js";
import { openDatabase } from "./open-database.js";
import { createPostgresActivationStore } from "./postgres-activation-store.js";
import type { PostgresStoreOptions } from "./postgres-options.js";
import { createPostgresRunStore } from "./postgres-run-store.js";
import { createPostgresToolStore } from "./postgres-tool-store.js";
import { watchAvailability } from "./watch-availability.js";

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
  });
  const doorbell = openDoorbell(url);
  try {
    await migrate(database.pool);
    const runs = await createPostgresRunStore(database, doorbell, options);
    const tools = await createPostgresToolStore(database, registries, doorbell, runs.replicaId, options);
    const availability = watchAvailability(database, { intervalMs: options.availabilityIntervalMs ?? 1000 });
    return {
      tools,
      activations: createPostgresActivationStore(database, runners),
      runs,
      description: database.maskedUrl,
      available: () => availability.available,
      onAvailabilityChange: (listener) => availability.onChange(listener),
      async close() {
        availability.close();
        await runs.close();
        await tools.close();
        await doorbell.close();
        await database.pool.end();
      },
    };
  } catch (error) {
    await doorbell.close();
    await database.pool.end().catch(() => undefined);
    throw new Error(`store ${database.maskedUrl}: ${(error as Error).message}`, { cause: error });
  }
}
