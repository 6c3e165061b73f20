import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampMs, timestampNow } from "@bufbuild/protobuf/wkt";
import { ExecutionOptionsSchema, ExecutionSchema, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ToolErrorSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import { failed } from "../runner/run-outcome.js";
import type { EndedRun, RequeuedRun, StoredRun } from "../stores/run-store.js";
import type { EventBody } from "./execution-record.js";

/**
 * Attempts an idempotent or read-only run gets when its replicas are lost, whatever its retry
 * policy: a replica lost once (a crash, a restart) does not fail a run that may safely run again.
 */
const minAttemptsAfterLoss = 2;

/**
 * What becomes of a live run whose owner was lost (its lease expired, or it never held the run):
 * - a cancellation asked of the lost owner ends it CANCELLED;
 * - a run that never started an attempt is handed back for another replica to claim;
 * - a run whose tool is idempotent or read_only is handed back for another attempt (a
 *   RETRY_SCHEDULED event names the ReplicaLostError) while its attempts allow: its retry policy's
 *   `max_attempts`, at least 2. Each loss counts as an attempt, so a run that takes down every
 *   replica it visits (a poison pill) ends after those attempts;
 * - any other run may have had effects: it is never run again and ends FAILED with a ReplicaLostError.
 */
export function decideLostRun(run: StoredRun): EndedRun | RequeuedRun {
  if (run.cancelReason !== undefined) return cancelledUnclaimed(run, run.cancelReason);
  const execution = run.execution;
  const name = execution.toolName;
  const attempts = execution.attempts;
  const events = new EventList(run);
  if (attempts === 0) {
    return {
      kind: "requeued",
      events: [],
      execution: create(ExecutionSchema, { ...execution, state: ExecutionState.QUEUED }),
    };
  }
  const replicasLost = execution.replicasLost + 1;
  const details = `the replica that owned run ${quote(run.id)} of ${quote(name)} stopped answering (its lease expired) during attempt ${attempts}`;
  const error = create(ToolErrorSchema, { toolName: name, errorType: ErrorType.ReplicaLost, details });
  const allowed = Math.max(minAttemptsAfterLoss, policyAttempts(run));
  if (run.retrySafe && attempts < allowed) {
    events.add({ case: "retryScheduled", value: { nextAttempt: attempts + 1, delayMs: 0, error } });
    return {
      kind: "requeued",
      events: events.list,
      execution: create(ExecutionSchema, {
        ...execution,
        state: ExecutionState.QUEUED,
        replicasLost,
        lastSequence: events.lastSequence,
      }),
    };
  }
  const why = run.retrySafe
    ? `${replicasLost} replica${replicasLost === 1 ? " was" : "s were"} lost running it, and its ${attempts} attempts are all it may have (its retry policy's max_attempts, at least ${minAttemptsAfterLoss})`
    : "a tool that is neither idempotent nor read_only is never run twice";
  const runningMs = runningSoFar(run);
  const result = failed(name, ErrorType.ReplicaLost, `${details}: ${why}`, runningMs, {
    execution_id: run.id,
    tool_name: name,
    attempts,
    replicas_lost: replicasLost,
  });
  events.add({
    case: "executionFinished",
    value: { success: false, durationMs: runningMs, attempt: attempts, error },
  });
  events.add({ case: "completed", value: { result } });
  return {
    kind: "ended",
    events: events.list,
    execution: create(ExecutionSchema, {
      ...execution,
      state: ExecutionState.FAILED,
      result,
      runningMs,
      replicasLost,
      finishedAt: timestampNow(),
      lastSequence: events.lastSequence,
    }),
  };
}

/** The end of a run cancelled before any replica claimed it (or whose owner was lost meanwhile). */
export function cancelledUnclaimed(run: StoredRun, reason: string): EndedRun {
  const name = run.execution.toolName;
  const started = run.execution.attempts > 0;
  const result = failed(
    name,
    ErrorType.Cancelled,
    started
      ? `run of ${quote(name)} was cancelled while the replica running it was lost: ${reason}`
      : `run of ${quote(name)} was cancelled before it started: ${reason}`,
    0,
    {
      execution_id: run.id,
      tool_name: name,
    },
  );
  const events = new EventList(run);
  events.add({ case: "completed", value: { result } });
  return {
    kind: "ended",
    events: events.list,
    execution: create(ExecutionSchema, {
      ...run.execution,
      state: ExecutionState.CANCELLED,
      result,
      finishedAt: timestampNow(),
      lastSequence: events.lastSequence,
    }),
  };
}

/** Events numbered after a stored run's. */
class EventList {
  readonly list: RunEvent[] = [];
  readonly #run: StoredRun;

  constructor(run: StoredRun) {
    this.#run = run;
  }

  get lastSequence(): bigint {
    return BigInt(this.#run.lastSequence + this.list.length);
  }

  add(body: EventBody): void {
    this.list.push(
      create(RunEventSchema, {
        sequence: BigInt(this.#run.lastSequence + this.list.length + 1),
        time: timestampNow(),
        executionId: this.#run.id,
        event: body,
      }),
    );
  }
}

/** The attempts the run's retry policy allows (1 when it has none). */
function policyAttempts(run: StoredRun): number {
  if (run.request.options === "") return 1;
  const options = fromBinary(ExecutionOptionsSchema, Buffer.from(run.request.options, "base64"));
  return Math.max(1, options.retryPolicy?.maxAttempts ?? 1);
}

/**
 * Time the run spent running until its loss was found, in milliseconds: since its creation, less
 * its waits for approval and a slot (what the owner stored last may be older).
 */
function runningSoFar(run: StoredRun): number {
  const execution = run.execution;
  const createdAtMs = execution.createdAt ? timestampMs(execution.createdAt) : Date.now();
  const sinceCreated = Date.now() - createdAtMs - execution.awaitingApprovalMs - execution.queuedMs;
  return Math.max(execution.runningMs, Math.round(sinceCreated));
}
