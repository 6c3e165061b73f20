import type { ExecutionOptions } from "../../gen/toolruntime/v1/execution_pb.js";
import { checkDurationMs } from "../registry/check-duration.js";

/**
 * Checks every duration of a run's options (queue, heartbeat and approval timeouts, retry backoffs)
 * against the API's maximum, so that each one is honoured as asked. Throws INVALID_ARGUMENT naming
 * the field and the maximum (see checkDurationMs).
 */
export function checkExecutionDurations(options: ExecutionOptions | undefined, toolName: string): void {
  if (!options) return;
  checkDurationMs("options.queue_timeout_ms", options.queueTimeoutMs, toolName);
  checkDurationMs("options.heartbeat_timeout_ms", options.heartbeatTimeoutMs, toolName);
  checkDurationMs("options.approval_timeout_ms", options.approvalTimeoutMs, toolName);
  const retry = options.retryPolicy;
  if (!retry) return;
  checkDurationMs("options.retry_policy.initial_backoff_ms", retry.initialBackoffMs, toolName);
  checkDurationMs("options.retry_policy.max_backoff_ms", retry.maxBackoffMs, toolName);
}
