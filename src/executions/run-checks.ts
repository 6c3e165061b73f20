import { ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import type { JsonObject } from "@bufbuild/protobuf";
import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, invalidRequest, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import type { StartRequest } from "./execution-manager.js";
import type { Decision, EventLimits, ExecutionRecord, ExecutionRecordInit } from "./execution-record.js";
import { newExecutionId } from "./execution-id.js";
import { inputsDigest } from "./inputs-digest.js";

// The checks and values both execution managers (in memory and shared) apply to a run's start,
// cancellation and approval, so that either answers alike.

const maxCommentLength = 1024;

/**
 * The record of a new run of `spec` for `request` (a fresh id). One literal, with every field:
 * a spread (`{ ...init, ordinal }`) gave each record's init a hidden class of its own, which V8
 * keeps for as long as the record is retained.
 */
export function newRecordInit(
  request: StartRequest,
  spec: ToolSpec,
  idempotencyKey: string,
  eventLimits: EventLimits,
  ordinal: number,
): ExecutionRecordInit {
  return {
    id: newExecutionId(),
    ordinal,
    toolName: spec.name,
    runnerName: request.runner.name,
    caller: request.caller,
    inputs: heldInputs(request.inputs),
    writes: spec.capabilities?.writes ?? false,
    idempotencyKey,
    eventLimits,
  };
}

/** What a record holds for inputs without a key: one object for all of them. */
const noInputs: JsonObject = Object.freeze({});

/**
 * The inputs a record keeps (for its digest, and for GetExecution with include_inputs): empty ones
 * as one shared object. Most no-op and many status tools take none, and a record is retained long
 * after its run (10,000 of them by default): the empty object each request decoded to was 56 bytes
 * more in each.
 */
function heldInputs(inputs: unknown): unknown {
  if (typeof inputs !== "object" || inputs === null || Object.getPrototypeOf(inputs) !== Object.prototype)
    return inputs;
  // Keys that neither the digest nor an encoding reads (not enumerable, symbols) count as none.
  for (const _key in inputs) return inputs;
  return noInputs;
}

/** The same init with another ordinal (see newRecordInit for why not a spread). */
export function withOrdinal(init: ExecutionRecordInit, ordinal: number): ExecutionRecordInit {
  return {
    id: init.id,
    ordinal,
    toolName: init.toolName,
    runnerName: init.runnerName,
    caller: init.caller,
    inputs: init.inputs,
    writes: init.writes,
    idempotencyKey: init.idempotencyKey,
    eventLimits: init.eventLimits,
  };
}

/** INVALID_ARGUMENT when an idempotency key is reused with other inputs than its run's. */
export function checkSameInputs(
  earlierDigest: string,
  earlierId: string,
  request: StartRequest,
  key: string,
  name: string,
): void {
  if (earlierDigest !== inputsDigest(request.inputs)) {
    throw invalidRequest(
      `idempotency_key ${quote(key)} was used for run ${quote(earlierId)} of ${quote(name)} with other inputs: use a new key for new inputs`,
      name,
    );
  }
}

/** FAILED_PRECONDITION ("ExecutionFinishedError") for a run that finished otherwise than cancelled. */
export function checkCancellable(record: ExecutionRecord): void {
  if (!record.isLive && record.state !== ExecutionState.CANCELLED) {
    throw new ToolRuntimeError(
      "FAILED_PRECONDITION",
      ErrorType.ExecutionFinished,
      `execution ${quote(record.id)} already finished (${ExecutionState[record.state]}): there is nothing to cancel`,
      record.init.toolName,
    );
  }
}

/** INVALID_ARGUMENT when a decision names other inputs than the run's. */
export function checkDigest(record: ExecutionRecord, inputsDigest: string): void {
  if (inputsDigest !== record.inputsDigest) {
    throw invalidRequest(
      `inputs_digest does not match execution ${quote(record.id)}: a decision is bound to the inputs shown in its AWAITING_APPROVAL event`,
      record.init.toolName,
    );
  }
}

/** A decision made now, its comment cut to the limit. */
export function newDecision(approved: boolean, decidedBy: string, comment: string): Decision {
  return { approved, decidedBy, comment: comment.slice(0, maxCommentLength), decidedAt: new Date() };
}

/** FAILED_PRECONDITION ("ApprovalNotPendingError") for a run that awaits no decision. */
export function approvalNotPending(record: ExecutionRecord): ToolRuntimeError {
  return new ToolRuntimeError(
    "FAILED_PRECONDITION",
    ErrorType.ApprovalNotPending,
    `execution ${quote(record.id)} is not awaiting approval (${ExecutionState[record.state]}${record.decision ? ", already decided" : ""})`,
    record.init.toolName,
  );
}
