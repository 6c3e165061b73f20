// The options of the PostgreSQL stores, apart from the stores themselves so that the public API's
// declarations (createToolRuntime, startServer) do not reach the database driver's types.

/** Options of createPostgresToolStore. */
export interface PostgresToolStoreOptions {
  /** Most tools one registry holds, across the cluster. Default 100,000. */
  readonly maxTools?: number;
  /** Most registries holding tools, across the cluster, the default one included. Default 64. */
  readonly maxRegistries?: number;
  /** Most changes of a registry kept for replicas and watchers that resume. Default 10,000. */
  readonly retainedChanges?: number;
  /** Interval of the poll that catches up when a notification was lost, in milliseconds. Default 1,000. */
  readonly pollIntervalMs?: number;
  /** Interval of the sweep that withdraws lost replicas' provider connections, in milliseconds. Default 1,000. */
  readonly directorySweepIntervalMs?: number;
  /** Where failures of the background catch-up go (the next read retries). */
  readonly onError?: (error: unknown) => void;
}

/** Options of createPostgresRunStore. */
export interface PostgresRunStoreOptions {
  /** How long a replica's lease lasts without renewal, in milliseconds. Default 10,000. */
  readonly leaseMs?: number;
}

/** Options of openPostgresStoreSet. */
export interface PostgresStoreOptions extends PostgresToolStoreOptions, PostgresRunStoreOptions {
  /** Interval of the availability check behind readiness, in milliseconds. Default 1,000. */
  readonly availabilityIntervalMs?: number;
}
