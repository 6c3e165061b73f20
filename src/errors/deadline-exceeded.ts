/**
 * The reason a run's cancellation aborts with when the deadline of the call that owns the run
 * passed: the run then ends as a "TimeoutError", not a "CancelledError", whatever stage it was in
 * (awaiting approval, queued, running, waiting to retry).
 */
export class DeadlineExceededError extends Error {
  override readonly name = "DeadlineExceededError";

  constructor(message = "the caller's deadline passed") {
    super(message);
  }
}

/** Whether an abort reason says that the caller's deadline passed. */
export function isDeadlineExceeded(reason: unknown): reason is DeadlineExceededError {
  return reason instanceof DeadlineExceededError;
}
