import { create, fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Logger } from "pino";
import type { CancellationView } from "../async/cancellation.js";
import { sharedTimers } from "../async/shared-timers.js";
import { ToolResultSchema, type ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import type { CheckpointHooks, ProgressReport } from "../registry/tool-definition.js";
import { failed } from "../runner/run-outcome.js";
import type { RunSink } from "../runner/execute-tool.js";
import type { ExecuteCallOptions, PreparedRun, ToolRunner } from "../runner/tool-runner.js";
import type { ExecutionRecord } from "./execution-record.js";
import type { MaybePromise } from "../async/maybe-promise.js";
import { retryDelayMs, type ResolvedRetryPolicy } from "./retry-policy.js";
import { stoppedOutcome } from "./stopped-outcome.js";

/** Grace period for a handler to stop after its attempt ended, when none is configured, in milliseconds. */
export const defaultStopGraceMs = 5000;

/** One run's attempts: what to call, how, and how long to wait for a handler to stop. */
export interface AttemptLoopOptions {
  readonly record: ExecutionRecord;
  readonly runner: ToolRunner;
  readonly prepared: PreparedRun;
  readonly inputs: unknown;
  readonly retry: ResolvedRetryPolicy;
  readonly caller: string;
  readonly traceParent?: string | undefined;
  readonly heartbeatTimeoutMs?: number | undefined;
  /**
   * How long, after an attempt ended by timeout or cancellation, to wait for its handler to stop
   * before rolling back or retrying, in milliseconds.
   */
  readonly stopGraceMs: number;
  readonly logger?: Logger | undefined;
  /**
   * Receives the run's outcome ahead of its end when the last attempt is over but its handler has
   * not stopped yet, so that a caller waiting for the result gets it on time; rollback and the
   * final record follow. Its `metadata.checkpoint` says `rollback_pending`.
   */
  readonly onEarlyOutcome?: ((record: ExecutionRecord, result: ToolResult) => void) | undefined;
  /** The first attempt's number: above 1 for a run taken over from a lost replica. Default 1. */
  readonly firstAttempt?: number | undefined;
  /**
   * Awaited after an attempt is recorded as started and before its handler is called: with a
   * shared store, the start is then durable, so a replica lost mid-attempt is known to have started
   * it (and a tool that is not idempotent is never run again). Rejects when it cannot be made so.
   */
  readonly beforeHandler?: (() => Promise<void>) | undefined;
}

/**
 * Runs attempts until one succeeds, the policy stops, or the run is cancelled, and returns the last
 * result with `metadata.attempts` (and `metadata.checkpoint` for checkpointable tools). Attempts
 * never overlap: before rolling back or retrying, it waits until the attempt's handler has stopped
 * (its promise settled), or at most `stopGraceMs`. Past that, the rollback is reported as not
 * guaranteed (`rolled_back: false`, `handler_stopped: false`) and no further attempt starts: the run
 * fails with a HandlerNotStoppedError instead.
 *
 * A run without checkpoints whose first attempt goes straight to its handler, and whose handler
 * returns a value, gets its result at once (no promise) when that attempt is its last.
 */
export function runAttempts(options: AttemptLoopOptions): MaybePromise<ToolResult> {
  const hooks = options.prepared.tool.spec.capabilities?.checkpointable ? options.prepared.tool.hooks : undefined;
  if (hooks || options.beforeHandler) return attemptLoop(options);
  const { record } = options;
  const number = options.firstAttempt ?? 1;
  record.attempts = number;
  record.append({ case: "executionStarted", value: { timeoutMs: options.prepared.timeoutMs, attempt: number } });
  const attempt = new Attempt(options, number);
  const running = options.runner.runNow(options.prepared, options.inputs, attempt);
  return running instanceof Promise
    ? running.then((result) => afterFirstAttempt(options, attempt, result))
    : afterFirstAttempt(options, attempt, running);
}

/** The first attempt of runAttempts ended: the run ends with it, or the loop goes on. */
function afterFirstAttempt(
  options: AttemptLoopOptions,
  attempt: Attempt,
  result: ToolResult,
): MaybePromise<ToolResult> {
  const { record } = options;
  attemptFinished(record, attempt.attempt, result);
  if (isRetrying(options, attempt.attempt, result)) return attemptLoop(options, { attempt, result });
  // The last attempt, without checkpoints: the facts the loop would add (see addFacts there).
  const metadata = (result.metadata ??= {});
  metadata["attempts"] = record.attempts;
  if (options.prepared.tool.spec.capabilities?.checkpointable) metadata["checkpoint"] = { supported: false };
  return result;
}

/** An attempt that ran already: the loop goes on from its result. */
interface RanAttempt {
  readonly attempt: Attempt;
  readonly result: ToolResult;
}

/**
 * One attempt as the runner sees it: its call options, and the sink its handler's reports go to
 * (they become the record's events), in one object rather than an options object and a closure
 * per callback. Keeps the promise of the handler's settling once it was called.
 */
class Attempt implements ExecuteCallOptions, RunSink {
  readonly record: ExecutionRecord;
  readonly executionId: string;
  readonly signal: CancellationView;
  readonly caller: string;
  readonly traceParent: string | undefined;
  readonly heartbeatTimeoutMs: number | undefined;
  /** Resolves when the handler settles; set once it was called. */
  settled: Promise<void> | undefined = undefined;

  constructor(
    options: AttemptLoopOptions,
    readonly attempt: number,
  ) {
    this.record = options.record;
    this.executionId = options.record.id;
    this.signal = options.record.cancellation;
    this.caller = options.caller;
    this.traceParent = options.traceParent;
    this.heartbeatTimeoutMs = options.heartbeatTimeoutMs;
  }

  /** The facts the execution manager fills in at the end are reserved in the metadata. */
  get reserveRunFacts(): boolean {
    return true;
  }

  get sink(): RunSink {
    return this;
  }

  progress(report: ProgressReport): void {
    this.record.append({ case: "progress", value: report });
  }

  log(level: string, message: string): void {
    this.record.append({ case: "log", value: { level, message } });
  }

  output(chunk: JsonValue): void {
    this.record.append({ case: "output", value: { chunk: fromJson(ValueSchema, chunk) } });
  }

  handlerCalled(settled: Promise<void>): void {
    this.settled = settled;
  }
}

/** Whether another attempt follows `result` (before waiting for its handler to stop). */
function isRetrying(options: AttemptLoopOptions, attempt: number, result: ToolResult): boolean {
  const maxAttempts = Math.max(options.retry.maxAttempts, options.firstAttempt ?? 1);
  return (
    !result.success &&
    !options.record.cancellation.aborted &&
    attempt < maxAttempts &&
    !options.retry.nonRetryable.has(result.error?.errorType ?? "")
  );
}

function attemptFinished(record: ExecutionRecord, attempt: number, result: ToolResult): void {
  record.append({
    case: "executionFinished",
    value: {
      success: result.success,
      durationMs: result.durationMs,
      attempt,
      ...(result.error ? { error: result.error } : {}),
    },
  });
}

/** The attempts one after another; `ran` is a first attempt made already (see runAttempts). */
async function attemptLoop(options: AttemptLoopOptions, ran?: RanAttempt): Promise<ToolResult> {
  const { record, prepared, retry } = options;
  const spec = prepared.tool.spec;
  const name = spec.name;
  const signal = record.cancellation;
  const inputs = options.inputs as JsonObject;
  const hooks = spec.capabilities?.checkpointable ? prepared.tool.hooks : undefined;
  const checkpointFacts: JsonObject = { supported: hooks !== undefined };
  const addFacts = (metadata: JsonObject, extra: JsonObject): void => {
    metadata["attempts"] = record.attempts;
    if (spec.capabilities?.checkpointable) metadata["checkpoint"] = { ...checkpointFacts, ...extra };
  };
  // A copy, for an outcome answered ahead of the end (the final result is completed later).
  const withFacts = (result: ToolResult, extra: JsonObject): ToolResult => {
    const metadata = { ...result.metadata };
    addFacts(metadata, extra);
    return create(ToolResultSchema, { ...result, metadata });
  };
  let result: ToolResult | undefined;
  const firstAttempt = options.firstAttempt ?? 1;
  // A run taken over from a lost replica gets its one new attempt whatever its policy says.
  const maxAttempts = Math.max(retry.maxAttempts, firstAttempt);
  for (let attempt = ran?.attempt.attempt ?? firstAttempt; attempt <= maxAttempts; attempt++) {
    let checkpoint: { value: unknown } | undefined;
    let handler: Attempt;
    if (ran && attempt === ran.attempt.attempt) {
      // Made already, without a checkpoint (see runAttempts): the loop goes on from its result.
      result = ran.result;
      handler = ran.attempt;
    } else {
      if (hooks) {
        try {
          checkpoint = { value: await hooks.checkpoint(inputs, { executionId: record.id, signal: signal.signal }) };
          record.append({ case: "checkpointTaken", value: { attempt } });
          checkpointFacts["taken"] = true;
        } catch (error) {
          // The attempt never started: it is not counted (attempts are those started).
          const what = attempt === 1 ? "the run" : `attempt ${attempt}`;
          result = failed(
            name,
            ErrorType.Handler,
            `checkpoint of ${quote(name)} failed, so ${what} did not start: ${String(error)}`,
            0,
            {},
          );
          break;
        }
      }
      record.attempts = attempt;
      record.append({ case: "executionStarted", value: { timeoutMs: prepared.timeoutMs, attempt } });
      handler = new Attempt(options, attempt);
      if (options.beforeHandler) {
        try {
          await options.beforeHandler();
        } catch (error) {
          result = failed(
            name,
            ErrorType.Unavailable,
            `attempt ${attempt} of ${quote(name)} did not start: ${error instanceof Error ? error.message : String(error)}`,
            0,
            {},
          );
          break;
        }
      }
      result = await options.runner.runNow(prepared, options.inputs, handler);
      attemptFinished(record, attempt, result);
    }
    const errorType = result.error?.errorType ?? "";
    const retrying = isRetrying(options, attempt, result);
    const rollingBack = !result.success && checkpoint !== undefined;

    let stopped = true;
    const settled = handler.settled;
    if ((retrying || rollingBack) && settled && !(await settlesAtOnce(settled))) {
      if (!retrying)
        options.onEarlyOutcome?.(record, withFacts(result, { rolled_back: false, rollback_pending: true }));
      stopped = await settlesWithin(settled, options.stopGraceMs);
      if (!stopped) {
        options.logger?.warn(
          { executionId: record.id, toolName: name, attempt, stopGraceMs: options.stopGraceMs },
          "handler did not stop within the grace period after its attempt ended",
        );
        checkpointFacts["handler_stopped"] = false;
      }
    }
    const notStopped = `handler of ${quote(name)} was still running ${options.stopGraceMs} ms after attempt ${attempt} ended`;

    if (rollingBack && checkpoint) {
      const rolledBack = await rollback(hooks!, checkpoint.value, inputs, record.id);
      const outcome = stopped
        ? rolledBack
        : {
            success: false,
            error: `${notStopped}: rollback ran${rolledBack.success ? "" : ` and failed (${rolledBack.error})`}, but what the handler writes after it stays`,
          };
      record.append({ case: "rolledBack", value: outcome });
      checkpointFacts["rolled_back"] = outcome.success;
      if (!outcome.success) checkpointFacts["rollback_error"] = outcome.error;
    }
    if (!retrying) break;
    if (!stopped) {
      result = failed(
        name,
        ErrorType.HandlerNotStopped,
        `${notStopped} (${errorType}): no further attempt was started, so that attempts never overlap; make the handler stop when its signal aborts`,
        result.durationMs,
        result.metadata ?? {},
      );
      break;
    }
    const delayMs = retryDelayMs(retry, attempt + 1);
    record.append({
      case: "retryScheduled",
      value: { nextAttempt: attempt + 1, delayMs, ...(result.error ? { error: result.error } : {}) },
    });
    if (!(await sleep(delayMs, signal))) {
      const stopped = stoppedOutcome(signal, name, "while waiting to retry");
      result = failed(name, stopped.errorType, stopped.details, 0, result.metadata ?? {});
      break;
    }
  }
  // The last result is this run's own (made by its runner or here): completed in place, not copied.
  const final = result as ToolResult;
  addFacts((final.metadata ??= {}), {});
  return final;
}

async function rollback(
  hooks: CheckpointHooks,
  checkpoint: unknown,
  inputs: JsonObject,
  executionId: string,
): Promise<{ success: boolean; error: string }> {
  try {
    await hooks.rollback(checkpoint, inputs, { executionId, signal: new AbortController().signal });
    return { success: true, error: "" };
  } catch (error) {
    return { success: false, error: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * Whether `settled` resolves within the current turn of the event loop: a handler that stops when
 * its signal aborts has settled by then.
 */
async function settlesAtOnce(settled: Promise<void>): Promise<boolean> {
  return Promise.race([settled.then(() => true), nextTurn(false)]);
}

/** Whether `settled` resolves within `ms`. */
async function settlesWithin(settled: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      settled.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function sleep(ms: number, signal: CancellationView): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = sharedTimers.schedule(ms, () => {
      stopListening();
      resolve(true);
    });
    const stopListening = signal.onAbort(() => {
      timer.cancel();
      resolve(false);
    });
  });
}
