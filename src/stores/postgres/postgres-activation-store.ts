import { resolveRunnerName, type RunnerSet } from "../../runner/runner-set.js";
import { checkToolName, ensure } from "../../registry/names.js";
import type { ActivationStore } from "../activation-store.js";
import type { Database } from "./open-database.js";
import { query } from "./transaction.js";

/**
 * Activations on PostgreSQL, shared by every replica: a row per (runner, tool). The runner of this
 * process that serves a call is the view: its activation is set from the row before a run checks
 * it. The row of a tool removed from the registry is deleted with the removal (by the tool store).
 */
export function createPostgresActivationStore(database: Database, runners: RunnerSet): ActivationStore {
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

    async sync(runnerName, toolName) {
      const runner = resolveRunnerName(runnerName);
      if (checkToolName(toolName)) return; // the run itself reports the invalid name
      const { rows } = await query(database, "SELECT 1 FROM toolruntime.activations WHERE runner = $1 AND tool = $2", [
        runner,
        toolName,
      ]);
      const active = rows.length > 0;
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
    },
  };
}
