import { toBinary } from "@bufbuild/protobuf";
import { ExecutionSchema, ExecutionState, type Execution } from "../../../gen/toolruntime/v1/execution_pb.js";
import { RunEventSchema, type RunEvent } from "../../../gen/toolruntime/v1/run_event_pb.js";
import type { RunCreation, RunFence } from "../run-store.js";
import type { StoreCall } from "../store-call.js";
import { storeDeadlinePassed } from "./database-errors.js";
import type { Database } from "./open-database.js";
import { query } from "./transaction.js";

const liveStates = [ExecutionState.AWAITING_APPROVAL, ExecutionState.QUEUED, ExecutionState.RUNNING];

/** One run's flush waiting for its group. */
interface PendingFlush {
  /** When it was asked for (performance.now()). */
  readonly askedAt: number;
  readonly fence: RunFence;
  readonly events: readonly RunEvent[];
  readonly execution: Execution;
  /** The run, when this flush creates it (see RunStore.flush). */
  readonly creation: RunCreation | undefined;
  /** When the creating call's deadline passes (ms since the epoch, this process's clock). */
  readonly deadline: number | undefined;
  readonly resolve: (written: boolean) => void;
  readonly reject: (error: unknown) => void;
}

/** What a written group tells its store. */
export interface FlushedGroup {
  /** The runs whose flush was written. */
  readonly written: readonly string[];
  /** Whether some run of the group ended holding a slot of the store's (given back with it). */
  readonly slotsFreed: boolean;
}

/** How long a group may be in flight before the flushes behind it open another lane, in ms. */
const heldUpMs = 25;

/**
 * Writes the flushes of many runs in one statement, one transaction and one WAL flush (group
 * commit): a flush asked for while no group is being written goes at once (so a lone run waits for
 * nothing), and every flush asked for while one is goes in the next group, at most `maxGroup` runs
 * per statement. A group held up for more than 25 ms (a lock, a slow commit) lets the flushes
 * behind it go in a group of their own, up to `maxLanes` groups at once: one lane at a time made
 * every run of the replica wait behind a group waiting on a lock (under twice the capacity the OK
 * rate fell to 0.4), while four lanes from the start split the load into groups a fraction of the
 * size, each a commit (December 7: 0.24 commits per read-only run and 2,400 runs/s against 0.07
 * and 3,000 with one lane). Each caller is answered once the commit that holds its write is
 * done: true when written, false when its fence no longer held (another replica took the run, or
 * this replica's lease expired), or the group's error. A run that ends gives its admission slot
 * back in the same write. The doorbell is not rung here: see `afterWrite`.
 */
export class GroupFlush {
  readonly #database: Database;
  readonly #maxGroup: number;
  readonly #afterWrite: (group: FlushedGroup) => void;
  readonly #maxLanes: number;
  #pending: PendingFlush[] = [];
  /** Lanes writing groups now, each on a connection of its own. */
  #lanes = 0;
  /** When each group being written was sent (ms since the epoch), and when its oldest write was asked for. */
  readonly #inFlight = new Set<{ readonly sentAt: number; readonly askedAt: number }>();
  #recheck: NodeJS.Timeout | undefined;

  constructor(database: Database, afterWrite: (group: FlushedGroup) => void, maxGroup = 256, maxLanes = 4) {
    this.#database = database;
    this.#afterWrite = afterWrite;
    this.#maxGroup = maxGroup;
    this.#maxLanes = maxLanes;
  }

  /** Writes one run's new events and record under `fence` (creating it with `creation`); see the class. */
  flush(
    fence: RunFence,
    events: readonly RunEvent[],
    execution: Execution,
    creation?: RunCreation,
    call: StoreCall = {},
  ): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#pending.push({
        askedAt: performance.now(),
        fence,
        events,
        execution,
        creation,
        deadline: call.deadline,
        resolve,
        reject,
      });
      this.#openLane();
    });
  }

  /**
   * How long the oldest write not committed yet has waited, in milliseconds (0 when none waits),
   * whether it is still to be sent or in a group being written, and how many are not sent yet.
   */
  backlog(): { waitedMs: number; writes: number } {
    let oldest = this.#pending[0]?.askedAt ?? Infinity;
    for (const group of this.#inFlight) oldest = Math.min(oldest, group.askedAt);
    return { waitedMs: oldest === Infinity ? 0 : performance.now() - oldest, writes: this.#pending.length };
  }

  /** Starts a lane when none writes, or when every group in flight is held up (see the class). */
  #openLane(): void {
    if (this.#pending.length === 0 || this.#lanes >= this.#maxLanes) return;
    if (this.#lanes === 0) {
      void this.#writeGroups(false);
      return;
    }
    let youngest = 0;
    for (const group of this.#inFlight) youngest = Math.max(youngest, group.sentAt);
    // A lane between two groups takes the pending flushes itself.
    if (this.#inFlight.size < this.#lanes) return;
    const heldUpFor = Date.now() - youngest;
    if (heldUpFor >= heldUpMs) {
      void this.#writeGroups(true);
      return;
    }
    if (this.#recheck !== undefined) return;
    this.#recheck = setTimeout(() => {
      this.#recheck = undefined;
      this.#openLane();
    }, heldUpMs - heldUpFor);
  }

  /**
   * One lane: writes groups while flushes wait; an `extra` lane (opened past a held-up group)
   * writes one group and leaves, so that groups grow back once nothing is held up. The runs of two
   * groups are never the same (a run has one flush in flight at a time), so lanes never wait for
   * each other.
   */
  async #writeGroups(extra: boolean): Promise<void> {
    this.#lanes += 1;
    try {
      for (let first = true; this.#pending.length > 0 && (first || !extra); first = false) {
        const group = this.#pending.splice(0, this.#maxGroup);
        const sent = { sentAt: Date.now(), askedAt: group[0]?.askedAt ?? performance.now() };
        this.#inFlight.add(sent);
        try {
          const { written, slotsFreed } = await this.#writeRetried(group).finally(() => this.#inFlight.delete(sent));
          const ids = new Set(written);
          const now = Date.now();
          for (const flush of group) {
            // A creation refused past its call's deadline is that call's timeout, not a lost fence.
            const late = !ids.has(flush.fence.id) && flush.deadline !== undefined && now > flush.deadline;
            if (flush.creation && late) flush.reject(storeDeadlinePassed(this.#database.maskedUrl));
            else flush.resolve(ids.has(flush.fence.id));
          }
          this.#afterWrite({ written, slotsFreed });
        } catch (error) {
          for (const flush of group) flush.reject(error);
        }
      }
    } finally {
      this.#lanes -= 1;
      // Flushes that came while an extra lane wrote its one group are not left waiting.
      this.#openLane();
    }
  }

  /**
   * Writes a group, again when the database chose it as the victim of a deadlock or a serialization
   * failure (a group's writes can be repeated with the same outcome).
   */
  async #writeRetried(group: PendingFlush[]): Promise<{ written: string[]; slotsFreed: boolean }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#write(group);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if ((code !== "40P01" && code !== "40001") || attempt >= 3) throw error;
      }
    }
  }

  /**
   * One statement: the runs created by their first flush (while their owner's lease holds; once,
   * when a retried group finds them), the records of the others whose fence holds (owner, epoch
   * and a live lease), their events under their own sequence numbers (each once: a retried flush
   * adds only what is missing), the slots of the runs that ended given back. Rows are locked in id
   * order, as every group of every replica locks them, so two groups never wait for each other in
   * a cycle. A created row is not seen by the update (one snapshot): it is written whole.
   */
  async #write(group: PendingFlush[]): Promise<{ written: string[]; slotsFreed: boolean }> {
    const runs = [...group].sort((a, b) => (a.fence.id < b.fence.id ? -1 : 1));
    const events = runs.flatMap((flush) => flush.events.map((event) => ({ id: flush.fence.id, event })));
    const creations = runs.filter((flush) => flush.creation !== undefined);
    // Records and events go as one buffer each, cut by offsets in the database: a bytea[] is sent
    // as text, every byte hex-escaped here and parsed there.
    const records = packed(runs.map((flush) => toBinary(ExecutionSchema, flush.execution)));
    const packedEvents = packed(events.map(({ event }) => toBinary(RunEventSchema, event)));
    const { rows } = await query<{ id: string; freed: boolean }>(
      this.#database,
      `WITH input AS (
         SELECT t.id, t.owner, t.epoch, substring($4::bytea FROM t.record_at + 1 FOR t.record_length) AS record,
                t.state, t.last_sequence
           FROM unnest($1::uuid[], $2::text[], $3::integer[], $17::integer[], $18::integer[], $5::smallint[],
                       $6::integer[])
                  AS t(id, owner, epoch, record_at, record_length, state, last_sequence)
       ), created AS (
         INSERT INTO toolruntime.executions
           (id, tool_name, caller, state, live, retry_safe, record, request, owner, last_sequence, finished_at)
         SELECT i.id, n.tool_name, n.caller, i.state, i.state = ANY($10::smallint[]), n.retry_safe, i.record,
                n.request::jsonb, i.owner, i.last_sequence,
                CASE WHEN i.state = ANY($10::smallint[]) THEN NULL ELSE now() END
           FROM unnest($11::uuid[], $12::text[], $13::text[], $14::boolean[], $15::text[], $16::timestamptz[])
                  AS n(id, tool_name, caller, retry_safe, request, deadline)
           JOIN input i ON i.id = n.id
          WHERE EXISTS (SELECT 1 FROM toolruntime.replicas r WHERE r.id = i.owner AND r.lease_expires_at > now())
            AND (n.deadline IS NULL OR clock_timestamp() <= n.deadline)
          ORDER BY i.id
         ON CONFLICT (id) DO NOTHING
         RETURNING id
       ), locked AS (
         SELECT e.id, e.slot FROM toolruntime.executions e JOIN input i ON e.id = i.id
          WHERE e.owner = i.owner AND e.epoch = i.epoch
            AND EXISTS (SELECT 1 FROM toolruntime.replicas r WHERE r.id = i.owner AND r.lease_expires_at > now())
          ORDER BY e.id FOR UPDATE OF e
       ), updated AS (
         UPDATE toolruntime.executions e
            SET record = i.record, state = i.state, live = i.state = ANY($10::smallint[]),
                last_sequence = greatest(e.last_sequence, i.last_sequence),
                slot = CASE WHEN i.state = ANY($10::smallint[]) THEN e.slot ELSE 'none' END,
                finished_at = CASE WHEN i.state = ANY($10::smallint[]) THEN NULL ELSE coalesce(e.finished_at, now()) END
           FROM input i
          WHERE e.id = i.id AND e.id IN (SELECT id FROM locked)
         RETURNING e.id
       ), inserted AS (
         INSERT INTO toolruntime.execution_events (execution_id, sequence, event)
         SELECT v.id, v.sequence, substring($9::bytea FROM v.event_at + 1 FOR v.event_length)
           FROM unnest($7::uuid[], $8::integer[], $19::integer[], $20::integer[])
                  AS v(id, sequence, event_at, event_length)
          WHERE v.id IN (SELECT id FROM updated UNION ALL SELECT id FROM created)
         ON CONFLICT (execution_id, sequence) DO NOTHING
         RETURNING 1
       )
       SELECT u.id::text, l.slot <> 'none' AND NOT (i.state = ANY($10::smallint[])) AS freed
         FROM updated u JOIN locked l ON l.id = u.id JOIN input i ON i.id = u.id
       UNION ALL SELECT id::text, false FROM created`,
      [
        runs.map((flush) => flush.fence.id),
        runs.map((flush) => flush.fence.owner),
        runs.map((flush) => flush.fence.epoch),
        records.bytes,
        runs.map((flush) => flush.execution.state),
        runs.map((flush) => {
          const last = flush.events.at(-1);
          return last === undefined ? 0 : Number(last.sequence);
        }),
        events.map(({ id }) => id),
        events.map(({ event }) => Number(event.sequence)),
        packedEvents.bytes,
        liveStates,
        creations.map((flush) => flush.fence.id),
        creations.map((flush) => flush.execution.toolName),
        creations.map((flush) => flush.execution.caller),
        creations.map((flush) => flush.creation?.retrySafe ?? false),
        creations.map((flush) => JSON.stringify(flush.creation?.request)),
        creations.map((flush) =>
          flush.deadline === undefined
            ? null
            : new Date(flush.deadline + this.#database.signals.clockOffsetMs).toISOString(),
        ),
        records.at,
        records.lengths,
        packedEvents.at,
        packedEvents.lengths,
      ],
    );
    return { written: rows.map((row) => row.id), slotsFreed: rows.some((row) => row.freed) };
  }
}

/** Messages in one buffer, each at its offset with its length. */
function packed(messages: readonly Uint8Array[]): { bytes: Buffer; at: number[]; lengths: number[] } {
  const at: number[] = [];
  const lengths: number[] = [];
  let offset = 0;
  for (const message of messages) {
    at.push(offset);
    lengths.push(message.length);
    offset += message.length;
  }
  return { bytes: Buffer.concat(messages, offset), at, lengths };
}
