/** One failed call of a `sendAll`: its index in the bodies, the gRPC status code and message. */
export interface FailedCall {
  readonly index: number;
  /** The gRPC status code (-1 when the client could not tell one). */
  readonly code: number;
  readonly details: string;
}

/** What a `sendAll` saw: each response's bytes (undefined for a failed call) and the failures. */
export interface SendResult {
  readonly responses: readonly (Buffer | undefined)[];
  readonly failed: readonly FailedCall[];
  /** From the first call sent to the last answer, in milliseconds. */
  readonly elapsedMs: number;
  /** CPU time this process (the load generator) used meanwhile, in milliseconds. */
  readonly clientCpuMs: number;
}
