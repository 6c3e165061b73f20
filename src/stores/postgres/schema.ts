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
];
