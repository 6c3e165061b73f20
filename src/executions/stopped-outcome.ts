import { abortReasonText } from "../errors/abort-reason.js";
import { isDeadlineExceeded } from "../errors/deadline-exceeded.js";
import { ErrorType, type ErrorTypeName } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";

/**
 * The error type and message of a run stopped by its cancellation signal outside an attempt
 * (`phase` is "while queued", "while awaiting approval", …): a "TimeoutError" when the caller's
 * deadline passed, a "CancelledError" otherwise.
 */
export function stoppedOutcome(
  signal: { readonly reason: unknown },
  toolName: string,
  phase: string,
): { errorType: ErrorTypeName; details: string } {
  const reason = abortReasonText(signal.reason, "cancelled");
  return isDeadlineExceeded(signal.reason)
    ? { errorType: ErrorType.Timeout, details: `run of ${quote(toolName)} timed out ${phase}: ${reason}` }
    : { errorType: ErrorType.Cancelled, details: `run of ${quote(toolName)} was cancelled ${phase}: ${reason}` };
}
