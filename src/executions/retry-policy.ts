import type { RetryPolicy } from "../../gen/toolruntime/v1/execution_pb.js";
import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, invalidRequest } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";

/** A retry policy with its defaults applied. */
export interface ResolvedRetryPolicy {
  readonly maxAttempts: number;
  readonly initialBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly backoffMultiplier: number;
  readonly nonRetryable: ReadonlySet<string>;
}

/** Error types never retried, whatever the policy: retrying cannot change their outcome. */
const neverRetried: readonly string[] = [
  ErrorType.InputValidation,
  ErrorType.Cancelled,
  ErrorType.ApprovalRejected,
  ErrorType.ApprovalTimeout,
  ErrorType.QueueTimeout,
];

/** No retries: one attempt. */
export const noRetries: ResolvedRetryPolicy = {
  maxAttempts: 1,
  initialBackoffMs: 0,
  maxBackoffMs: 0,
  backoffMultiplier: 1,
  nonRetryable: new Set(neverRetried),
};

/**
 * Applies the defaults to a requested policy and checks it. Throws INVALID_ARGUMENT for a policy on
 * a tool that is neither idempotent nor read_only (retrying it could repeat its effects), or for
 * values out of range.
 */
export function resolveRetryPolicy(policy: RetryPolicy | undefined, spec: ToolSpec): ResolvedRetryPolicy {
  if (!policy || policy.maxAttempts <= 1) return noRetries;
  const name = spec.name;
  if (!spec.capabilities?.idempotent && !spec.capabilities?.readOnly) {
    throw invalidRequest(
      `retry_policy is refused for tool ${quote(name)}: it is neither idempotent nor read_only, so a retry could repeat its effects`,
      name,
    );
  }
  if (policy.maxAttempts > 10)
    throw invalidRequest(`retry_policy.max_attempts ${policy.maxAttempts} is too many: use 1 to 10`, name);
  const multiplier = policy.backoffMultiplier === 0 ? 2 : policy.backoffMultiplier;
  if (!(multiplier >= 1 && multiplier <= 10)) {
    throw invalidRequest(`retry_policy.backoff_multiplier ${multiplier} is out of range: use 1 to 10`, name);
  }
  const initialBackoffMs = policy.initialBackoffMs === 0 ? 100 : policy.initialBackoffMs;
  const maxBackoffMs = policy.maxBackoffMs === 0 ? 10_000 : policy.maxBackoffMs;
  if (initialBackoffMs > maxBackoffMs) {
    throw invalidRequest(
      `retry_policy.initial_backoff_ms ${initialBackoffMs} exceeds max_backoff_ms ${maxBackoffMs}`,
      name,
    );
  }
  return {
    maxAttempts: policy.maxAttempts,
    initialBackoffMs,
    maxBackoffMs,
    backoffMultiplier: multiplier,
    nonRetryable: new Set([...neverRetried, ...policy.nonRetryableErrorTypes]),
  };
}

/** Wait before attempt `nextAttempt` (2 for the first retry), in milliseconds. */
export function retryDelayMs(policy: ResolvedRetryPolicy, nextAttempt: number): number {
  const delay = policy.initialBackoffMs * policy.backoffMultiplier ** (nextAttempt - 2);
  return Math.round(Math.min(delay, policy.maxBackoffMs));
}
