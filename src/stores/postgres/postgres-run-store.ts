import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import { ExecutionSchema, ExecutionState } from "../../../gen/toolruntime/v1/execution_pb.js";
import { RunEventSchema, type RunEvent } from "../../../gen/toolruntime/v1/run_event_pb.js";
import { ErrorType, ToolRuntimeError } from "../../errors/tool-runtime-error.js";
import { quote } from "../../registry/names.js";
import type {
  EndedRun,
  RequeuedRun,
  RunRequest,
  RunStore,
  SlotOutcome,
  SlotRequest,
  StoredDecision,
  StoredRun,
} from "../run-store.js";
import type { Doorbell } from "./doorbell.js";
import type { PostgresRunStoreOptions } from "./postgres-options.js";
import type { Database } from "./open-database.js";
import { NextFlight } from "../../async/next-flight.js";
import { GroupFlush } from "./group-flush.js";
import { startLeaseKeeper } from "./lease-keeper.js";
import { RunBell, ringIds } from "./run-bell.js";
import { inTransaction, OperationTime, query, type TransactionClient } from "./transaction.js";
import { databaseUnavailable } from "./database-errors.js";

/** Channels of the doorbell: a run changed (payload: its id), runs wait to be claimed, control for an owner. */
const runsChannel = "toolruntime_runs";
const claimsChannel = "toolruntime_claims";
const controlChannel = "toolruntime_control";
const queueChannel = "toolruntime_queue";

interface RunRow {
  id: string;
  ordinal: string;
  record: Buffer;
  request: RunRequest;
  owner: string | null;
  epoch: number;
  last_sequence: number;
  retry_safe: boolean;
  cancel_reason: string | null;
}

const runColumns = "id, ordinal, record, request, owner, epoch, last_sequence, retry_safe, cancel_reason";
/** Serialises admission decisions across the cluster ("tlrtadm" in ASCII). */
const admissionLockKey = 0x746c72746164;
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Pause before creating a run again after an ambiguous failure, in milliseconds. */
const createRetryDelayMs = 50;

interface CreatedRow {
  r_ordinal: string;
  r_decided: "held" | "waiting" | null;
  r_waiting: string;
}

/**
 * The run store on PostgreSQL. Ownership is a row's `owner` and `epoch`: an owner's every write
 * names both and is refused once a takeover bumped the epoch, so a replica paused past its lease
 * cannot write late events or a second result; nor can an owner whose lease expired, even before
 * its runs were taken. Claims take unowned runs with `FOR UPDATE SKIP LOCKED`, so no run is
 * claimed twice. Every write can be retried after an ambiguous failure with the same outcome: a
 * run is created once per id, and each event is stored under its own sequence number once.
 * Notifications are a doorbell only: one per flush of a run (events are batched by the owner),
 * never one per event; readers re-read rows and poll. The lease is kept by a thread of its own
 * (see startLeaseKeeper).
 */
export async function createPostgresRunStore(
  database: Database,
  doorbell: Doorbell,
  options: PostgresRunStoreOptions = {},
): Promise<RunStore> {
  const replicaId = randomUUID();
  const leaseMs = options.leaseMs ?? 10_000;
  const leaseInterval = `${leaseMs} milliseconds`;
  await query(database, "INSERT INTO toolruntime.replicas (id, lease_expires_at) VALUES ($1, now() + $2::interval)", [
    replicaId,
    leaseInterval,
  ]);
  /** The cluster's limit of runs at once, as this replica last said it (for dispatching after ended runs). */
  let maxConcurrent: number | undefined;
  const bell = new RunBell(database, runsChannel);
  const dispatching = new NextFlight(async () => {
    if (maxConcurrent !== undefined) await query(database, "SELECT toolruntime.dispatch_waiting($1)", [maxConcurrent]);
  });
  // Group commit of the owners' writes; after each group, one ring for its runs and, when some
  // ended (their slots given back in the write), waiting runs let in.
  const groups = new GroupFlush(database, ({ written, slotsFreed }) => {
    bell.ring(written);
    if (slotsFreed) void dispatching.run().catch(() => undefined);
  });
  const lease = startLeaseKeeper(database, {
    replicaId,
    leaseMs,
    availabilityIntervalMs: options.availabilityIntervalMs ?? 1000,
    ...(options.maxStallMs === undefined ? {} : { maxStallMs: options.maxStallMs }),
  });
  // Serving starts with a lease the thread renewed: a loss while the thread started (a slow start
  // on a busy machine) is then behind us, and no run was held to lose.
  await lease.ready;

  const toStored = (row: RunRow): StoredRun => ({
    id: row.id,
    ordinal: Number(row.ordinal),
    execution: fromBinary(ExecutionSchema, row.record),
    request: row.request,
    owner: row.owner ?? undefined,
    epoch: row.epoch,
    lastSequence: row.last_sequence,
    retrySafe: row.retry_safe,
    cancelReason: row.cancel_reason ?? undefined,
  });

  /** Appends events after `last` and writes the record, for a run locked by this transaction. */
  const writeEnd = async (
    client: TransactionClient,
    run: StoredRun,
    lastSequence: number,
    end: EndedRun | RequeuedRun,
  ) => {
    await insertEvents(client, run.id, lastSequence, end.events);
    const ended = end.kind === "ended";
    await client.query(
      `UPDATE toolruntime.executions
          SET record = $2, state = $3, live = $4, owner = NULL, epoch = epoch + 1, slot = 'none',
              last_sequence = $5, finished_at = CASE WHEN $4 THEN NULL ELSE now() END
        WHERE id = $1`,
      [run.id, toBinary(ExecutionSchema, end.execution), end.execution.state, !ended, lastSequence + end.events.length],
    );
    await client.query("SELECT pg_notify($1, $2)", [runsChannel, run.id]);
    if (!ended) await client.query("SELECT pg_notify($1, '')", [claimsChannel]);
  };

  /**
   * Asks for a slot (see RunStore.admit) with `toolruntime.admit_run`, which decides inside the
   * database: the admission lock is held for the function's run, not across round trips. Counts
   * exclude the run itself, so asking again is harmless.
   */
  const admitIn = async (
    client: TransactionClient,
    id: string,
    toolName: string,
    slot: SlotRequest,
  ): Promise<SlotOutcome> => {
    let rows: { decided: "held" | "waiting"; waiting: string }[];
    try {
      ({ rows } = await client.query<{ decided: "held" | "waiting"; waiting: string }>(
        "SELECT decided, waiting FROM toolruntime.admit_run($1, $2, $3, $4, $5)",
        [id, toolName, slot.maxConcurrent, slot.toolLimit, slot.maxQueued],
      ));
    } catch (error) {
      throw queueFull(error, toolName, slot.maxConcurrent);
    }
    const row = rows[0] as { decided: "held" | "waiting"; waiting: string };
    return row.decided === "held" ? { slot: "held", position: 0 } : { slot: "waiting", position: Number(row.waiting) };
  };

  const dispatch = async (maxConcurrent: number): Promise<void> => {
    await query(database, "SELECT toolruntime.dispatch_slots($1)", [maxConcurrent]);
  };

  /** Creates a run (see create_run_once), trying again while failures leave it unknown whether it was. */
  const createOnce = async (values: unknown[], time: OperationTime): Promise<CreatedRow | undefined> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const { rows } = await query<CreatedRow>(
          database,
          "SELECT r_ordinal, r_decided, r_waiting FROM toolruntime.create_run_once($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
          values,
          time,
        );
        time.newRun = undefined;
        return rows[0];
      } catch (error) {
        // Sent once, the creation may have committed: what follows finishes work under way.
        if (!(error instanceof ToolRuntimeError && error.code === "RESOURCE_EXHAUSTED")) time.newRun = undefined;
        // UNAVAILABLE may hide a commit whose answer was lost: the same call again tells. Three
        // tries at most, all within one operation's time (the call's deadline or the store's
        // operation timeout), past which the database refuses to create it.
        const ambiguous = error instanceof ToolRuntimeError && error.code === "UNAVAILABLE";
        if (!ambiguous || attempt >= 3) throw error;
        time.remainingMs();
        await new Promise((resolve) => setTimeout(resolve, createRetryDelayMs * attempt));
      }
    }
  };

  return {
    replicaId,
    lease,

    async create(run, idempotencyKey, slot, call = {}) {
      // A new run: it waits for a connection behind the work under way, briefly (see ConnectionGate).
      const time = new OperationTime(database, call, run.execution.toolName);
      const values = [
        run.id,
        run.execution.toolName,
        run.execution.caller,
        idempotencyKey,
        run.execution.state,
        run.retrySafe,
        toBinary(ExecutionSchema, run.execution),
        JSON.stringify(run.request),
        run.owner ?? null,
        slot !== undefined,
        slot?.maxConcurrent ?? 0,
        slot?.toolLimit ?? 0,
        slot?.maxQueued ?? 0,
        time.databaseEnd(),
      ];
      for (;;) {
        let created: CreatedRow | undefined;
        try {
          // One statement: the lock it takes to admit is held for microseconds, not round trips.
          created = await createOnce(values, time);
        } catch (error) {
          // A concurrent attempt of the same creation (the first one's answer was lost) committed.
          if ((error as { code?: string }).code !== "23505")
            throw queueFull(error, run.execution.toolName, slot?.maxConcurrent ?? 1);
        }
        if (created) {
          const admitted: SlotOutcome | undefined =
            created.r_decided === null
              ? undefined
              : { slot: created.r_decided, position: created.r_decided === "held" ? 0 : Number(created.r_waiting) };
          return { ordinal: Number(created.r_ordinal), slot: admitted };
        }
        // The run of that id changed since it was created, or the key names an earlier run.
        const existing = await query<RunRow>(
          database,
          `SELECT ${runColumns} FROM toolruntime.executions
            WHERE id = $1 OR (idempotency_key <> '' AND caller = $2 AND tool_name = $3 AND idempotency_key = $4)
            ORDER BY id = $1 DESC LIMIT 1`,
          [run.id, run.execution.caller, run.execution.toolName, idempotencyKey],
          time,
        );
        // Evicted between the two statements: try again.
        if (existing.rows[0]) return { existing: toStored(existing.rows[0]) };
      }
    },

    async admit(id, slot) {
      if (!uuidPattern.test(id)) throw new Error(`no run ${id}`);
      const { rows } = await query<{ tool_name: string }>(
        database,
        "SELECT tool_name FROM toolruntime.executions WHERE id = $1",
        [id],
      );
      return inTransaction(database, (client) => admitIn(client, id, rows[0]?.tool_name ?? "", slot));
    },

    async release(id, limit) {
      maxConcurrent = limit;
      await query(database, "SELECT toolruntime.release_slot($1, $2)", [id, limit]);
    },

    dispatch: (limit) => {
      maxConcurrent = limit;
      return dispatch(limit);
    },

    checkBacklog(toolName, call = {}) {
      const { waitedMs, writes } = groups.backlog();
      if (waitedMs === 0) return;
      const operationMs = Math.min(database.options.operationTimeoutMs, (call.deadline ?? Infinity) - Date.now());
      const allowedMs = Math.round(Math.min(250, Math.max(100, operationMs / 4)));
      if (waitedMs <= allowedMs) return;
      // Behind because the store answers nothing (the doorbell's heartbeat too): not busy, unreachable.
      if (!doorbell.delivering()) {
        throw databaseUnavailable(
          database.maskedUrl,
          new Error(`this replica's writes have had no answer for ${Math.round(waitedMs)} ms`),
        );
      }
      // About the time the writes waiting now take to go through.
      const retryAfterMs = Math.round(Math.min(5000, Math.max(50, waitedMs)));
      throw new ToolRuntimeError(
        "RESOURCE_EXHAUSTED",
        ErrorType.ResourceExhausted,
        `run of ${quote(toolName)} not started: this replica's writes to the store are ${Math.round(waitedMs)} ms behind the work under way (${writes} writes wait); retry in ${retryAfterMs} ms or on another replica`,
        toolName,
        retryAfterMs,
      );
    },

    async resizeSlotBlock(wanted, limit) {
      maxConcurrent = limit;
      const { rows } = await query<{ slots: number; waiting: string }>(
        database,
        "SELECT slots, waiting FROM toolruntime.set_slot_block($1, $2, $3)",
        [replicaId, wanted, limit],
      );
      const row = rows[0] as { slots: number; waiting: string };
      return { slots: row.slots, waiting: Number(row.waiting) };
    },

    async held(ids) {
      if (ids.length === 0) return [];
      const { rows } = await query<{ id: string }>(
        database,
        "SELECT id FROM toolruntime.executions WHERE id = ANY($1::uuid[]) AND slot = 'held'",
        [ids],
      );
      return rows.map((row) => row.id);
    },

    flush: (fence, events, execution, creation, call) => groups.flush(fence, events, execution, creation, call),

    async get(id) {
      if (!uuidPattern.test(id)) return undefined;
      const { rows } = await query<RunRow>(database, `SELECT ${runColumns} FROM toolruntime.executions WHERE id = $1`, [
        id,
      ]);
      return rows[0] ? toStored(rows[0]) : undefined;
    },

    async events(id, afterSequence) {
      const { rows } = await query<{ event: Buffer }>(
        database,
        "SELECT event FROM toolruntime.execution_events WHERE execution_id = $1 AND sequence > $2 ORDER BY sequence",
        [id, afterSequence],
      );
      return rows.map((row) => fromBinary(RunEventSchema, row.event));
    },

    async list(runQuery) {
      const { rows } = await query<RunRow>(
        database,
        `SELECT ${runColumns} FROM toolruntime.executions
          WHERE ordinal < $1 AND ($2 = '' OR tool_name = $2) AND ($3 = 0 OR state = $3)
          ORDER BY ordinal DESC LIMIT $4`,
        [
          Number.isFinite(runQuery.beforeOrdinal) ? runQuery.beforeOrdinal : Number.MAX_SAFE_INTEGER,
          runQuery.toolName,
          runQuery.state,
          runQuery.limit,
        ],
      );
      return rows.map(toStored);
    },

    async requestCancel(id, reason, ended, call = {}) {
      if (!uuidPattern.test(id)) return false;
      return inTransaction(
        database,
        async (client) => {
          const { rows } = await client.query<RunRow & { live: boolean }>(
            `SELECT ${runColumns}, live FROM toolruntime.executions WHERE id = $1 FOR UPDATE`,
            [id],
          );
          const row = rows[0];
          if (!row?.live) return false;
          if (row.owner === null) {
            await writeEnd(client, toStored(row), row.last_sequence, ended(toStored(row)));
            return true;
          }
          await client.query(
            "UPDATE toolruntime.executions SET cancel_reason = coalesce(cancel_reason, $2) WHERE id = $1",
            [id, reason],
          );
          await client.query("SELECT pg_notify($1, $2)", [controlChannel, row.owner]);
          return true;
        },
        call,
      );
    },

    async decide(id, decision: StoredDecision, call = {}) {
      if (!uuidPattern.test(id)) return false;
      const time = new OperationTime(database, call);
      // One statement: the decision, the owner's doorbell, and the deadline checked last.
      const { rows } = await query<{ owner: string | null }>(
        database,
        `WITH decided AS (
           UPDATE toolruntime.executions SET decision = $2
            WHERE id = $1 AND live AND state = $3 AND decision IS NULL
          RETURNING owner
         )
         SELECT owner, pg_notify($4, coalesce(owner, '')), toolruntime.check_deadline($5) FROM decided`,
        [id, JSON.stringify(decision), ExecutionState.AWAITING_APPROVAL, controlChannel, time.databaseEnd()],
        time,
      );
      return rows.length > 0;
    },

    async pendingControl(ids) {
      const { rows } = await query<{ id: string; cancel_reason: string | null; decision: StoredDecision | null }>(
        database,
        `SELECT id, cancel_reason, decision FROM toolruntime.executions
          WHERE owner = $1 AND live AND (cancel_reason IS NOT NULL OR decision IS NOT NULL)
            AND ($2::uuid[] IS NULL OR id = ANY($2))`,
        [replicaId, ids ?? null],
      );
      return rows.map((row) => ({
        id: row.id,
        cancelReason: row.cancel_reason ?? undefined,
        decision: row.decision ?? undefined,
      }));
    },

    async claim(toolNames, limit) {
      if (toolNames.length === 0 || limit <= 0) return [];
      const { rows } = await query<RunRow>(
        database,
        `UPDATE toolruntime.executions e SET owner = $1, epoch = e.epoch + 1
           FROM (SELECT id FROM toolruntime.executions
                  WHERE live AND owner IS NULL AND tool_name = ANY($2)
                  ORDER BY ordinal LIMIT $3 FOR UPDATE SKIP LOCKED) claimed
          WHERE e.id = claimed.id
      RETURNING e.id, e.ordinal, e.record, e.request, e.owner, e.epoch, e.last_sequence, e.retry_safe, e.cancel_reason`,
        [replicaId, toolNames, limit],
      );
      return rows.map(toStored).sort((a, b) => a.ordinal - b.ordinal);
    },

    sweep(decide, limit) {
      maxConcurrent = limit;
      return inTransaction(database, async (client) => {
        // The admission lock first, as dispatching takes it: no lock cycle with release or admission.
        await client.query("SELECT pg_advisory_xact_lock($1)", [admissionLockKey]);
        const { rows } = await client.query<RunRow>(
          `SELECT ${runColumns} FROM toolruntime.executions e
            WHERE live AND owner IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM toolruntime.replicas r WHERE r.id = e.owner AND r.lease_expires_at > now())
            ORDER BY ordinal LIMIT 100 FOR UPDATE SKIP LOCKED`,
        );
        for (const row of rows) await writeEnd(client, toStored(row), row.last_sequence, decide(toStored(row)));
        if (rows.length > 0) await client.query("SELECT toolruntime.dispatch_slots($1)", [limit]);
        // Blocks of replicas whose lease expired no longer count; gone from the table too.
        await client.query(
          `DELETE FROM toolruntime.slot_blocks b WHERE NOT EXISTS
             (SELECT 1 FROM toolruntime.replicas r WHERE r.id = b.replica AND r.lease_expires_at > now())`,
        );
        // Replicas gone for good: no lease and no run left to them.
        await client.query(
          `DELETE FROM toolruntime.replicas r WHERE lease_expires_at < now()
              AND NOT EXISTS (SELECT 1 FROM toolruntime.executions e WHERE e.owner = r.id AND e.live)`,
        );
        return rows.length;
      });
    },

    async ownedLive() {
      const { rows } = await query<{ id: string; epoch: number }>(
        database,
        "SELECT id, epoch FROM toolruntime.executions WHERE owner = $1 AND live",
        [replicaId],
      );
      return rows.map((row) => ({ id: row.id, owner: replicaId, epoch: row.epoch }));
    },

    reconcile(fence, decide, maxConcurrent) {
      return inTransaction(database, async (client) => {
        // The admission lock first, as dispatching takes it (see sweep).
        await client.query("SELECT pg_advisory_xact_lock($1)", [admissionLockKey]);
        const { rows } = await client.query<RunRow>(
          `SELECT ${runColumns} FROM toolruntime.executions
            WHERE id = $1 AND owner = $2 AND epoch = $3 AND live FOR UPDATE`,
          [fence.id, fence.owner, fence.epoch],
        );
        const row = rows[0];
        if (!row) return false;
        await writeEnd(client, toStored(row), row.last_sequence, decide(toStored(row)));
        await client.query("SELECT toolruntime.dispatch_slots($1)", [maxConcurrent]);
        return true;
      });
    },

    async evict(maxRetained, retentionMs) {
      await query(
        database,
        `DELETE FROM toolruntime.executions WHERE NOT live AND finished_at < now() - $1::interval`,
        [`${retentionMs} milliseconds`],
      );
      await query(
        database,
        `DELETE FROM toolruntime.executions WHERE id IN (
           SELECT id FROM toolruntime.executions WHERE NOT live ORDER BY finished_at DESC OFFSET $1)`,
        [maxRetained],
      );
    },

    onRunChange: (listener) =>
      void doorbell.listen(runsChannel, (payload) => {
        for (const id of ringIds(payload)) listener(id);
      }),
    onClaimable: (listener) => void doorbell.listen(claimsChannel, () => listener()),
    onQueued: (listener) => void doorbell.listen(queueChannel, () => listener()),
    onControl: (listener) =>
      void doorbell.listen(controlChannel, (owner) => {
        if (owner === replicaId || owner === "") listener();
      }),

    async close() {
      await lease.close();
      // Leaving at once lets the others take this replica's remaining runs without waiting for its lease.
      await query(
        database,
        `WITH dropped AS (DELETE FROM toolruntime.slot_blocks WHERE replica = $1)
         UPDATE toolruntime.replicas SET lease_expires_at = now() WHERE id = $1`,
        [replicaId],
      ).catch(() => undefined);
    },
  };
}

async function insertEvents(client: TransactionClient, id: string, after: number, events: readonly RunEvent[]) {
  if (events.length === 0) return;
  await client.query(
    `INSERT INTO toolruntime.execution_events (execution_id, sequence, event)
     SELECT $1, after + ordinality, event FROM unnest($3::bytea[]) WITH ORDINALITY AS t(event, ordinality),
            (SELECT $2::integer AS after) a`,
    [id, after, events.map((event) => Buffer.from(toBinary(RunEventSchema, event)))],
  );
}

/**
 * RESOURCE_EXHAUSTED (with a retry delay) for the database's "queue full" (see admit_run); any
 * other error as it is.
 */
function queueFull(error: unknown, toolName: string, maxConcurrent: number): unknown {
  const failure = error as { code?: string; message?: string; detail?: string };
  if (failure.code !== "P0001" || failure.message !== "queue full") return error;
  const waiting = Number(failure.detail ?? 0);
  return new ToolRuntimeError(
    "RESOURCE_EXHAUSTED",
    ErrorType.ResourceExhausted,
    `run of ${quote(toolName)} cannot be queued: ${waiting} runs already wait across the cluster, the most allowed; retry later`,
    toolName,
    Math.min(30_000, Math.max(100, Math.round((waiting / Math.max(1, maxConcurrent)) * 100))),
  );
}
