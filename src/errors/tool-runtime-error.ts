/**
 * Canonical status codes a domain error can carry. They are the gRPC codes by name, which every
 * transport understands; the server maps them to its protocol in one place.
 */
export type StatusCode =
  | "CANCELLED"
  | "INVALID_ARGUMENT"
  | "DEADLINE_EXCEEDED"
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "PERMISSION_DENIED"
  | "UNAUTHENTICATED"
  | "RESOURCE_EXHAUSTED"
  | "FAILED_PRECONDITION"
  | "OUT_OF_RANGE"
  | "UNAVAILABLE"
  | "INTERNAL";

/**
 * Categories of failure, sent as `ToolError.error_type`: the one list of every error type the
 * service returns. Every error site names its type from here (`ErrorTypeName` is the only type
 * `ToolRuntimeError` and failed results accept); a new type is one entry here plus one row in the
 * README's error table, which a test compares with this list.
 */
export const ErrorType = {
  /** The request itself is malformed: a name, filter, page token or timeout. */
  InvalidRequest: "InvalidRequestError",
  /** A spec could not be registered: invalid, colliding, or over a limit. */
  Registration: "RegistrationError",
  /** The tool or registry does not exist. */
  NotFound: "NotFoundError",
  /** The tool to activate does not exist. */
  Activation: "ActivationError",
  /** Execute was called for a tool that is not active in the runner. */
  NotActive: "NotActiveError",
  /** A cancel was asked for a run that already finished otherwise than cancelled. */
  ExecutionFinished: "ExecutionFinishedError",
  /** An approval or rejection was sent for a run that is not awaiting one, or was already decided. */
  ApprovalNotPending: "ApprovalNotPendingError",
  /** A tool flagged unsafe was started without acknowledging it. */
  UnsafeNotAcknowledged: "UnsafeNotAcknowledgedError",
  /** The server holds no handler for the tool. */
  HandlerMissing: "HandlerMissingError",
  /** A server limit was reached. */
  ResourceExhausted: "ResourceExhaustedError",
  /** A resumable stream cannot resume from where the client asked. */
  OutOfRange: "OutOfRangeError",
  /** The call carries no valid credentials. */
  Unauthenticated: "UnauthenticatedError",
  /** The caller's identity lacks the permission the call needs. */
  PermissionDenied: "PermissionDeniedError",
  /** The server is shutting down. */
  Unavailable: "UnavailableError",
  /**
   * The tool is served by a provider that is not connected now (it disconnected; activations are
   * kept): retry after `retry_after_ms`, or on another replica (UNAVAILABLE).
   */
  ProviderUnavailable: "ProviderUnavailableError",
  /** Inputs are not a JSON object or break the tool's input schema (a failed result). */
  InputValidation: "InputValidationError",
  /** Output is not a JSON object or breaks the tool's output schema (a failed result). */
  OutputValidation: "OutputValidationError",
  /** The provider serving the tool failed, vanished or answered with an error (a failed result). */
  Provider: "ProviderError",
  /** The handler threw or rejected (a failed result). */
  Handler: "HandlerError",
  /** The run outlived its timeout or the RPC deadline (a failed result). */
  Timeout: "TimeoutError",
  /** The run was cancelled by its caller (a failed result). */
  Cancelled: "CancelledError",
  /**
   * An attempt's handler was still running when the grace period after its end ran out, so no
   * further attempt was started: attempts never overlap (a failed result).
   */
  HandlerNotStopped: "HandlerNotStoppedError",
  /** The handler reported no progress within the heartbeat timeout (a failed result). */
  HeartbeatTimeout: "HeartbeatTimeoutError",
  /** The run waited for an admission slot longer than its queue timeout (a failed result). */
  QueueTimeout: "QueueTimeoutError",
  /** A human rejected the run (a failed result). */
  ApprovalRejected: "ApprovalRejectedError",
  /** No one approved the run in time (a failed result). */
  ApprovalTimeout: "ApprovalTimeoutError",
  /**
   * The replica that owned the run stopped (crashed, or was cut off past its lease) while the run's
   * tool, neither idempotent nor read_only, may have been executing: it is never run twice, so the
   * run fails (a failed result).
   */
  ReplicaLost: "ReplicaLostError",
  /** A bug in the server; the details are logged, never sent. */
  Internal: "InternalError",
} as const;

/** One of the values of {@link ErrorType}. */
export type ErrorTypeName = (typeof ErrorType)[keyof typeof ErrorType];

/**
 * A request that cannot be served (DESIGN.md §5, tier 2): a status code plus the fields of a
 * `ToolError`. The server turns it into an RPC status with the `ToolError` attached as a detail.
 */
export class ToolRuntimeError extends Error {
  override readonly name = "ToolRuntimeError";

  /**
   * @param code the status code the RPC answers with
   * @param errorType the `ToolError.error_type`
   * @param details the message: lowercase, names the subject in quotes, says what would fix it
   * @param toolName the namespaced tool concerned, or "" when none
   */
  constructor(
    readonly code: StatusCode,
    readonly errorType: ErrorTypeName,
    readonly details: string,
    readonly toolName = "",
    /** For RESOURCE_EXHAUSTED and an offline provider's UNAVAILABLE: when to retry, in milliseconds; 0 when unknown. */
    readonly retryAfterMs = 0,
  ) {
    super(details);
  }
}

/** Whether `value` is a {@link ToolRuntimeError}. */
export function isToolRuntimeError(value: unknown): value is ToolRuntimeError {
  return value instanceof ToolRuntimeError;
}

/** Shorthand for an INVALID_ARGUMENT error about a malformed request. */
export function invalidRequest(details: string, toolName = ""): ToolRuntimeError {
  return new ToolRuntimeError("INVALID_ARGUMENT", ErrorType.InvalidRequest, details, toolName);
}
