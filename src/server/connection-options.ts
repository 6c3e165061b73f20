/** Connection management on both ports. Every field has a documented default. */
export interface ConnectionOptions {
  /** Largest request or response message, in bytes. Default 4 MiB. */
  readonly maxMessageBytes: number;
  /** Most concurrent streams (calls) per HTTP/2 connection. Default 1,000. */
  readonly maxConcurrentStreams: number;
  /** Interval of keepalive pings the gRPC port sends on a quiet connection, in ms. Default 60,000. */
  readonly keepaliveTimeMs: number;
  /** Time a keepalive ping may go unanswered before the connection is closed, in ms. Default 20,000. */
  readonly keepaliveTimeoutMs: number;
  /** Age after which a connection is asked to go away (so load balancers rebalance), in ms; 0: never. Default 0. */
  readonly maxConnectionAgeMs: number;
  /** Time calls get to finish on a connection past its maximum age, in ms. Default 30,000. */
  readonly maxConnectionAgeGraceMs: number;
  /** Time an idle connection (no calls) stays open, in ms; 0: forever. Default 900,000 (15 minutes). */
  readonly maxConnectionIdleMs: number;
}

/** The defaults of {@link ConnectionOptions}. */
export const defaultConnectionOptions: ConnectionOptions = {
  maxMessageBytes: 4 * 1024 * 1024,
  maxConcurrentStreams: 1000,
  keepaliveTimeMs: 60_000,
  keepaliveTimeoutMs: 20_000,
  maxConnectionAgeMs: 0,
  maxConnectionAgeGraceMs: 30_000,
  maxConnectionIdleMs: 900_000,
};
