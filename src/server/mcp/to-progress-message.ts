import type { RunEvent } from "../../../gen/toolruntime/v1/run_event_pb.js";

/**
 * The text of the MCP progress notification a run event becomes, or undefined for events an MCP
 * client has no use for (stages, heartbeats, logs, partial output, the final events). A run waiting
 * for approval says so with its execution id and inputs digest, which is what an approver passes to
 * `ApproveExecution`.
 */
export function toProgressMessage(event: RunEvent, toolName: string): string | undefined {
  const body = event.event;
  switch (body.case) {
    case "executionStarted":
      return `run ${event.executionId} of ${toolName} started (attempt ${body.value.attempt})`;
    case "progress": {
      const fraction = body.value.fraction;
      const percent = fraction === undefined ? "" : `${Math.round(fraction * 100)}%`;
      return [percent, body.value.message].filter((part) => part !== "").join(" ") || "progress";
    }
    case "queued":
      return `run ${event.executionId} of ${toolName} is queued at position ${body.value.position}`;
    case "awaitingApproval":
      return `run ${event.executionId} of ${toolName} awaits approval: approve it with ApproveExecution (execution_id "${event.executionId}", inputs_digest "${body.value.inputsDigest}")`;
    case "approvalDecided":
      return `run ${event.executionId} of ${toolName} was ${body.value.approved ? "approved" : "rejected"} by ${body.value.decidedBy}`;
    case "retryScheduled":
      return `attempt ${body.value.nextAttempt} of run ${event.executionId} starts in ${body.value.delayMs} ms`;
    default:
      return undefined;
  }
}
