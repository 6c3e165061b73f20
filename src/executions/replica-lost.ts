import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { ExecutionSchema, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ToolErrorSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import { failed } from "../runner/run-outcome.js";
import type { EndedRun, RequeuedRun, StoredRun } from "../stores/run-store.js";
import type { EventBody } from "./execution-record.js";

/**
 * What becomes of a live run whose owner was lost (its lease expired): a run that never started an
 * attempt, or whose tool is idempotent or read_only, is handed back for another replica to claim,
 * with a RETRY_SCHEDULED event naming the loss when an attempt was under way; any other run may
 * have had effects, so it is never run again and ends FAILED with a ReplicaLostError.
 */
export function decideLostRun(run: StoredRun): EndedRun | RequeuedRun {
  const execution = run.execution;
  const name = execution.toolName;
  const details = `the replica that owned run ${quote(run.id)} of ${quote(name)} stopped answering (its lease expired) during attempt ${execution.attempts}`;
  const events: RunEvent[] = [];
  const add = (body: EventBody): void => {
    events.push(
      create(RunEventSchema, {
        sequence: BigInt(run.lastSequence + events.length + 1),
        time: timestampNow(),
        executionId: run.id,
        event: body,
      }),
    );
  };
  const error = create(ToolErrorSchema, { toolName: name, errorType: ErrorType.ReplicaLost, details });
  if (execution.attempts === 0 || run.retrySafe) {
    if (execution.attempts > 0) {
      add({ case: "retryScheduled", value: { nextAttempt: execution.attempts + 1, delayMs: 0, error } });
    }
    return {
      kind: "requeued",
      events,
      execution: create(ExecutionSchema, {
        ...execution,
        state: ExecutionState.QUEUED,
        lastSequence: BigInt(run.lastSequence + events.length),
      }),
    };
  }
  const result = failed(
    name,
    ErrorType.ReplicaLost,
    `${details}: a tool that is neither idempotent nor read_only is never run twice`,
    0,
    {
      execution_id: run.id,
      tool_name: name,
      attempts: execution.attempts,
    },
  );
  add({
    case: "executionFinished",
    value: { success: false, durationMs: 0, attempt: execution.attempts, error },
  });
  add({ case: "completed", value: { result } });
  return {
    kind: "ended",
    events,
    execution: create(ExecutionSchema, {
      ...execution,
      state: ExecutionState.FAILED,
      result,
      finishedAt: timestampNow(),
      lastSequence: BigInt(run.lastSequence + events.length),
    }),
  };
}

/** The end of a run cancelled before any replica claimed it. */
export function cancelledUnclaimed(run: StoredRun, reason: string): EndedRun {
  const name = run.execution.toolName;
  const result = failed(
    name,
    ErrorType.Cancelled,
    `run of ${quote(name)} was cancelled before it started: ${reason}`,
    0,
    {
      execution_id: run.id,
      tool_name: name,
    },
  );
  const event = create(RunEventSchema, {
    sequence: BigInt(run.lastSequence + 1),
    time: timestampNow(),
    executionId: run.id,
    event: { case: "completed", value: { result } },
  });
  return {
    kind: "ended",
    events: [event],
    execution: create(ExecutionSchema, {
      ...run.execution,
      state: ExecutionState.CANCELLED,
      result,
      finishedAt: timestampNow(),
      lastSequence: BigInt(run.lastSequence + 1),
    }),
  };
}
