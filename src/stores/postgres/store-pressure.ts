import { ErrorType, ToolRuntimeError } from "../../errors/tool-runtime-error.js";
import { quote } from "../../registry/names.js";
import type { Database } from "./open-database.js";

/**
 * How busy the replica's connections to the store are: the operations waiting for a connection,
 * and how long an operation has lately held one (a moving average). New runs are refused while
 * more operations wait than the pool has connections, so that past the store's capacity the
 * replica sheds new work at once (RESOURCE_EXHAUSTED with a retry delay) instead of queueing it
 * until every call misses its deadline; runs already admitted keep their connections' turns.
 */
export class StorePressure {
  /** Moving average of the time an operation holds a connection, in milliseconds. */
  #holdMs = 5;

  /** Records that an operation held a connection for `ms`. */
  held(ms: number): void {
    // About the last twenty operations weigh.
    this.#holdMs += (ms - this.#holdMs) / 20;
  }

  /**
   * Throws RESOURCE_EXHAUSTED, naming the tool and when to retry, when the pool of `database` has
   * more operations waiting for a connection than it has connections.
   */
  checkRoomForNewRun(database: Database, toolName: string): void {
    const waiting = database.pool.waitingCount;
    const connections = database.options.maxConnections;
    if (waiting < connections) return;
    // Time for the operations waiting now to go through, at the recent pace.
    const retryAfterMs = Math.round(Math.min(5000, Math.max(50, ((waiting + 1) / connections) * this.#holdMs * 4)));
    throw new ToolRuntimeError(
      "RESOURCE_EXHAUSTED",
      ErrorType.ResourceExhausted,
      `run of ${quote(toolName)} not started: this replica's ${connections} connections to the store are all busy and ${waiting} operations wait for one; retry in ${retryAfterMs} ms or on another replica`,
      toolName,
      retryAfterMs,
    );
  }
}
