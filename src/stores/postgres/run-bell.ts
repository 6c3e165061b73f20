import type { Database } from "./open-database.js";
import { query } from "./transaction.js";

/** Run ids per notification: a payload stays well under PostgreSQL's 8,000 bytes. */
const idsPerRing = 200;

/**
 * The doorbell of runs that changed, rung once per group of writes rather than in each write's
 * transaction: a transaction that sends NOTIFY holds a lock of the whole server through its
 * commit, so a NOTIFY in every run's write made the commits of all runs go one at a time. Here
 * the ids written while a ring is being sent go together in the next one (comma-separated), in a
 * statement of its own after their commits. A lost ring costs latency only: readers also poll.
 */
export class RunBell {
  readonly #database: Database;
  readonly #channel: string;
  readonly #pending = new Set<string>();
  #sending = false;

  constructor(database: Database, channel: string) {
    this.#database = database;
    this.#channel = channel;
  }

  /** Rings for `ids` (soon, with whatever else is written meanwhile). */
  ring(ids: Iterable<string>): void {
    for (const id of ids) this.#pending.add(id);
    if (!this.#sending && this.#pending.size > 0) void this.#send();
  }

  async #send(): Promise<void> {
    this.#sending = true;
    try {
      while (this.#pending.size > 0) {
        const ids = [...this.#pending];
        this.#pending.clear();
        for (let start = 0; start < ids.length; start += idsPerRing) {
          const payload = ids.slice(start, start + idsPerRing).join(",");
          await query(this.#database, "SELECT pg_notify($1, $2)", [this.#channel, payload]).catch(() => undefined);
        }
      }
    } finally {
      this.#sending = false;
    }
  }
}

/** The run ids a ring's payload names ("" when it names many: re-read all followed). */
export function ringIds(payload: string): string[] {
  return payload.split(",");
}
