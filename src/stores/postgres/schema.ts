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
];
