import { resolveRunnerName, type RunnerSet } from "../../runner/runner-set.js";
import { checkToolName, ensure } from "../../registry/names.js";
import type { ActivationStore } from "../activation-store.js";
import type { Doorbell } from "./doorbell.js";
import type { Database } from "./open-database.js";
import { query } from "./transaction.js";

/** The channel every change of an activation rings (payload "runner/tool"; see migration 8). */
const activationsChannel = "toolruntime_activations";

/**
 * Activations on PostgreSQL, shared by every replica: a row per (runner, tool). The runner of this
 * process that serves a call is the view: its activation is set from the row before a run checks
 * it. The row of a tool removed from the registry is deleted with the removal (by the tool store).
 *
 * A call costs no round trip while nothing changed: an activation read from the store is kept as
 * confirmed until a change of it rings the doorbell, and is trusted only while the doorbell is
 * delivering (see Doorbell.delivering). So an activation made through any replica is seen by the
 * next call anywhere (what is not confirmed here is read from the store), and a deactivation
 * within a notification's delivery (at worst the doorbell's bound, 300 ms, when its connection is
 * silently cut).
 */
export function createPostgresActivationStore(
  database: Database,
  runners: RunnerSet,
  doorbell: Doorbell,
): ActivationStore {
  /** "runner/tool" of the activations read as active from the store since their last change. */
  const confirmed = new Set<string>();
  /** Counts the changes rung (and reconnections), so that a read overtaken by one is not kept. */
  let rings = 0;
  doorbell.listen(activationsChannel, (key) => {
    rings += 1;
    confirmed.delete(key);
  });
  doorbell.onReconnect(() => {
    rings += 1;
    confirmed.clear();
  });

  const syncFromStore = async (runner: string, toolName: string, key: string): Promise<void> => {
    const ringsBefore = rings;
    const { rows } = await query(database, "SELECT 1 FROM toolruntime.activations WHERE runner = $1 AND tool = $2", [
      runner,
      toolName,
    ]);
    const active = rows.length > 0;
    if (active && rings === ringsBefore) confirmed.add(key);
    if (active === runners.get(runner).isActive(toolName)) return;
    if (active) {
      // Mirrors another replica's activation; a tool unknown here is left for the run to report.
      try {
        runners.activate(runner, toolName);
      } catch {
        return;
      }
    } else {
      runners.deactivate(runner, toolName);
    }
  };

  return {
    async activate(runnerName, toolName) {
      // The local activation checks the name, the tool and the runner's limits first.
      const activation = runners.activate(runnerName, toolName);
      const inserted = await query(
        database,
        "INSERT INTO toolruntime.activations (runner, tool) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        [resolveRunnerName(runnerName), toolName],
      ).catch((error: unknown) => {
        if (!activation.alreadyActive) runners.deactivate(runnerName, toolName);
        throw error;
      });
      return { spec: activation.spec, alreadyActive: inserted.rowCount === 0 };
    },

    async deactivate(runnerName, toolName) {
      ensure(checkToolName(toolName));
      const deleted = await query(database, "DELETE FROM toolruntime.activations WHERE runner = $1 AND tool = $2", [
        resolveRunnerName(runnerName),
        toolName,
      ]);
      runners.deactivate(runnerName, toolName);
      return (deleted.rowCount ?? 0) > 0;
    },

    sync(runnerName, toolName) {
      const runner = resolveRunnerName(runnerName);
      if (checkToolName(toolName)) return; // the run itself reports the invalid name
      const key = `${runner}/${toolName}`;
      if (confirmed.has(key) && doorbell.delivering() && runners.get(runner).isActive(toolName)) return;
      return syncFromStore(runner, toolName, key);
    },
  };
}
