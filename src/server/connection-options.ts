/** Connection management on both ports. Every field has a documented default. */
export interface ConnectionOptions {
  /** Largest request or response message, in bytes. Default 4 MiB. */
  readonly maxMessageBytes: number;
  /** Most concurrent streams (calls) per HTTP/2 connection. Default 100 (RFC 9113's recommended minimum). */
  readonly maxConcurrentStreams: number;
  /** Quiet time after which either port pings an HTTP/2 connection to see that it is alive, in ms. Default 60,000. */
  readonly keepaliveTimeMs: number;
  /** Time a keepalive ping may go unanswered before the connection is closed, in ms. Default 20,000. */
  readonly keepaliveTimeoutMs: number;
  /** Age after which a connection is asked to go away (so load balancers rebalance), in ms; 0: never. Default 0. */
  readonly maxConnectionAgeMs: number;
  /** Time calls get to finish on a connection past its maximum age, in ms. Default 30,000. */
  readonly maxConnectionAgeGraceMs: number;
  /** Time an idle connection (no calls) stays open, in ms; 0: forever. Default 900,000 (15 minutes). */
  readonly maxConnectionIdleMs: number;
  /**
   * Most RPCs in flight in the whole server, both ports and every protocol together (health checks,
   * reflection and the plain-HTTP endpoints excepted); calls beyond it are refused at once with
   * RESOURCE_EXHAUSTED. Long-lived streams (RunTool, WatchExecution, provider streams) count while
   * they last. A call that takes one message counts from when that message has arrived whole (a
   * client that withholds its body holds a connection, not a slot). Default 4,096.
   */
  readonly maxCallsInFlight: number;
  /** Most open connections per port; connections beyond it are closed as they arrive. Default 4,096. */
  readonly maxConnections: number;
  /**
   * Most open connections per port from one remote address, so that one client cannot hold every
   * connection a port takes; 0: no bound of its own. Default 1,024.
   */
  readonly maxConnectionsPerPeer: number;
  /**
   * Time a new connection gets to complete its first request's headers (TLS handshake and HTTP/2
   * preface included), and an idle HTTP/1.1 connection its next request's, in ms; the connection is
   * closed when it runs out. Default 10,000.
   */
  readonly headerTimeoutMs: number;
}

/** The defaults of {@link ConnectionOptions}. */
export const defaultConnectionOptions: ConnectionOptions = {
  maxMessageBytes: 4 * 1024 * 1024,
  maxConcurrentStreams: 100,
  keepaliveTimeMs: 60_000,
  keepaliveTimeoutMs: 20_000,
  maxConnectionAgeMs: 0,
  maxConnectionAgeGraceMs: 30_000,
  maxConnectionIdleMs: 900_000,
  maxCallsInFlight: 4096,
  maxConnections: 4096,
  maxConnectionsPerPeer: 1024,
  headerTimeoutMs: 10_000,
};
