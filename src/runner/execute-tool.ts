import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { performance } from "node:perf_hooks";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { Cancellation, cancellationOfSignal, type CancellationView } from "../async/cancellation.js";
import type { MaybePromise } from "../async/maybe-promise.js";
import { sharedTimers, type ScheduledTimer } from "../async/shared-timers.js";
import { abortReasonText } from "../errors/abort-reason.js";
import { isDeadlineExceeded } from "../errors/deadline-exceeded.js";
import { ErrorType } from "../errors/tool-runtime-error.js";
import { checkJsonObject, outputChunkLimits, type JsonLimits } from "../json/check-json.js";
import type { ProgressReport, RegisteredTool, ToolHandler } from "../registry/tool-definition.js";
import { quote } from "../registry/names.js";
import { DeclaredFailure } from "./declared-failure.js";
import { HandlerContext } from "./handler-context.js";
import { isoTime } from "./iso-time.js";
import { describeThrown, failed, succeeded } from "./run-outcome.js";

/** How one execution is bounded and observed. */
export interface ExecuteOptions {
  /** Identifier of the run. */
  readonly executionId: string;
  /** Name of the runner, recorded in metadata. */
  readonly runnerName: string;
  /** Time the handler may take, in milliseconds. */
  readonly timeoutMs: number;
  /**
   * Aborted when the caller cancels; the run then ends as a CancelledError, or as a TimeoutError
   * when the reason is a DeadlineExceededError.
   */
  readonly signal?: AbortSignal | CancellationView | undefined;
  /** Limits on inputs and output. */
  readonly jsonLimits: JsonLimits;
  /** Receives the handler's progress reports while the run is going. */
  readonly onProgress?: ((report: ProgressReport) => void) | undefined;
  /** Called just before the handler is called. */
  readonly onStart?: (() => void) | undefined;
  /**
   * Called once the handler was called, with a promise that resolves when the handler itself
   * settles (returns, throws or rejects), which may be after the run ended: a handler that ignores
   * its signal keeps running. Never rejects.
   */
  readonly onHandlerCalled?: ((settled: Promise<void>) => void) | undefined;
  /** W3C traceparent of the calling RPC; its trace id goes into the metadata. */
  readonly traceParent?: string | undefined;
  /** Receives the handler's log lines. */
  readonly onLog?: ((level: string, message: string) => void) | undefined;
  /** Receives the handler's partial output chunks. */
  readonly onOutput?: ((chunk: JsonValue) => void) | undefined;
  /** When set, the handler must report progress at least this often (ms) or the run ends. */
  readonly heartbeatTimeoutMs?: number | undefined;
  /** Facts added to the result's metadata. */
  readonly extraMetadata?: JsonObject | undefined;
  /**
   * Set by the execution manager: the metadata gets the facts it fills in once the run ends
   * (`attempts`, the state timings, `writes`) from the start, with placeholder values, so that
   * filling them in changes values rather than the object's shape (which costs an allocation per
   * added fact).
   */
  readonly reserveRunFacts?: boolean | undefined;
}

/** Longest progress message kept, in characters. */
const maxProgressMessageLength = 1024;

type AbortReason = "timeout" | "deadline" | "cancelled" | "heartbeat";

type HandlerOutcome =
  | { readonly kind: "returned"; readonly value: unknown }
  | { readonly kind: "threw"; readonly error: unknown }
  | { readonly kind: "aborted"; readonly reason: AbortReason };

/** The reason a finished run's signal aborts with: one shared Error, as building one per run costs. */
const runFinished = new Error("run finished");

/** Does nothing: the reactions of promises whose value is not needed. */
function ignore(): void {}

/** What onHandlerCalled receives for a handler that returned a value: it settled already. */
const settledAlready: Promise<void> = Promise.resolve();

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/** Longest log line kept, in characters. */
const maxLogMessageLength = 4096;

/**
 * Runs a tool's handler once and returns its ToolResult: at once when the handler returns a value
 * or throws, as a promise when it returns one. Never throws and never rejects: invalid
 * inputs, a throwing or rejecting handler (with any value), a timeout, a cancellation, and output
 * that is not a JSON object matching the output schema each give `success=false` with a precise
 * error. A handler that ignores its signal cannot extend the run: the runner stops waiting at the
 * timeout and discards whatever the handler produces later.
 */
export function executeTool(
  tool: RegisteredTool,
  handler: ToolHandler,
  inputs: unknown,
  options: ExecuteOptions,
): MaybePromise<ToolResult> {
  const name = tool.spec.name;
  const startedAtMs = Date.now();
  // A traceparent reads "version-traceid-spanid-flags".
  const traceId = options.traceParent?.split("-")[1];
  // Built as one literal and then extended in place: spreads in the middle of a literal take
  // V8's slow generic path.
  const metadata = (durationMs: number): JsonObject => {
    const startedAtText = isoTime(startedAtMs);
    const finishedAtText = isoTime(startedAtMs + durationMs);
    const facts: JsonObject = options.reserveRunFacts
      ? {
          execution_id: options.executionId,
          tool_name: name,
          runner: options.runnerName,
          started_at: startedAtText,
          finished_at: finishedAtText,
          timeout_ms: options.timeoutMs,
          capabilities: capabilityFlags(tool),
          attempts: 0,
          awaiting_approval_ms: 0,
          queued_ms: 0,
          running_ms: 0,
          writes: false,
        }
      : {
          execution_id: options.executionId,
          tool_name: name,
          runner: options.runnerName,
          started_at: startedAtText,
          finished_at: finishedAtText,
          timeout_ms: options.timeoutMs,
          capabilities: capabilityFlags(tool),
        };
    if (traceId) facts["trace_id"] = traceId;
    if (options.extraMetadata) Object.assign(facts, options.extraMetadata);
    return facts;
  };

  const inputCheck = checkJsonObject(inputs, "inputs", options.jsonLimits);
  if (!inputCheck.ok) return failed(name, ErrorType.InputValidation, inputCheck.problem, 0, metadata(0));
  const inputProblems = tool.checkInputs?.(inputCheck.value) ?? [];
  if (inputProblems.length > 0) {
    const details = `inputs do not match the input schema of ${quote(name)}: ${inputProblems.join("; ")}`;
    return failed(name, ErrorType.InputValidation, details, 0, metadata(0));
  }
  const caller =
    options.signal === undefined || "onAbort" in options.signal ? options.signal : cancellationOfSignal(options.signal);
  if (caller?.aborted) {
    return isDeadlineExceeded(caller.reason)
      ? failed(name, ErrorType.Timeout, `run of ${quote(name)} timed out before it started`, 0, metadata(0))
      : failed(name, ErrorType.Cancelled, `run of ${quote(name)} was cancelled before it started`, 0, metadata(0));
  }

  // The handler's signal: an AbortSignal is made only if the handler reads it.
  const handlerCancellation = new Cancellation();
  let abortReason: AbortReason | undefined;
  // Set only for a handler that returns a promise: one that returns a value has nothing to race.
  let settleAbort: ((outcome: HandlerOutcome) => void) | undefined;
  let cancelReason = "";
  const abort = (reason: AbortReason): void => {
    if (abortReason) return;
    abortReason = reason;
    if (reason === "cancelled" || reason === "deadline") {
      cancelReason = abortReasonText(caller?.reason, "the caller went away");
    }
    const why =
      reason === "timeout"
        ? `timed out after ${options.timeoutMs} ms`
        : reason === "heartbeat"
          ? `no progress reported for ${options.heartbeatTimeoutMs} ms`
          : reason === "deadline"
            ? `timed out: ${cancelReason}`
            : `cancelled: ${cancelReason}`;
    handlerCancellation.abort(new Error(why));
    settleAbort?.({ kind: "aborted", reason });
  };
  // Timers shared by every run with the same delay (see SharedTimers): none is made per run.
  const timer = sharedTimers.schedule(options.timeoutMs, () => abort("timeout"));
  const heartbeatMs = options.heartbeatTimeoutMs ?? 0;
  let heartbeatTimer: ScheduledTimer | undefined =
    heartbeatMs > 0 ? sharedTimers.schedule(heartbeatMs, () => abort("heartbeat")) : undefined;
  // A deadline that passed is a timeout, whoever noticed it first; anything else is a cancellation.
  const stopListening = caller?.onAbort((reason) => abort(isDeadlineExceeded(reason) ? "deadline" : "cancelled"));

  let running = true;
  const context = new HandlerContext(
    handlerCancellation,
    { executionId: options.executionId, toolName: name, deadline: new Date(startedAtMs + options.timeoutMs) },
    {
      reportProgress(report: ProgressReport): void {
        const fraction = report.fraction;
        if (fraction !== undefined && !(fraction >= 0 && fraction <= 1)) {
          throw new RangeError(`progress fraction ${String(fraction)} is outside 0..1`);
        }
        if (!running) return;
        if (heartbeatTimer) {
          heartbeatTimer.cancel();
          heartbeatTimer = sharedTimers.schedule(heartbeatMs, () => abort("heartbeat"));
        }
        const message = typeof report.message === "string" ? report.message.slice(0, maxProgressMessageLength) : "";
        options.onProgress?.(fraction === undefined ? { message } : { fraction, message });
      },
      log(level, message): void {
        if (!running) return;
        options.onLog?.(level, String(message).slice(0, maxLogMessageLength));
      },
      emitOutput(chunk): void {
        const check = checkJsonObject({ chunk }, "output chunk", outputChunkLimits);
        if (!check.ok) throw new TypeError(check.problem);
        if (running) options.onOutput?.(check.value["chunk"] as JsonValue);
      },
    },
  );

  options.onStart?.();
  const began = performance.now();
  let settling: HandlerOutcome | Promise<HandlerOutcome>;
  try {
    const returned = handler(inputCheck.value, context);
    if (!isThenable(returned)) {
      options.onHandlerCalled?.(settledAlready);
      settling = abortReason ? { kind: "aborted", reason: abortReason } : { kind: "returned", value: returned };
    } else {
      // One promise settled by whichever comes first, the handler or an abort (the first call of
      // a resolve function wins): a race of two derived promises cost three more promises and
      // their reactions for every run of an async handler.
      let settle: (outcome: HandlerOutcome) => void = ignore;
      settling = new Promise<HandlerOutcome>((resolve) => (settle = resolve));
      const handlerSettled = Promise.resolve(returned);
      void handlerSettled.then(
        (value) => settle({ kind: "returned", value }),
        (error: unknown) => settle({ kind: "threw", error }),
      );
      options.onHandlerCalled?.(handlerSettled.then(ignore, ignore));
      settleAbort = settle;
      if (abortReason) settle({ kind: "aborted", reason: abortReason });
    }
  } catch (error) {
    // The handler threw synchronously.
    settling = { kind: "threw", error };
  }
  // A handler that returned a value (or threw) ends the run now: no promise, no turn of the
  // microtask queue between the handler and whoever waits for the result.
  return settling instanceof Promise ? settling.then(conclude) : conclude(settling);

  function conclude(outcome: HandlerOutcome): ToolResult {
    running = false;
    timer.cancel();
    heartbeatTimer?.cancel();
    stopListening?.();
    const durationMs = performance.now() - began;
    // Let a handler that is still running learn that nobody waits for it any more.
    handlerCancellation.abort(runFinished);
    return resultOf(outcome, durationMs);
  }

  function resultOf(outcome: HandlerOutcome, durationMs: number): ToolResult {
    switch (outcome.kind) {
      case "aborted":
        switch (outcome.reason) {
          case "timeout":
            return failed(
              name,
              ErrorType.Timeout,
              `run of ${quote(name)} timed out after ${options.timeoutMs} ms`,
              durationMs,
              metadata(durationMs),
            );
          case "deadline":
            return failed(
              name,
              ErrorType.Timeout,
              `run of ${quote(name)} timed out: ${cancelReason}`,
              durationMs,
              metadata(durationMs),
            );
          case "heartbeat":
            return failed(
              name,
              ErrorType.HeartbeatTimeout,
              `handler of ${quote(name)} reported no progress for ${heartbeatMs} ms, its heartbeat timeout`,
              durationMs,
              metadata(durationMs),
            );
          case "cancelled":
            return failed(
              name,
              ErrorType.Cancelled,
              `run of ${quote(name)} was cancelled: ${cancelReason}`,
              durationMs,
              metadata(durationMs),
            );
        }
        break;
      case "threw":
        if (outcome.error instanceof DeclaredFailure) {
          const output = outcome.error.errorType === ErrorType.OutputValidation;
          return failed(
            name,
            outcome.error.errorType,
            `handler of ${quote(name)} ${output ? "returned invalid output" : "failed"}: ${outcome.error.details}`,
            durationMs,
            metadata(durationMs),
          );
        }
        if (outcome.error instanceof Error && outcome.error.name === "ProviderError") {
          return failed(
            name,
            ErrorType.Provider,
            `provider of ${quote(name)} failed: ${outcome.error.message}`,
            durationMs,
            metadata(durationMs),
          );
        }
        return failed(
          name,
          ErrorType.Handler,
          `handler of ${quote(name)} failed: ${describeThrown(outcome.error)}`,
          durationMs,
          metadata(durationMs),
        );
      case "returned": {
        const outputCheck = checkJsonObject(outcome.value, "output", options.jsonLimits);
        if (!outputCheck.ok) {
          return failed(
            name,
            ErrorType.OutputValidation,
            `handler of ${quote(name)} returned invalid output: ${outputCheck.problem}`,
            durationMs,
            metadata(durationMs),
          );
        }
        const problems = tool.checkOutput?.(outputCheck.value) ?? [];
        if (problems.length > 0) {
          return failed(
            name,
            ErrorType.OutputValidation,
            `output of ${quote(name)} does not match its output schema: ${problems.join("; ")}`,
            durationMs,
            metadata(durationMs),
          );
        }
        const facts = metadata(durationMs);
        facts["output_bytes"] = outputCheck.bytes;
        return succeeded(outputCheck.value, durationMs, facts);
      }
    }
  }
}

/** The flags of each spec, made once: every result of a tool shares them (nothing changes them). */
const flagsBySpec = new WeakMap<object, JsonObject>();

function capabilityFlags(tool: RegisteredTool): JsonObject {
  let flags = flagsBySpec.get(tool.spec);
  if (!flags) {
    flags = flagsOf(tool);
    flagsBySpec.set(tool.spec, flags);
  }
  return flags;
}

function flagsOf(tool: RegisteredTool): JsonObject {
  const capabilities = tool.spec.capabilities;
  return {
    read_only: capabilities?.readOnly ?? false,
    writes: capabilities?.writes ?? false,
    checkpointable: capabilities?.checkpointable ?? false,
    idempotent: capabilities?.idempotent ?? false,
    unsafe: capabilities?.unsafe ?? false,
    human_approval_required: capabilities?.humanApprovalRequired ?? false,
  };
}
