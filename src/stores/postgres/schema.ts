/** One step of the store's schema: applied once, in order, inside a transaction. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * The store's schema, as the ordered list of its migrations. Everything lives in the `toolruntime`
 * schema of the database. A migration is never edited once released: a change is a new entry.
 */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: "registries, tools and their change log; runner activations",
    sql: `
      -- One row per registry. version counts its changes; it is bumped in the transaction that
      -- writes a change, under this row's lock, so versions are gapless and in commit order.
      CREATE TABLE toolruntime.registries (
        name text COLLATE "C" PRIMARY KEY,
        version bigint NOT NULL DEFAULT 0,
        tool_count integer NOT NULL DEFAULT 0
      );
      -- The registered specs (protobuf ToolSpec bytes), keyed for keyset pages in name order.
      CREATE TABLE toolruntime.tools (
        registry text COLLATE "C" NOT NULL REFERENCES toolruntime.registries (name),
        name text COLLATE "C" NOT NULL,
        version bigint NOT NULL,
        spec bytea NOT NULL,
        PRIMARY KEY (registry, name)
      );
      -- The recent changes of each registry, for replicas that follow and watchers that resume.
      CREATE TABLE toolruntime.tool_changes (
        registry text COLLATE "C" NOT NULL,
        version bigint NOT NULL,
        kind text NOT NULL CHECK (kind IN ('added', 'updated', 'removed')),
        spec bytea NOT NULL,
        PRIMARY KEY (registry, version)
      );
      -- Tools active in named runners, shared by every replica.
      CREATE TABLE toolruntime.activations (
        runner text COLLATE "C" NOT NULL,
        tool text COLLATE "C" NOT NULL,
        activated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (runner, tool)
      );
    `,
  },
  {
    version: 2,
    name: "replicas with leases; execution records, events and idempotency keys",
    sql: `
      -- The replicas that use the store, each with a lease it renews while alive. The live runs of
      -- a replica whose lease expired are taken over by the others.
      CREATE TABLE toolruntime.replicas (
        id text PRIMARY KEY,
        started_at timestamptz NOT NULL DEFAULT now(),
        lease_expires_at timestamptz NOT NULL
      );
      -- One row per run. record holds the toolruntime.v1.Execution its owner last wrote; owner and
      -- epoch fence the owner's writes (every write names both; a takeover bumps epoch).
      CREATE TABLE toolruntime.executions (
        id uuid PRIMARY KEY,
        ordinal bigserial NOT NULL UNIQUE,
        tool_name text COLLATE "C" NOT NULL,
        caller text NOT NULL,
        idempotency_key text NOT NULL DEFAULT '',
        state smallint NOT NULL,
        live boolean NOT NULL,
        retry_safe boolean NOT NULL,
        record bytea NOT NULL,
        request jsonb NOT NULL,
        owner text,
        epoch integer NOT NULL DEFAULT 1,
        last_sequence integer NOT NULL DEFAULT 0,
        cancel_reason text,
        decision jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz
      );
      CREATE UNIQUE INDEX executions_idempotency ON toolruntime.executions (caller, tool_name, idempotency_key)
        WHERE idempotency_key <> '';
      CREATE INDEX executions_claimable ON toolruntime.executions (tool_name, ordinal) WHERE live AND owner IS NULL;
      CREATE INDEX executions_owned ON toolruntime.executions (owner) WHERE live;
      CREATE INDEX executions_finished ON toolruntime.executions (finished_at) WHERE NOT live;
      -- The append-only events of each run, numbered from 1 without gaps.
      CREATE TABLE toolruntime.execution_events (
        execution_id uuid NOT NULL REFERENCES toolruntime.executions (id) ON DELETE CASCADE,
        sequence integer NOT NULL,
        event bytea NOT NULL,
        PRIMARY KEY (execution_id, sequence)
      );
    `,
  },
  {
    version: 3,
    name: "the directory of provider-served tools",
    sql: `
      -- Which replicas serve which tools for which provider: a provider's tool stays registered while
      -- any replica holds a connection for it, and goes when the last one does (or is lost).
      CREATE TABLE toolruntime.provider_tools (
        registry text COLLATE "C" NOT NULL,
        tool text COLLATE "C" NOT NULL,
        replica text NOT NULL,
        provider text NOT NULL,
        PRIMARY KEY (registry, tool, replica)
      );
    `,
  },
  {
    version: 4,
    name: "admission slots of runs, for limits across the cluster",
    sql: `
      -- A run asks for a slot before it executes: 'waiting' in the cluster's queue (FIFO by ordinal),
      -- then 'held' while it runs; tool_limit is its tool's own limit (0: none).
      ALTER TABLE toolruntime.executions
        ADD COLUMN slot text NOT NULL DEFAULT 'none' CHECK (slot IN ('none', 'waiting', 'held')),
        ADD COLUMN tool_limit integer NOT NULL DEFAULT 0;
      CREATE INDEX executions_slots ON toolruntime.executions (slot, ordinal) WHERE live AND slot <> 'none';
    `,
  },
  {
    version: 5,
    name: "admission decided inside the database, so its lock is held for microseconds",
    sql: `
      -- Decides a run's slot under the cluster's admission lock (transaction-scoped advisory lock
      -- 128009125519716): held when it fits and no earlier run of its tool waits, waiting while the
      -- queue has room, else raises 'queue full' (SQLSTATE P0001, DETAIL the number waiting). Each
      -- statement of this VOLATILE function takes a new snapshot, so it counts what was committed
      -- before the lock was granted.
      CREATE FUNCTION toolruntime.admit_run(p_id uuid, p_tool text, p_max integer, p_tool_limit integer, p_max_queued integer)
      RETURNS TABLE (decided text, waiting bigint) LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE
        v_held bigint; v_tool_held bigint; v_waiting bigint; v_tool_waiting bigint; v_decided text;
      BEGIN
        PERFORM pg_advisory_xact_lock(128009125519716);
        SELECT count(*) FILTER (WHERE e.slot = 'held'),
               count(*) FILTER (WHERE e.slot = 'held' AND e.tool_name = p_tool),
               count(*) FILTER (WHERE e.slot = 'waiting'),
               count(*) FILTER (WHERE e.slot = 'waiting' AND e.tool_name = p_tool)
          INTO v_held, v_tool_held, v_waiting, v_tool_waiting
          FROM toolruntime.executions e WHERE e.live AND e.slot <> 'none' AND e.id <> p_id;
        IF v_held < p_max AND (p_tool_limit = 0 OR v_tool_held < p_tool_limit) AND v_tool_waiting = 0 THEN
          v_decided := 'held';
        ELSIF v_waiting < p_max_queued THEN
          v_decided := 'waiting';
        ELSE
          RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'queue full', DETAIL = v_waiting::text;
        END IF;
        UPDATE toolruntime.executions SET slot = v_decided, tool_limit = p_tool_limit WHERE id = p_id;
        RETURN QUERY SELECT v_decided, v_waiting;
      END
      $fn$;

      -- Creates a run and, when asked, admits it, in one statement: a full queue raises and so
      -- creates nothing. No row when the idempotency key names an earlier run.
      CREATE FUNCTION toolruntime.create_run(
        p_id uuid, p_tool text, p_caller text, p_key text, p_state smallint, p_retry_safe boolean,
        p_record bytea, p_request jsonb, p_owner text,
        p_admit boolean, p_max integer, p_tool_limit integer, p_max_queued integer
      ) RETURNS TABLE (r_ordinal bigint, r_decided text, r_waiting bigint) LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE
        v_ordinal bigint;
      BEGIN
        INSERT INTO toolruntime.executions
          (id, tool_name, caller, idempotency_key, state, live, retry_safe, record, request, owner)
        VALUES (p_id, p_tool, p_caller, p_key, p_state, true, p_retry_safe, p_record, p_request, p_owner)
        ON CONFLICT (caller, tool_name, idempotency_key) WHERE idempotency_key <> '' DO NOTHING
        RETURNING ordinal INTO v_ordinal;
        IF v_ordinal IS NULL THEN
          RETURN;
        END IF;
        IF p_owner IS NULL THEN
          PERFORM pg_notify('toolruntime_claims', '');
        END IF;
        IF NOT p_admit THEN
          RETURN QUERY SELECT v_ordinal, NULL::text, 0::bigint;
          RETURN;
        END IF;
        RETURN QUERY SELECT v_ordinal, a.decided, a.waiting
          FROM toolruntime.admit_run(p_id, p_tool, p_max, p_tool_limit, p_max_queued) a;
      END
      $fn$;

      -- Gives slots to waiting runs in queue order while they fit (a run whose tool is at its own
      -- limit lets later runs of other tools pass), and rings each owner's doorbell.
      CREATE FUNCTION toolruntime.dispatch_slots(p_max integer) RETURNS integer LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE
        v_total bigint; v_tool bigint; v_granted integer := 0; r record;
      BEGIN
        PERFORM pg_advisory_xact_lock(128009125519716);
        SELECT count(*) INTO v_total FROM toolruntime.executions WHERE live AND slot = 'held';
        FOR r IN SELECT id, tool_name, tool_limit, owner FROM toolruntime.executions
                  WHERE live AND slot = 'waiting' ORDER BY ordinal LOOP
          EXIT WHEN v_total >= p_max;
          IF r.tool_limit <> 0 THEN
            SELECT count(*) INTO v_tool FROM toolruntime.executions
             WHERE live AND slot = 'held' AND tool_name = r.tool_name;
            CONTINUE WHEN v_tool >= r.tool_limit;
          END IF;
          UPDATE toolruntime.executions SET slot = 'held' WHERE id = r.id;
          v_total := v_total + 1;
          v_granted := v_granted + 1;
          IF r.owner IS NOT NULL THEN PERFORM pg_notify('toolruntime_control', r.owner); END IF;
        END LOOP;
        RETURN v_granted;
      END
      $fn$;

      -- Gives a run's slot back; lets waiting runs in only when some wait (the lock is then taken).
      CREATE FUNCTION toolruntime.release_slot(p_id uuid, p_max integer) RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
      BEGIN
        UPDATE toolruntime.executions SET slot = 'none' WHERE id = p_id AND slot <> 'none';
        IF FOUND AND EXISTS (SELECT 1 FROM toolruntime.executions WHERE live AND slot = 'waiting') THEN
          PERFORM toolruntime.dispatch_slots(p_max);
        END IF;
      END
      $fn$;
    `,
  },
  {
    version: 6,
    name: "writes that can be retried after a lost answer, and that respect the call's deadline",
    sql: `
      -- Raises 'deadline passed' (SQLSTATE P0001) once the database's clock is past p_deadline: the
      -- last step of a write made for a call, so that a write held up in the network past the
      -- call's deadline rolls back instead of committing after the caller was told it failed.
      CREATE FUNCTION toolruntime.check_deadline(p_deadline timestamptz) RETURNS void LANGUAGE plpgsql VOLATILE AS $fn$
      BEGIN
        IF p_deadline IS NOT NULL AND clock_timestamp() > p_deadline THEN
          RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'deadline passed';
        END IF;
      END
      $fn$;

      -- create_run, made safe to call again with the same p_id after an ambiguous commit: a run of
      -- that id still as created (same owner, first epoch) answers as it did, nothing written again;
      -- one changed since answers no row (the caller reads it as an existing run). The deadline is
      -- checked last, so a creation arriving after it rolls back, admission included.
      CREATE FUNCTION toolruntime.create_run_once(
        p_id uuid, p_tool text, p_caller text, p_key text, p_state smallint, p_retry_safe boolean,
        p_record bytea, p_request jsonb, p_owner text,
        p_admit boolean, p_max integer, p_tool_limit integer, p_max_queued integer, p_deadline timestamptz
      ) RETURNS TABLE (r_ordinal bigint, r_decided text, r_waiting bigint) LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE
        v_ordinal bigint; v_slot text; v_owner text; v_epoch integer;
      BEGIN
        SELECT e.ordinal, e.slot, e.owner, e.epoch INTO v_ordinal, v_slot, v_owner, v_epoch
          FROM toolruntime.executions e WHERE e.id = p_id;
        IF FOUND THEN
          IF v_owner IS DISTINCT FROM p_owner OR v_epoch <> 1 THEN
            RETURN;
          END IF;
          IF NOT p_admit OR v_slot = 'none' THEN
            RETURN QUERY SELECT v_ordinal, NULL::text, 0::bigint;
          ELSE
            RETURN QUERY SELECT v_ordinal, v_slot, (SELECT count(*) FROM toolruntime.executions w
              WHERE w.live AND w.slot = 'waiting' AND w.ordinal < v_ordinal);
          END IF;
          RETURN;
        END IF;
        RETURN QUERY SELECT c.r_ordinal, c.r_decided, c.r_waiting
          FROM toolruntime.create_run(p_id, p_tool, p_caller, p_key, p_state, p_retry_safe, p_record, p_request,
                                      p_owner, p_admit, p_max, p_tool_limit, p_max_queued) c;
        PERFORM toolruntime.check_deadline(p_deadline);
      END
      $fn$;
    `,
  },
  {
    version: 7,
    name: "waiting runs let in after a group of writes gave slots back",
    sql: `
      -- A group of owners' writes gives back the slots of the runs that ended in it, in the same
      -- statement (see GroupFlush); this then lets waiting runs in, taking the admission lock only
      -- when some wait. A statement of its own, holding no row lock, so it waits in no cycle.
      CREATE FUNCTION toolruntime.dispatch_waiting(p_max integer) RETURNS integer LANGUAGE plpgsql VOLATILE AS $fn$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM toolruntime.executions WHERE live AND slot = 'waiting') THEN
          RETURN 0;
        END IF;
        RETURN toolruntime.dispatch_slots(p_max);
      END
      $fn$;
    `,
  },
  {
    version: 8,
    name: "slots leased to replicas in blocks; activations ring the doorbell",
    sql: `
      -- Admission slots a replica leases as a block: it admits runs of tools without a limit of
      -- their own from its block, locally, with no statement and no lock per run. A block counts
      -- against the cluster's limit while its replica's lease holds, and goes with the lease.
      CREATE TABLE toolruntime.slot_blocks (
        replica text PRIMARY KEY,
        slots integer NOT NULL CHECK (slots >= 0)
      );

      -- The slots held in blocks by replicas whose lease holds, but p_except's.
      CREATE FUNCTION toolruntime.block_slots(p_except text) RETURNS bigint LANGUAGE sql STABLE AS $fn$
        SELECT coalesce(sum(b.slots), 0)::bigint
          FROM toolruntime.slot_blocks b JOIN toolruntime.replicas r ON r.id = b.replica
         WHERE r.lease_expires_at > now() AND b.replica IS DISTINCT FROM p_except
      $fn$;

      -- admit_run of migration 5, with the slots held in blocks counted as held; a run that joins
      -- the queue rings the doorbell, so that replicas give back the free slots of their blocks.
      CREATE OR REPLACE FUNCTION toolruntime.admit_run(p_id uuid, p_tool text, p_max integer, p_tool_limit integer, p_max_queued integer)
      RETURNS TABLE (decided text, waiting bigint) LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE
        v_held bigint; v_tool_held bigint; v_waiting bigint; v_tool_waiting bigint; v_decided text;
      BEGIN
        PERFORM pg_advisory_xact_lock(128009125519716);
        SELECT count(*) FILTER (WHERE e.slot = 'held'),
               count(*) FILTER (WHERE e.slot = 'held' AND e.tool_name = p_tool),
               count(*) FILTER (WHERE e.slot = 'waiting'),
               count(*) FILTER (WHERE e.slot = 'waiting' AND e.tool_name = p_tool)
          INTO v_held, v_tool_held, v_waiting, v_tool_waiting
          FROM toolruntime.executions e WHERE e.live AND e.slot <> 'none' AND e.id <> p_id;
        v_held := v_held + toolruntime.block_slots(NULL);
        IF v_held < p_max AND (p_tool_limit = 0 OR v_tool_held < p_tool_limit) AND v_tool_waiting = 0 THEN
          v_decided := 'held';
        ELSIF v_waiting < p_max_queued THEN
          v_decided := 'waiting';
        ELSE
          RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'queue full', DETAIL = v_waiting::text;
        END IF;
        UPDATE toolruntime.executions SET slot = v_decided, tool_limit = p_tool_limit WHERE id = p_id;
        IF v_decided = 'waiting' THEN
          PERFORM pg_notify('toolruntime_queue', '');
        END IF;
        RETURN QUERY SELECT v_decided, v_waiting;
      END
      $fn$;

      -- dispatch_slots of migration 5, with the slots held in blocks counted as held.
      CREATE OR REPLACE FUNCTION toolruntime.dispatch_slots(p_max integer) RETURNS integer LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE
        v_total bigint; v_tool bigint; v_granted integer := 0; r record;
      BEGIN
        PERFORM pg_advisory_xact_lock(128009125519716);
        SELECT count(*) + toolruntime.block_slots(NULL) INTO v_total
          FROM toolruntime.executions WHERE live AND slot = 'held';
        FOR r IN SELECT id, tool_name, tool_limit, owner FROM toolruntime.executions
                  WHERE live AND slot = 'waiting' ORDER BY ordinal LOOP
          EXIT WHEN v_total >= p_max;
          IF r.tool_limit <> 0 THEN
            SELECT count(*) INTO v_tool FROM toolruntime.executions
             WHERE live AND slot = 'held' AND tool_name = r.tool_name;
            CONTINUE WHEN v_tool >= r.tool_limit;
          END IF;
          UPDATE toolruntime.executions SET slot = 'held' WHERE id = r.id;
          v_total := v_total + 1;
          v_granted := v_granted + 1;
          IF r.owner IS NOT NULL THEN PERFORM pg_notify('toolruntime_control', r.owner); END IF;
        END LOOP;
        RETURN v_granted;
      END
      $fn$;

      -- Sets a replica's block to p_wanted slots, under the admission lock. Shrinking always
      -- succeeds, and lets waiting runs in; growing takes only what is free, and nothing while
      -- runs wait in the cluster's queue (they go first). Answers the block's size and how many
      -- runs wait.
      CREATE FUNCTION toolruntime.set_slot_block(p_replica text, p_wanted integer, p_max integer)
      RETURNS TABLE (slots integer, waiting bigint) LANGUAGE plpgsql VOLATILE AS $fn$
      DECLARE
        v_current integer; v_waiting bigint; v_free bigint; v_slots integer;
      BEGIN
        PERFORM pg_advisory_xact_lock(128009125519716);
        SELECT b.slots INTO v_current FROM toolruntime.slot_blocks b WHERE b.replica = p_replica;
        v_current := coalesce(v_current, 0);
        SELECT count(*) INTO v_waiting FROM toolruntime.executions e WHERE e.live AND e.slot = 'waiting';
        IF p_wanted <= v_current THEN
          v_slots := p_wanted;
        ELSIF v_waiting > 0 THEN
          v_slots := v_current;
        ELSE
          SELECT p_max - count(*) - toolruntime.block_slots(p_replica) INTO v_free
            FROM toolruntime.executions e WHERE e.live AND e.slot = 'held';
          v_slots := greatest(v_current, least(p_wanted::bigint, v_free))::integer;
        END IF;
        INSERT INTO toolruntime.slot_blocks AS b (replica, slots) VALUES (p_replica, v_slots)
          ON CONFLICT (replica) DO UPDATE SET slots = excluded.slots;
        IF v_slots < v_current AND v_waiting > 0 THEN
          PERFORM toolruntime.dispatch_slots(p_max);
        END IF;
        RETURN QUERY SELECT v_slots, v_waiting;
      END
      $fn$;

      -- Every change of an activation rings the doorbell (payload "runner/tool"), so that replicas
      -- answer from what they hold while nothing changed (see the activation store).
      CREATE FUNCTION toolruntime.ring_activation() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        v_row record;
      BEGIN
        v_row := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
        PERFORM pg_notify('toolruntime_activations', v_row.runner || '/' || v_row.tool);
        RETURN NULL;
      END
      $fn$;
      CREATE TRIGGER activations_ring AFTER INSERT OR UPDATE OR DELETE ON toolruntime.activations
        FOR EACH ROW EXECUTE FUNCTION toolruntime.ring_activation();
    `,
  },
];
