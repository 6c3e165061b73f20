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
  /** Interval of the availability check behind readiness, in milliseconds. Default 1,000. */
  readonly availabilityIntervalMs?: number;
  /**
   * Longest the event loop may be blocked before the lease is left to expire (the replica is taken
   * for stuck and its runs are taken over), in milliseconds. Default six leases.
   */
  readonly maxStallMs?: number;
}

/** Options of openPostgresStoreSet. */
export interface PostgresStoreOptions extends PostgresToolStoreOptions, PostgresRunStoreOptions {
  /** Most connections of the replica's pool (it opens two more: LISTEN and the lease). Default 16. */
  readonly maxConnections?: number;
  /**
   * Longest one store operation may take before the call that needs it fails with UNAVAILABLE
   * (sooner when the call's deadline comes first), in milliseconds. Default 5,000.
   */
  readonly operationTimeoutMs?: number;
}
