import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { Cancellation } from "../async/cancellation.js";
import { abortReasonText } from "../errors/abort-reason.js";
import { DeadlineExceededError } from "../errors/deadline-exceeded.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import type { ExecutionManager } from "../executions/execution-manager.js";
import type { MaybePromise } from "../async/maybe-promise.js";
import type { ExecutionRecord } from "../executions/execution-record.js";
import { quote } from "../registry/names.js";
import { callCancellation } from "./call-context.js";

/**
 * Time a watcher waits, once shutdown cancelled every run, for its run's terminal event; it must
 * stay below the time the server then gives calls to send their last messages (see
 * `cancelledResultGraceMs`), so that a watcher whose run cannot end gets UNAVAILABLE, not a cut.
 */
export const shutdownWatchGraceMs = 400;

/** Time the server gives calls, once shutdown cancelled every run, before it cuts connections, in ms. */
export const cancelledResultGraceMs = 500;

/**
 * A call whose signal aborts this close to its deadline (ms) ended by its deadline: the client's
 * own deadline timer fires before the server's, which starts when the request arrives.
 */
const deadlineToleranceMs = 100;

/** Why a call's signal aborted: its deadline passed, the server shuts down, or the client left. */
export type CallEnd = "deadline" | "shutdown" | "client";

/** How the call ended early, or undefined while it goes on. */
export function callEndOf(context: HandlerContext): CallEnd | undefined {
  const signal = callCancellation(context);
  if (!signal.aborted) return undefined;
  const reason: unknown = signal.reason;
  if (reason instanceof ConnectError && reason.code === Code.DeadlineExceeded) return "deadline";
  if (reason instanceof ConnectError && reason.code === Code.Unavailable) return "shutdown";
  const leftMs = context.timeoutMs();
  return leftMs !== undefined && leftMs <= deadlineToleranceMs ? "deadline" : "client";
}

/**
 * Whether a run this call owns ended by the call's deadline. Besides a deadline abort, a run whose
 * timeout was cut to the time left before the deadline may time out by itself a moment before the
 * server's deadline timer fires: that TimeoutError is the deadline's too.
 */
function endedByDeadline(context: HandlerContext, result: ToolResult | undefined): boolean {
  if (callEndOf(context) === "deadline") return true;
  if (result?.error?.errorType !== ErrorType.Timeout) return false;
  const leftMs = context.timeoutMs();
  return leftMs !== undefined && leftMs <= deadlineToleranceMs;
}

/**
 * Makes `record` end with the call that created it: when the call goes away, the run is
 * cancelled; when its deadline passes, the run ends as a "TimeoutError". Only the call that
 * created the run may do this: a call that attached to an earlier run (same idempotency key) or a
 * detached one must not bind it. Returns the function that unbinds it.
 */
export function bindRunToCall(
  executions: ExecutionManager,
  record: ExecutionRecord,
  context: HandlerContext,
): () => void {
  const call = callCancellation(context);
  return call.onAbort((reason) => {
    if (!record.isLive) return;
    const end = callEndOf(context);
    cancelInBackground(
      executions,
      record.id,
      end === "deadline" ? new DeadlineExceededError() : abortReasonText(reason, "the client went away"),
    );
  });
}

/**
 * Cancels a run without waiting: locally it is at once; with a shared store the request goes
 * through the store, and a failure there (the store unavailable) leaves the run to its timeout.
 */
export function cancelInBackground(executions: ExecutionManager, id: string, reason: string | Error): void {
  try {
    const cancelled = executions.cancelRun(id, reason);
    if (cancelled instanceof Promise) cancelled.catch(() => undefined);
  } catch {
    // Finished meanwhile: nothing to cancel.
  }
}

/**
 * The result of a run for a unary call: the run's result, or the status the call ends with when
 * it ended first. A call that owns the run waits for its end (the binding stops it at once); one
 * that attached to another's run stops waiting when it goes away. Throws DEADLINE_EXCEEDED when
 * the call's deadline passed, UNAVAILABLE on shutdown for a run this call does not own.
 */
export function awaitForCall(
  record: ExecutionRecord,
  context: HandlerContext,
  owned: boolean,
): MaybePromise<ToolResult> {
  // A run that ended already (its handler returned a value) is answered at once, in memory.
  const answer = record.answeredWith;
  if (owned && answer && !record.persisted) {
    if (endedByDeadline(context, answer)) throw deadlineExceeded(record, true);
    return answer;
  }
  return waitForCall(record, context, owned);
}

async function waitForCall(record: ExecutionRecord, context: HandlerContext, owned: boolean): Promise<ToolResult> {
  // Answered on time even when the run still waits for its handler to stop and rolls back.
  if (owned) {
    const result = await record.answered;
    if (endedByDeadline(context, result)) throw deadlineExceeded(record, true);
    // With a shared store, a result is answered once it is stored.
    await record.durable();
    return result;
  }
  let stopListening: (() => void) | undefined;
  const left = new Promise<undefined>(
    (resolve) => (stopListening = callCancellation(context).onAbort(() => resolve(undefined))),
  );
  try {
    const result = await Promise.race([record.answered, left]);
    if (result) return result;
  } finally {
    stopListening?.();
  }
  throw callEnded(record, context, false);
}

/**
 * The events of a run for a streaming call, from `afterSequence`, in batches (see
 * ExecutionManager.watchBatches). With `untilEnd` (the call owns
 * the run and the binding ends it when the call goes away) the stream goes on to the COMPLETED
 * event; otherwise it stops when the client leaves. On shutdown every watcher waits for the run's
 * terminal event (shutdown cancels every run) for {@link shutdownWatchGraceMs}, and gets UNAVAILABLE
 * when it does not come. A call whose deadline passed ends with DEADLINE_EXCEEDED.
 */
export async function* watchForCall(
  executions: ExecutionManager,
  record: ExecutionRecord,
  afterSequence: number,
  context: HandlerContext,
  untilEnd: boolean,
): AsyncGenerator<readonly RunEvent[]> {
  const stop = new Cancellation();
  let shutdownTimer: NodeJS.Timeout | undefined;
  const onAbort = (): void => {
    const end = callEndOf(context);
    if (end === "shutdown") shutdownTimer = setTimeout(() => stop.abort(undefined), shutdownWatchGraceMs);
    else if (!untilEnd) stop.abort(undefined);
  };
  const stopListening = callCancellation(context).onAbort(onAbort);
  try {
    yield* executions.watchBatches(record, afterSequence, stop);
  } finally {
    stopListening();
    clearTimeout(shutdownTimer);
  }
  const end = callEndOf(context);
  const result = untilEnd && !record.isLive ? await record.done : undefined;
  if (end === "deadline" || (untilEnd && endedByDeadline(context, result))) throw deadlineExceeded(record, untilEnd);
  if (record.isLive && end === "shutdown") throw callEnded(record, context, untilEnd);
}

/**
 * What {@link watchForCall} gives a call that owns a run which ended already (its handler returned
 * a value inside start) in memory: every event, in one batch; undefined for any other run, which is
 * watched. A stream of such a run needs none of the watch's generators, cancellation and
 * listeners. Once the batch is sent, {@link endedRunError} says how the stream ends.
 */
export function endedRunEvents(record: ExecutionRecord): readonly RunEvent[] | undefined {
  return record.answeredWith && !record.isLive && !record.persisted ? record.eventsOnce() : undefined;
}

/** The error a stream of a run that ended (see {@link endedRunEvents}) ends with, as watchForCall's. */
export function endedRunError(record: ExecutionRecord, context: HandlerContext): Error | undefined {
  const deadline = callEndOf(context) === "deadline" || endedByDeadline(context, record.result);
  return deadline ? deadlineExceeded(record, true) : undefined;
}

function callEnded(record: ExecutionRecord, context: HandlerContext, owned: boolean): Error {
  const end = callEndOf(context);
  if (end === "deadline") return deadlineExceeded(record, owned);
  if (end === "shutdown") {
    return new ToolRuntimeError(
      "UNAVAILABLE",
      ErrorType.Unavailable,
      `the server is shutting down and run ${quote(record.id)} of ${quote(record.init.toolName)} did not end within the grace period: retry against a running server`,
      record.init.toolName,
    );
  }
  return new ConnectError(
    abortReasonText(callCancellation(context).reason, "the call was cancelled by the client"),
    Code.Canceled,
  );
}

function deadlineExceeded(record: ExecutionRecord, owned: boolean): ToolRuntimeError {
  const tool = record.init.toolName;
  return new ToolRuntimeError(
    "DEADLINE_EXCEEDED",
    ErrorType.Timeout,
    owned
      ? `the call's deadline passed before run ${quote(record.id)} of ${quote(tool)} ended: the run timed out; allow a longer deadline`
      : `the call's deadline passed before run ${quote(record.id)} of ${quote(tool)} ended: the run goes on; follow it with WatchExecution`,
    tool,
  );
}
