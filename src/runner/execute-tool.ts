import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { performance } from "node:perf_hooks";
import type { ToolResult, ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { Cancellation, cancellationOfSignal, type CancellationView } from "../async/cancellation.js";
import type { MaybePromise } from "../async/maybe-promise.js";
import { sharedTimers, type ScheduledTimer } from "../async/shared-timers.js";
import { abortReasonText } from "../errors/abort-reason.js";
import { isDeadlineExceeded } from "../errors/deadline-exceeded.js";
import { ErrorType } from "../errors/tool-runtime-error.js";
import { CheckBudgetExceededError } from "../json/check-budget.js";
import { checkJsonObject, outputChunkLimits, type JsonLimits } from "../json/check-json.js";
import type { SchemaCheck } from "../json/compiled-schemas.js";
import type { ProgressReport, RegisteredTool, ToolContext } from "../registry/tool-definition.js";
import { quote } from "../registry/names.js";
import { DeclaredFailure } from "./declared-failure.js";
import { HandlerContext, type HandlerContextActions } from "./handler-context.js";
import { isoTime } from "./iso-time.js";
import { chunkSizeProblem, roomForOutput, sizeProblem } from "./output-fits.js";
import { cut, describeThrown, failed, succeeded } from "./run-outcome.js";
import { RuntimeFailure } from "./runtime-failure.js";
import { maxLogMessageLength, maxProgressMessageLength } from "./text-limits.js";
import type { RunInfo, RunObserver } from "./run-observer.js";
import type { PreparedRun } from "./tool-runner.js";

/**
 * Receives what a run reports while it goes: one object per run whose methods are called, instead
 * of a closure per kind of report (the closures, and the scopes they kept, were a good part of what
 * a run in flight held).
 */
export interface RunSink {
  /** A progress report of the handler, checked and cut to length. */
  progress?(report: ProgressReport): void;
  /** A log line of the handler, cut to length. */
  log?(level: string, message: string): void;
  /** A partial output chunk of the handler, checked. */
  output?(chunk: JsonValue): void;
  /** Called just before the handler is called. */
  starting?(): void;
  /**
   * Called once the handler was called, with a promise that resolves when the handler itself
   * settles (returns, throws or rejects), which may be after the run ended: a handler that ignores
   * its signal keeps running. Never rejects.
   */
  handlerCalled?(settled: Promise<void>): void;
}

/** What a runner sets for every run it makes. */
export interface RunnerSettings {
  /** Name of the runner, recorded in metadata. */
  readonly runnerName: string;
  /** Limits on inputs and output. */
  readonly jsonLimits: JsonLimits;
  /** Told of the run's start, before its inputs are checked, and of its end, with its result. */
  readonly observers: readonly RunObserver[];
}

/** How one execution is bounded and observed. */
export interface ExecuteOptions {
  /** Identifier of the run. */
  readonly executionId: string;
  /**
   * Aborted when the caller cancels; the run then ends as a CancelledError, or as a TimeoutError
   * when the reason is a DeadlineExceededError.
   */
  readonly signal?: AbortSignal | CancellationView | undefined;
  /** Receives the handler's reports, and hears when it is called. */
  readonly sink?: RunSink | undefined;
  /** Name of the caller's identity, for observers. Default "anonymous". */
  readonly caller?: string | undefined;
  /** W3C traceparent of the calling RPC; its trace id goes into the metadata. */
  readonly traceParent?: string | undefined;
  /** When set, the handler must report progress at least this often (ms) or the run ends. */
  readonly heartbeatTimeoutMs?: number | undefined;
  /** Facts added to the result's metadata. */
  readonly extraMetadata?: JsonObject | undefined;
  /** The attempt this run is, recorded in the metadata as `attempt` when set. */
  readonly attempt?: number | undefined;
  /**
   * Set by the execution manager: the metadata gets the facts it fills in once the run ends
   * (`attempts`, the state timings, `writes`) from the start, with placeholder values, so that
   * filling them in changes values rather than the object's shape (which costs an allocation per
   * added fact).
   */
  readonly reserveRunFacts?: boolean | undefined;
}

type AbortReason = "timeout" | "deadline" | "cancelled" | "heartbeat";

type HandlerOutcome =
  | { readonly kind: "returned"; readonly value: unknown }
  | { readonly kind: "threw"; readonly error: unknown }
  | { readonly kind: "aborted"; readonly reason: AbortReason };

/** The reason a finished run's signal aborts with: one shared Error, as building one per run costs. */
const runFinished = new Error("run finished");

/** What handlerCalled receives for a handler that returned a value: it settled already. */
const settledAlready: Promise<void> = Promise.resolve();

/**
 * Whether `value` is a promise-like. A `then` that cannot be read (a getter or a proxy's trap that
 * throws) is not: the value is then taken as returned, and the output check says it cannot be read.
 */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  try {
    return (
      (typeof value === "object" || typeof value === "function") &&
      value !== null &&
      typeof (value as { then?: unknown }).then === "function"
    );
  } catch {
    return false;
  }
}

// `instanceof` asks a proxy's getPrototypeOf trap, which may throw: these ask without throwing.

/** What a handler threw, when it is a failure a provider declared. */
function declaredFailureOf(thrown: unknown): DeclaredFailure | undefined {
  try {
    return thrown instanceof DeclaredFailure ? thrown : undefined;
  } catch {
    return undefined;
  }
}

/** What a handler threw, when it is a failure the runtime described itself (see RuntimeFailure). */
function runtimeFailureOf(thrown: unknown): RuntimeFailure | undefined {
  try {
    return thrown instanceof RuntimeFailure ? thrown : undefined;
  } catch {
    return undefined;
  }
}

/** What a handler threw, when it is a provider's failure to run it (see providers/). */
function providerErrorOf(thrown: unknown): Error | undefined {
  try {
    return thrown instanceof Error && thrown.name === "ProviderError" ? thrown : undefined;
  } catch {
    return undefined;
  }
}

// Timer callbacks shared by every run: the run comes as the timer's argument, not in a closure.
const abortOnTimeout = (run: ToolExecution): void => run.abort("timeout");
const abortOnHeartbeat = (run: ToolExecution): void => run.abort("heartbeat");

/**
 * Runs a tool's handler once and returns its ToolResult: at once when the handler returns a value
 * or throws, as a promise when it returns one. Never throws and never rejects: invalid
 * inputs, a throwing or rejecting handler (with any value), a timeout, a cancellation, and output
 * that is not a JSON object matching the output schema each give `success=false` with a precise
 * error. A handler that ignores its signal cannot extend the run: the runner stops waiting at the
 * timeout and discards whatever the handler produces later.
 */
export function executeTool(
  prepared: PreparedRun,
  inputs: unknown,
  runner: RunnerSettings,
  options: ExecuteOptions,
): MaybePromise<ToolResult> {
  return new ToolExecution(prepared, inputs, runner, options).start();
}

/**
 * One run of a handler, as one object: its state, the methods its context and timers call, and the
 * facts observers read ({@link RunInfo}). A function with closures for each of these made about a
 * dozen functions and contexts per run, which a run in flight kept alive.
 */
class ToolExecution implements RunInfo, HandlerContextActions {
  readonly #startedAtMs = Date.now();
  /** The handler's signal: an AbortSignal is made only if the handler reads it. */
  #handlerCancellation: Cancellation | undefined = undefined;
  #caller: CancellationView | undefined = undefined;
  /** Listens to the caller's cancellation: a deadline that passed is a timeout, whoever noticed it first. */
  #onCallerAbort: ((reason: unknown) => void) | undefined = undefined;
  #abortReason: AbortReason | undefined = undefined;
  /**
   * Resolves the result of a handler that returned a promise, until the run concluded: one that
   * returns a value has nothing to race.
   */
  #resolve: ((result: ToolResult) => void) | undefined = undefined;
  #cancelReason = "";
  #timer: ScheduledTimer | undefined = undefined;
  #heartbeatTimer: ScheduledTimer | undefined = undefined;
  #running = true;
  #began = 0;

  constructor(
    readonly prepared: PreparedRun,
    readonly inputs: unknown,
    readonly runner: RunnerSettings,
    readonly options: ExecuteOptions,
  ) {}

  get executionId(): string {
    return this.options.executionId;
  }

  get spec(): ToolSpec {
    return this.prepared.tool.spec;
  }

  get runnerName(): string {
    return this.runner.runnerName;
  }

  get caller(): string {
    return this.options.caller ?? "anonymous";
  }

  get traceParent(): string | undefined {
    return this.options.traceParent;
  }

  /** Checks the inputs, calls the handler and gives its result: see {@link executeTool}. */
  start(): MaybePromise<ToolResult> {
    const tool = this.prepared.tool;
    const name = tool.spec.name;
    const options = this.options;
    for (const observer of this.runner.observers) observer.onRunStart?.(this);
    const inputCheck = checkJsonObject(this.inputs, "inputs", this.runner.jsonLimits);
    if (!inputCheck.ok)
      return this.#ended(failed(name, ErrorType.InputValidation, inputCheck.problem, 0, this.#metadata(0)));
    const inputProblems = checkWithinBudget(tool.checkInputs, inputCheck.value, inputCheck.bytes);
    if (typeof inputProblems === "string") {
      const details = `inputs of ${quote(name)} could not be checked against its input schema: ${inputProblems}`;
      return this.#ended(failed(name, ErrorType.InputValidation, details, 0, this.#metadata(0)));
    }
    if (inputProblems.length > 0) {
      const details = `inputs do not match the input schema of ${quote(name)}: ${inputProblems.join("; ")}`;
      return this.#ended(failed(name, ErrorType.InputValidation, details, 0, this.#metadata(0)));
    }
    const caller =
      options.signal === undefined || "onAbort" in options.signal
        ? options.signal
        : cancellationOfSignal(options.signal);
    if (caller?.aborted) {
      const [errorType, details] = isDeadlineExceeded(caller.reason)
        ? [ErrorType.Timeout, `run of ${quote(name)} timed out before it started`]
        : [ErrorType.Cancelled, `run of ${quote(name)} was cancelled before it started`];
      return this.#ended(failed(name, errorType, details, 0, this.#metadata(0)));
    }

    const handlerCancellation = (this.#handlerCancellation = new Cancellation());
    // The heartbeat timeout counts from now, and each progress report, synchronous ones included,
    // starts it again (few runs set one; see the timeout below for the others).
    const heartbeatMs = options.heartbeatTimeoutMs ?? 0;
    if (heartbeatMs > 0) this.#heartbeatTimer = sharedTimers.schedule(heartbeatMs, abortOnHeartbeat, this);
    if (caller) {
      this.#caller = caller;
      this.#onCallerAbort = (reason) => this.abort(isDeadlineExceeded(reason) ? "deadline" : "cancelled");
      caller.onAbort(this.#onCallerAbort);
    }
    const context = new HandlerContext(
      handlerCancellation,
      {
        executionId: options.executionId,
        toolName: name,
        deadline: new Date(this.#startedAtMs + this.prepared.timeoutMs),
      },
      this,
    );

    const sink = options.sink;
    sink?.starting?.();
    const began = (this.#began = performance.now());
    let returned: unknown;
    try {
      returned = this.prepared.handler(inputCheck.value, context);
    } catch (error) {
      // The handler threw synchronously.
      return this.#conclude({ kind: "threw", error });
    }
    if (!isThenable(returned)) {
      // A handler that returned a value ends the run now: no promise, no turn of the microtask
      // queue between the handler and whoever waits for the result.
      sink?.handlerCalled?.(settledAlready);
      const abortReason = this.#abortReason;
      return this.#conclude(
        abortReason ? { kind: "aborted", reason: abortReason } : { kind: "returned", value: returned },
      );
    }
    // The timeout counts from the handler's call but is armed only now: no timer can fire while a
    // handler runs synchronously, so a handler that returned a value needed none. It is on a timer
    // shared by every run with the same delay (see SharedTimers): none is made per run.
    this.#timer = sharedTimers.scheduleSince(began, this.prepared.timeoutMs, abortOnTimeout, this);
    // Whichever comes first, the handler or an abort, concludes the run and resolves its one
    // promise: a race of derived promises, then a promise per layer above, cost several promises
    // and their reactions for every run of an async handler.
    const ended = new Promise<ToolResult>((resolve) => (this.#resolve = resolve));
    // What the sink hears of the handler's end is the promise of these reactions: it resolves
    // once the handler settled (and the run concluded, if it had not yet), and never rejects.
    const handlerSettled = Promise.resolve(returned).then(
      (value) => this.#settle({ kind: "returned", value }),
      (error: unknown) => this.#settle({ kind: "threw", error }),
    );
    sink?.handlerCalled?.(handlerSettled);
    const abortReason = this.#abortReason;
    if (abortReason) this.#settle({ kind: "aborted", reason: abortReason });
    return ended;
  }

  /** Concludes a run whose handler returned a promise, once: the handler settled, or an abort came first. */
  #settle(outcome: HandlerOutcome): void {
    const resolve = this.#resolve;
    if (!resolve) return;
    this.#resolve = undefined;
    resolve(this.#conclude(outcome));
  }

  /** Ends the run for `reason`, once: the handler's signal aborts and nobody waits for it any more. */
  abort(reason: AbortReason): void {
    if (this.#abortReason) return;
    this.#abortReason = reason;
    if (reason === "cancelled" || reason === "deadline") {
      this.#cancelReason = abortReasonText(this.#caller?.reason, "the caller went away");
    }
    const why =
      reason === "timeout"
        ? `timed out after ${this.prepared.timeoutMs} ms`
        : reason === "heartbeat"
          ? `no progress reported for ${this.options.heartbeatTimeoutMs} ms`
          : reason === "deadline"
            ? `timed out: ${this.#cancelReason}`
            : `cancelled: ${this.#cancelReason}`;
    this.#handlerCancellation?.abort(new Error(why));
    this.#settle({ kind: "aborted", reason });
  }

  reportProgress(report: ProgressReport): void {
    const fraction = report.fraction;
    if (fraction !== undefined && !(fraction >= 0 && fraction <= 1)) {
      throw new RangeError(`progress fraction ${String(fraction)} is outside 0..1`);
    }
    if (!this.#running) return;
    if (this.#heartbeatTimer) {
      this.#heartbeatTimer.cancel();
      this.#heartbeatTimer = sharedTimers.schedule(this.options.heartbeatTimeoutMs ?? 0, abortOnHeartbeat, this);
    }
    const message = typeof report.message === "string" ? report.message.slice(0, maxProgressMessageLength) : "";
    this.options.sink?.progress?.(fraction === undefined ? { message } : { fraction, message });
  }

  log(level: Parameters<ToolContext["log"]>[0], message: string): void {
    if (!this.#running) return;
    this.options.sink?.log?.(level, String(message).slice(0, maxLogMessageLength));
  }

  emitOutput(chunk: JsonValue): void {
    const check = checkJsonObject({ chunk }, "output chunk", outputChunkLimits);
    if (!check.ok) throw new TypeError(check.problem);
    const value = check.value["chunk"] as JsonValue;
    const tooLarge = chunkSizeProblem(value, check.bytes, this.runner.jsonLimits.maxBytes);
    if (tooLarge) throw new TypeError(tooLarge);
    if (this.#running) this.options.sink?.output?.(value);
  }

  #conclude(outcome: HandlerOutcome): ToolResult {
    this.#running = false;
    this.#timer?.cancel();
    this.#heartbeatTimer?.cancel();
    if (this.#onCallerAbort) this.#caller?.offAbort(this.#onCallerAbort);
    const durationMs = performance.now() - this.#began;
    // Let a handler that is still running learn that nobody waits for it any more.
    this.#handlerCancellation?.abort(runFinished);
    // A handler that ran past its timeout without giving the timer a turn (a synchronous one, or
    // an async one that blocked before settling) timed out all the same: what it gives late is
    // discarded, as when the timer fires first.
    const late = outcome.kind !== "aborted" && durationMs >= this.prepared.timeoutMs;
    let result: ToolResult;
    try {
      result = this.#resultOf(late ? { kind: "aborted", reason: "timeout" } : outcome, durationMs);
    } catch (error) {
      // Not reached by any handler we know of (values that cannot be read are checked as such):
      // the run still ends, with a result, rather than never.
      const name = this.prepared.tool.spec.name;
      result = failed(
        name,
        ErrorType.Internal,
        `run of ${quote(name)} could not be concluded: ${describeThrown(error)}`,
        durationMs,
        this.#metadata(durationMs),
      );
    }
    return this.#ended(result);
  }

  /** Tells the runner's observers of the run's end, and gives its result. */
  #ended(result: ToolResult): ToolResult {
    for (const observer of this.runner.observers) observer.onRunEnd?.(this, result);
    return result;
  }

  /**
   * The result's metadata, built as one literal and then extended in place: spreads in the middle
   * of a literal take V8's slow generic path. `outputBytes` is given for a successful run: a run the
   * execution manager makes has it in its literal, since a fact added later gives the object a
   * second backing store (about 40 bytes more in each retained record, and a map transition); so
   * does its `attempt`. (A run with a trace id, a checkpoint or extra facts still gets one.)
   */
  #metadata(durationMs: number, outputBytes?: number): JsonObject {
    const options = this.options;
    const startedAtMs = this.#startedAtMs;
    const startedAtText = isoTime(startedAtMs);
    const finishedAtText = isoTime(startedAtMs + durationMs);
    // The execution manager's attempts set both; an embedder's call may set one alone.
    const managed = options.reserveRunFacts === true && options.attempt !== undefined;
    const facts: JsonObject =
      managed && outputBytes !== undefined
        ? {
            execution_id: options.executionId,
            tool_name: this.prepared.tool.spec.name,
            runner: this.runner.runnerName,
            started_at: startedAtText,
            finished_at: finishedAtText,
            timeout_ms: this.prepared.timeoutMs,
            capabilities: capabilityFlags(this.prepared.tool),
            attempts: 0,
            awaiting_approval_ms: 0,
            queued_ms: 0,
            running_ms: 0,
            writes: false,
            attempt: options.attempt,
            output_bytes: outputBytes,
          }
        : managed
          ? {
              execution_id: options.executionId,
              tool_name: this.prepared.tool.spec.name,
              runner: this.runner.runnerName,
              started_at: startedAtText,
              finished_at: finishedAtText,
              timeout_ms: this.prepared.timeoutMs,
              capabilities: capabilityFlags(this.prepared.tool),
              attempts: 0,
              awaiting_approval_ms: 0,
              queued_ms: 0,
              running_ms: 0,
              writes: false,
              attempt: options.attempt,
            }
          : {
              execution_id: options.executionId,
              tool_name: this.prepared.tool.spec.name,
              runner: this.runner.runnerName,
              started_at: startedAtText,
              finished_at: finishedAtText,
              timeout_ms: this.prepared.timeoutMs,
              capabilities: capabilityFlags(this.prepared.tool),
            };
    if (options.reserveRunFacts && !managed) reserveRunFacts(facts);
    // A traceparent reads "version-traceid-spanid-flags".
    const traceId = options.traceParent?.split("-")[1];
    if (traceId) facts["trace_id"] = traceId;
    if (options.attempt !== undefined && !managed) facts["attempt"] = options.attempt;
    if (options.extraMetadata) Object.assign(facts, options.extraMetadata);
    // The size measured wins over extra metadata of that name, as it always did.
    if (outputBytes !== undefined && (!managed || options.extraMetadata)) facts["output_bytes"] = outputBytes;
    return facts;
  }

  #resultOf(outcome: HandlerOutcome, durationMs: number): ToolResult {
    const tool = this.prepared.tool;
    const name = tool.spec.name;
    switch (outcome.kind) {
      case "aborted":
        switch (outcome.reason) {
          case "timeout":
            return failed(
              name,
              ErrorType.Timeout,
              `run of ${quote(name)} timed out after ${this.prepared.timeoutMs} ms`,
              durationMs,
              this.#metadata(durationMs),
            );
          case "deadline":
            return failed(
              name,
              ErrorType.Timeout,
              `run of ${quote(name)} timed out: ${this.#cancelReason}`,
              durationMs,
              this.#metadata(durationMs),
            );
          case "heartbeat":
            return failed(
              name,
              ErrorType.HeartbeatTimeout,
              `handler of ${quote(name)} reported no progress for ${this.options.heartbeatTimeoutMs ?? 0} ms, its heartbeat timeout`,
              durationMs,
              this.#metadata(durationMs),
            );
          case "cancelled":
            return failed(
              name,
              ErrorType.Cancelled,
              `run of ${quote(name)} was cancelled: ${this.#cancelReason}`,
              durationMs,
              this.#metadata(durationMs),
            );
        }
        break;
      case "threw": {
        const declared = declaredFailureOf(outcome.error);
        if (declared) {
          const output = declared.errorType === ErrorType.OutputValidation;
          return failed(
            name,
            declared.errorType,
            `handler of ${quote(name)} ${output ? "returned invalid output" : "failed"}: ${cut(declared.details)}`,
            durationMs,
            this.#metadata(durationMs),
          );
        }
        const runtimeFailure = runtimeFailureOf(outcome.error);
        if (runtimeFailure) {
          return failed(
            name,
            runtimeFailure.errorType,
            cut(runtimeFailure.details),
            durationMs,
            this.#metadata(durationMs),
          );
        }
        const providerError = providerErrorOf(outcome.error);
        if (providerError) {
          return failed(
            name,
            ErrorType.Provider,
            `provider of ${quote(name)} failed: ${cut(providerError.message)}`,
            durationMs,
            this.#metadata(durationMs),
          );
        }
        return failed(
          name,
          ErrorType.Handler,
          `handler of ${quote(name)} failed: ${describeThrown(outcome.error)}`,
          durationMs,
          this.#metadata(durationMs),
        );
      }
      case "returned": {
        const outputCheck = checkJsonObject(outcome.value, "output", this.runner.jsonLimits);
        if (!outputCheck.ok) {
          return failed(
            name,
            ErrorType.OutputValidation,
            `handler of ${quote(name)} returned invalid output: ${outputCheck.problem}`,
            durationMs,
            this.#metadata(durationMs),
          );
        }
        const tooLarge = sizeProblem(
          "output",
          outputCheck.value,
          outputCheck.bytes,
          roomForOutput(this.runner.jsonLimits.maxBytes),
        );
        if (tooLarge) {
          return failed(
            name,
            ErrorType.OutputValidation,
            `handler of ${quote(name)} returned invalid output: ${tooLarge}`,
            durationMs,
            this.#metadata(durationMs),
          );
        }
        const problems = checkWithinBudget(tool.checkOutput, outputCheck.value, outputCheck.bytes);
        if (typeof problems === "string") {
          return failed(
            name,
            ErrorType.OutputValidation,
            `output of ${quote(name)} could not be checked against its output schema: ${problems}`,
            durationMs,
            this.#metadata(durationMs),
          );
        }
        if (problems.length > 0) {
          return failed(
            name,
            ErrorType.OutputValidation,
            `output of ${quote(name)} does not match its output schema: ${problems.join("; ")}`,
            durationMs,
            this.#metadata(durationMs),
          );
        }
        return succeeded(outputCheck.value, durationMs, this.#metadata(durationMs, outputCheck.bytes));
      }
    }
  }
}

/**
 * The problems `check` finds in `value` (none without a schema), or why it could not finish: a
 * check takes work in proportion to the value's size at most (see `check-budget.ts`).
 */
function checkWithinBudget(check: SchemaCheck | undefined, value: JsonObject, bytes: number): string[] | string {
  if (!check) return [];
  try {
    return check(value, bytes);
  } catch (error) {
    if (error instanceof CheckBudgetExceededError) return error.message;
    throw error;
  }
}

/** The facts the execution manager fills in at a run's end, with placeholder values (see ExecuteOptions.reserveRunFacts). */
function reserveRunFacts(facts: JsonObject): void {
  facts["attempts"] = 0;
  facts["awaiting_approval_ms"] = 0;
  facts["queued_ms"] = 0;
  facts["running_ms"] = 0;
  facts["writes"] = false;
}

/**
 * The capability flags of results, one frozen object per combination of the six flags: every result
 * of every tool with the same flags shares it (nothing may change it), and so does the encoding of
 * it that the binary codec keeps for frozen objects (see struct-binary.ts). One object per spec, as
 * before, made as many encodings as registered tools.
 */
const flagsByCombination: (JsonObject | undefined)[] = [];

function capabilityFlags(tool: RegisteredTool): JsonObject {
  const capabilities = tool.spec.capabilities;
  const readOnly = capabilities?.readOnly ?? false;
  const writes = capabilities?.writes ?? false;
  const checkpointable = capabilities?.checkpointable ?? false;
  const idempotent = capabilities?.idempotent ?? false;
  const unsafe = capabilities?.unsafe ?? false;
  const humanApprovalRequired = capabilities?.humanApprovalRequired ?? false;
  const combination =
    (readOnly ? 1 : 0) |
    (writes ? 2 : 0) |
    (checkpointable ? 4 : 0) |
    (idempotent ? 8 : 0) |
    (unsafe ? 16 : 0) |
    (humanApprovalRequired ? 32 : 0);
  return (flagsByCombination[combination] ??= Object.freeze({
    read_only: readOnly,
    writes,
    checkpointable,
    idempotent,
    unsafe,
    human_approval_required: humanApprovalRequired,
  }));
}
