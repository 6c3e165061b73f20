import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Logger } from "pino";
import { ExecutionState, type ExecutionOptions } from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ToolResultSchema, type ToolResult, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, invalidRequest, ToolRuntimeError, type ErrorTypeName } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import { failed } from "../runner/run-outcome.js";
import type { RegisteredTool } from "../registry/tool-definition.js";
import type { PreparedRun, ToolRunner } from "../runner/tool-runner.js";
import type { MaybePromise } from "../async/maybe-promise.js";
import { cancellationOfSignal, type CancellationView } from "../async/cancellation.js";
import { sharedTimers, type ScheduledTimer } from "../async/shared-timers.js";
import { runWorkBudget } from "../async/turn-budget.js";
import { Admission, type AdmissionOptions, type Ticket } from "./admission.js";
import { defaultStopGraceMs, runAttempts } from "./attempt-loop.js";
import { checkExecutionDurations } from "./check-execution-durations.js";
import { ExecutionRecord, type Decision, type EventLimits } from "./execution-record.js";
import { ExecutionStore, type ListExecutionsQuery, type RetentionOptions } from "./execution-store.js";
import { resolveRetryPolicy, type ResolvedRetryPolicy } from "./retry-policy.js";
import {
  approvalNotPending,
  checkCancellable,
  checkDigest,
  checkSameInputs,
  newDecision,
  newRecordInit,
} from "./run-checks.js";
import { stoppedOutcome } from "./stopped-outcome.js";

/** Options of an {@link ExecutionManager}. Every field has a default. */
export interface ExecutionManagerOptions extends AdmissionOptions, RetentionOptions {
  /** Queue timeout when a call sets none, in milliseconds. Default 60,000. */
  readonly defaultQueueTimeoutMs?: number;
  /** Approval timeout when a call sets none, in milliseconds. Default 300,000. */
  readonly defaultApprovalTimeoutMs?: number;
  /** Interval of HEARTBEAT events while a run is live, in milliseconds. Default 15,000. */
  readonly heartbeatIntervalMs?: number;
  /** Most events and bytes of events one run keeps. Default 10,000 events and 1 MiB. */
  readonly eventLimits?: EventLimits;
  /**
   * How long, after an attempt ended by timeout or cancellation, to wait for its handler to stop
   * before rolling back or retrying, in milliseconds. Past it the rollback is reported as not
   * guaranteed and no retry starts. Default 5,000.
   */
  readonly stopGraceMs?: number;
  /** Where unexpected failures are logged. */
  readonly logger?: Logger | undefined;
  /** Told of every run's end, whatever ended it (metrics count runs by outcome). */
  readonly observers?: readonly ExecutionObserver[] | undefined;
}

/** Watches runs as wholes: once per run, at its end, attempts and stages included. */
export interface ExecutionObserver {
  /**
   * A run ended: succeeded, failed after its attempts, or ended before any (queue timeout,
   * rejected approval, cancelled while queued…). Called synchronously; must not throw.
   */
  onExecutionEnd(record: ExecutionRecord, result: ToolResult): void;
}

/** What to run, and how. */
export interface StartRequest {
  /** The runner: a named one (ExecuteTool, which requires activation) or a private one. */
  readonly runner: ToolRunner;
  /** Whether the tool must already be active in the runner (ExecuteTool). */
  readonly requireActive: boolean;
  readonly toolName: string;
  readonly inputs: unknown;
  /** Time each attempt may take, in milliseconds; 0 for the tool's default. */
  readonly timeoutMs: number;
  /** Time left before the caller's deadline, for runs tied to one call. */
  readonly deadlineMs?: number | undefined;
  /**
   * Time left before the deadline of the call that starts the run, in milliseconds, when the run
   * is not tied to it (StartExecution): a shared store creates nothing once it passed.
   */
  readonly callTimeoutMs?: number | undefined;
  readonly options?: ExecutionOptions | undefined;
  /** Identity that starts the run. */
  readonly caller: string;
  readonly traceParent?: string | undefined;
  /**
   * Whether the caller waits for the run's result (ExecuteTool, RunTool, an MCP tools/call): a run
   * whose handler returns a value then ends inside {@link ExecutionManager.start}, with no promise
   * between the handler and the result. Otherwise (StartExecution) it ends a turn of the microtask
   * queue later, so that the caller has the record as it started (QUEUED, AWAITING_APPROVAL or
   * RUNNING), as StartExecution promises.
   */
  readonly awaitsResult?: boolean | undefined;
}

/** A started run, or the earlier run its idempotency key named. */
export interface StartOutcome {
  readonly record: ExecutionRecord;
  readonly deduplicated: boolean;
}

/** Where a run taken over by this replica continues (see ExecutionManager.drive). */
export interface ResumePoint {
  /** Its DISCOVERED (and ACTIVATED) events are already recorded. */
  readonly discovered: boolean;
  /** It was approved already. */
  readonly approved: boolean;
  /** The number of its next attempt. */
  readonly firstAttempt: number;
}

/** A run that passed the checks before its start; `prepared` is undefined when another replica must run it. */
export interface CheckedStart {
  readonly prepared: PreparedRun | undefined;
  readonly spec: ToolSpec;
  readonly retry: ResolvedRetryPolicy;
  readonly key: string;
}

/** The defaults and limits a manager applies, as GetCapabilities reports them. */
export interface ExecutionLimits {
  readonly maxConcurrentRuns: number;
  readonly maxQueuedRuns: number;
  readonly defaultQueueTimeoutMs: number;
  readonly defaultApprovalTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly retainedExecutions: number;
  readonly retentionMs: number;
  readonly retainedBytes: number;
}

const maxIdempotencyKeyLength = 128;

/**
 * Runs tools as resources: each run gets a record and an event log, goes through approval (when the
 * tool needs it), admission (concurrency limits and a bounded queue), one or more attempts (with
 * checkpoint and rollback for checkpointable tools, retries when a policy allows), and ends with a
 * result, whoever watches or not. Cancellation, approval and the timeouts race safely: each run is
 * decided once, by whichever comes first.
 */
export class ExecutionManager {
  readonly admission: Admission;
  readonly store: ExecutionStore;
  readonly limits: ExecutionLimits;
  protected readonly eventLimits: EventLimits;
  protected readonly logger: Logger | undefined;
  readonly #observers: readonly ExecutionObserver[];
  readonly #stopGraceMs: number;
  readonly #sweeper: NodeJS.Timeout;
  #ordinal = 0;
  /** Runs waiting for a decision now: live, but not what a burst of runs is made of. */
  #awaitingApproval = 0;

  constructor(options: ExecutionManagerOptions = {}) {
    this.admission = new Admission(options);
    this.store = new ExecutionStore(options);
    this.eventLimits = options.eventLimits ?? { maxEvents: 10_000, maxBytes: 1024 * 1024 };
    this.logger = options.logger;
    this.#observers = options.observers ?? [];
    this.#stopGraceMs = options.stopGraceMs ?? defaultStopGraceMs;
    this.limits = {
      maxConcurrentRuns: this.admission.maxConcurrent,
      maxQueuedRuns: this.admission.maxQueued,
      defaultQueueTimeoutMs: options.defaultQueueTimeoutMs ?? 60_000,
      defaultApprovalTimeoutMs: options.defaultApprovalTimeoutMs ?? 300_000,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 15_000,
      retainedExecutions: this.store.maxRetained,
      retentionMs: this.store.retentionMs,
      retainedBytes: this.store.maxRetainedBytes,
    };
    // Evicts records past their age even when no run finishes to trigger it.
    this.#sweeper = setInterval(
      () => this.store.evict(),
      Math.min(60_000, Math.max(1000, this.store.retentionMs / 10)),
    );
    this.#sweeper.unref();
  }

  /**
   * Starts a run: {@link start} here; with a shared store, once the run is stored (see
   * SharedExecutionManager). The services call this, so they serve either.
   */
  startRun(request: StartRequest): MaybePromise<StartOutcome> {
    return this.start(request);
  }

  /**
   * Throws RESOURCE_EXHAUSTED when a new run of `_toolName` is to be refused before it costs
   * anything: with a shared store, while this replica's writes are behind (see
   * RunStore.checkBacklog). Never in memory. `_callTimeoutMs` is the time left before the call's deadline.
   */
  refuseWhenBehind(_toolName: string, _callTimeoutMs?: number): void {
    // In memory a run writes nothing: never behind.
  }

  /** The record of that id (see {@link get}); with a shared store, from any replica. */
  getRun(id: string): MaybePromise<ExecutionRecord> {
    return this.get(id);
  }

  /** A page of records (see {@link list}); with a shared store, every replica's. */
  listRuns(query: ListExecutionsQuery): MaybePromise<{ records: ExecutionRecord[]; nextPageToken: string }> {
    return this.list(query);
  }

  /**
   * Cancels a run (see {@link cancel}); with a shared store, through whichever replica owns it,
   * writing nothing once `_callTimeoutMs` (the time left before the call's deadline) passed.
   */
  cancelRun(id: string, reason: string | Error, _callTimeoutMs?: number): MaybePromise<ExecutionRecord> {
    return this.cancel(id, reason);
  }

  /**
   * Decides a run awaiting approval (see {@link decide}); with a shared store, once across
   * replicas, writing nothing once `_callTimeoutMs` (the time left before the call's deadline) passed.
   */
  decideRun(
    id: string,
    approved: boolean,
    inputsDigest: string,
    decidedBy: string,
    comment: string,
    _callTimeoutMs?: number,
  ): MaybePromise<ExecutionRecord> {
    return this.decide(id, approved, inputsDigest, decidedBy, comment);
  }

  /**
   * Starts a run and returns its record at once. Throws, before anything starts: INVALID_ARGUMENT,
   * NOT_FOUND, FAILED_PRECONDITION (not active, no handler, unsafe without acknowledgement) and
   * RESOURCE_EXHAUSTED (queue full). A matching idempotency key returns the earlier run instead.
   */
  start(request: StartRequest): StartOutcome {
    const { prepared, spec, retry, key } = this.checkStart(request, false);
    const name = spec.name;
    if (key !== "") {
      const earlier = this.store.findByIdempotencyKey(request.caller, name, key);
      if (earlier) {
        checkSameInputs(earlier.inputsDigest, earlier.id, request, key, name);
        return { record: earlier, deduplicated: true };
      }
    }
    const needsApproval = spec.capabilities?.humanApprovalRequired ?? false;
    // Without approval, admission is decided now, so a full queue is the caller's status code.
    const ticket = needsApproval ? undefined : this.admission.admit(name, spec.maxConcurrency);
    const record = new ExecutionRecord(newRecordInit(request, spec, key, this.eventLimits, this.nextOrdinal()));
    this.store.add(record);
    this.launch(record, request, prepared as PreparedRun, retry, ticket);
    return { record, deduplicated: false };
  }

  /**
   * Prepares a run and checks everything that must hold before it starts (see {@link start} for
   * the codes). With `allowRemote`, a tool whose handler is on another replica passes without a
   * prepared run.
   */
  protected checkStart(request: StartRequest, allowRemote: boolean): CheckedStart {
    const options = request.options;
    let prepared: PreparedRun | undefined;
    try {
      prepared = request.runner.prepare(
        request.toolName,
        { timeoutMs: request.timeoutMs, deadlineMs: request.deadlineMs },
        request.requireActive,
      );
    } catch (error) {
      const remote = request.runner.registry.get(request.toolName)?.spec.hasHandler === true;
      const missing = error instanceof ToolRuntimeError && error.errorType === ErrorType.HandlerMissing;
      if (!(allowRemote && remote && missing)) throw error;
    }
    const spec = prepared?.tool.spec ?? (request.runner.registry.get(request.toolName) as RegisteredTool).spec;
    const name = spec.name;
    checkExecutionDurations(options, name);
    if (spec.capabilities?.unsafe && !options?.acknowledgeUnsafe) {
      throw new ToolRuntimeError(
        "FAILED_PRECONDITION",
        ErrorType.UnsafeNotAcknowledged,
        `tool ${quote(name)} is flagged unsafe: set options.acknowledge_unsafe to run it`,
        name,
      );
    }
    const retry = resolveRetryPolicy(options?.retryPolicy, spec);
    const key = options?.idempotencyKey ?? "";
    if (key.length > maxIdempotencyKeyLength) {
      throw invalidRequest(
        `idempotency_key has ${key.length} characters: the limit is ${maxIdempotencyKeyLength}`,
        name,
      );
    }
    return { prepared, spec, retry, key };
  }

  /** The record of that id. Throws NOT_FOUND when unknown or evicted. */
  get(id: string): ExecutionRecord {
    const record = this.store.get(id);
    if (!record) throw this.unknownExecution(id);
    return record;
  }

  /** NOT_FOUND for a run this manager cannot show. */
  protected unknownExecution(id: string): ToolRuntimeError {
    return new ToolRuntimeError(
      "NOT_FOUND",
      ErrorType.NotFound,
      `execution ${quote(id)} is unknown or no longer retained (records are kept ${this.limits.retentionMs} ms, at most ${this.limits.retainedExecutions})`,
    );
  }

  /** A page of records; see ExecutionStore.list. */
  list(query: ListExecutionsQuery): { records: ExecutionRecord[]; nextPageToken: string } {
    return this.store.list(query);
  }

  /**
   * Cancels a run. Idempotent for a cancelled run; FAILED_PRECONDITION ("ExecutionFinishedError")
   * for one that finished otherwise. The run ends as soon as its handler stops or the runner stops
   * waiting for it. A DeadlineExceededError as the reason ends it as a "TimeoutError" instead of a
   * "CancelledError".
   */
  cancel(id: string, reason: string | Error): ExecutionRecord {
    const record = this.get(id);
    checkCancellable(record);
    if (record.isLive && !record.cancellation.aborted) {
      record.cancellation.abort(typeof reason === "string" ? new Error(reason) : reason);
    }
    return record;
  }

  /**
   * Decides a run awaiting approval, once. Throws NOT_FOUND, INVALID_ARGUMENT (digest mismatch) or
   * FAILED_PRECONDITION ("ApprovalNotPendingError": not awaiting approval, or already decided).
   */
  decide(id: string, approved: boolean, inputsDigest: string, decidedBy: string, comment: string): ExecutionRecord {
    const record = this.get(id);
    checkDigest(record, inputsDigest);
    const taken = record.decide(newDecision(approved, decidedBy, comment));
    if (!taken) throw approvalNotPending(record);
    return record;
  }

  /**
   * The events of a run after `afterSequence`, then live ones until COMPLETED. Ends early, quietly,
   * when `signal` aborts. The record must come from {@link get}.
   */
  async *watch(record: ExecutionRecord, afterSequence: number, signal: AbortSignal): AsyncGenerator<RunEvent> {
    for await (const batch of this.watchBatches(record, afterSequence, cancellationOfSignal(signal))) yield* batch;
  }

  /**
   * The same events as {@link watch}, in batches: each batch holds every event recorded since the
   * previous one (never none), so a watcher takes the events of a turn, or a backlog, in one step.
   * Ends early, quietly, when `stop` is cancelled (a Cancellation costs less than an AbortSignal).
   */
  async *watchBatches(
    record: ExecutionRecord,
    afterSequence: number,
    stop: CancellationView,
  ): AsyncGenerator<readonly RunEvent[]> {
    // Not clamped: a sequence number beyond the latest means "only what comes after it".
    let next = Math.max(0, afterSequence);
    let stopListening: (() => void) | undefined;
    const stopped = new Promise<void>((resolve) => (stopListening = stop.onAbort(() => resolve())));
    try {
      while (!stop.aborted) {
        for (let events = record.events; next < events.length; events = record.events) {
          const batch = events.slice(next);
          next = events.length;
          // With a shared store, the end is told once it is stored (a no-op in memory).
          if (batch.some(isCompleted)) await record.durable();
          yield batch;
        }
        if (!record.isLive) return;
        await Promise.race([record.changed(), stopped]);
      }
    } finally {
      stopListening?.();
    }
  }

  /**
   * The most runs in flight at once (queued or running here) since the previous call, at least
   * those now: the store's peak of live runs less the runs awaiting approval now (a backlog of
   * approvals is no burst). For the lull's collections (see async/lull-collection.ts).
   */
  takePeakRunsInFlight(): number {
    return Math.max(0, this.store.takePeakLive() - this.#awaitingApproval);
  }

  /** Cancels every live run (shutdown). */
  cancelAll(reason: string): void {
    for (const record of this.store.live()) {
      if (!record.cancellation.aborted) record.cancellation.abort(new Error(reason));
    }
  }

  /** Stops the retention sweeper. */
  close(): void {
    clearInterval(this.#sweeper);
  }

  /** Drives a run in the background; a bug ends it as an internal error. */
  protected launch(
    record: ExecutionRecord,
    request: StartRequest,
    prepared: PreparedRun,
    retry: ResolvedRetryPolicy,
    ticket: Ticket | undefined,
    resume?: ResumePoint,
  ): void {
    // drive never throws or rejects: a bug ends the run as an internal error there (a `.catch`
    // here was one more closure and promise for every run in flight).
    void this.drive(record, request, prepared, retry, ticket, resume);
  }

  /** Ends a run that a bug stopped, as an internal error; the cause goes to the log. */
  #failedUnexpectedly(record: ExecutionRecord, request: StartRequest, error: unknown): void {
    this.logger?.error({ err: error, executionId: record.id }, "run failed unexpectedly");
    this.#finish(
      record,
      request,
      failed(record.toolName, ErrorType.Internal, "internal error: see the server log", 0, {}),
    );
  }

  /**
   * Calls `listener` with each run from now on that a feed of every run (WatchExecutions) should
   * show; with a shared store, other replicas' runs too. Returns the function that stops it.
   */
  onNewRun(listener: (record: ExecutionRecord) => void): () => void {
    return this.store.onAdd(listener);
  }

  /** The live runs a feed of every run starts from; with a shared store, other replicas' too. */
  liveRuns(): ExecutionRecord[] {
    return this.store.live();
  }

  /** Asks for an admission slot for a run (after its approval); a shared store admits across the cluster. */
  protected admit(_record: ExecutionRecord, toolName: string, toolLimit: number): MaybePromise<Ticket> {
    return this.admission.admit(toolName, toolLimit);
  }

  /** Records the approval timeout's decision (a shared store makes it once across replicas). */
  protected decideByTimeout(record: ExecutionRecord, decision: Decision): void {
    record.decide(decision);
  }

  /** Awaited before each attempt's handler is called (see AttemptLoopOptions.beforeHandler). */
  protected beforeHandler(_record: ExecutionRecord): (() => Promise<void>) | undefined {
    return undefined;
  }

  /** The next ordinal of a record created here. */
  protected nextOrdinal(): number {
    return ++this.#ordinal;
  }

  /**
   * Takes a run through its stages to its end. `resume` continues a run this replica took over:
   * the stages its events already show are skipped and its attempts continue from `firstAttempt`.
   * Never throws or rejects: a bug ends the run as an internal error.
   *
   * A run that waits for nothing before its attempt (no approval, a slot at once) goes straight to
   * {@link #run}, synchronously; only the waits are async functions. An async function keeps its
   * whole frame while it waits: one that held every stage's variables was about 300 bytes of
   * every run in flight, and one more promise for a run that ended in its turn.
   */
  protected drive(
    record: ExecutionRecord,
    request: StartRequest,
    prepared: PreparedRun,
    retry: ResolvedRetryPolicy,
    admitted: Ticket | undefined,
    resume?: ResumePoint,
  ): void | Promise<void> {
    const spec = prepared.tool.spec;
    try {
      if (!resume?.discovered) record.append({ case: "discovered", value: { spec } });
      if (!request.requireActive) {
        // A private runner: the run activates its tool itself.
        request.runner.activate(spec.name);
        if (!resume?.discovered) record.append({ case: "activated", value: { toolName: spec.name } });
      }
    } catch (error) {
      this.#failedUnexpectedly(record, request, error);
      admitted?.release();
      return;
    }
    const awaitsApproval = (spec.capabilities?.humanApprovalRequired ?? false) && !resume?.approved;
    if (awaitsApproval || (admitted !== undefined && !admitted.immediate)) {
      return this.#waitThenRun(record, request, prepared, retry, admitted, awaitsApproval, resume);
    }
    return this.#run(record, request, prepared, retry, admitted, undefined, resume);
  }

  /** The stages before a run's attempts that wait: approval, then a slot in the queue. */
  async #waitThenRun(
    record: ExecutionRecord,
    request: StartRequest,
    prepared: PreparedRun,
    retry: ResolvedRetryPolicy,
    admitted: Ticket | undefined,
    awaitsApproval: boolean,
    resume: ResumePoint | undefined,
  ): Promise<void> {
    const name = prepared.tool.spec.name;
    const signal = record.cancellation;
    const options = request.options;
    // Every run's heartbeat shares one timer (see SharedTimers): no timer is made per run.
    let heartbeat: Heartbeat | undefined = new Heartbeat(record, this.limits.heartbeatIntervalMs);
    let ticket = admitted;
    try {
      if (awaitsApproval) {
        const timeoutMs = options?.approvalTimeoutMs || this.limits.defaultApprovalTimeoutMs;
        const decision = await this.#awaitApproval(record, timeoutMs, signal);
        if (!decision) {
          const stopped = stoppedOutcome(signal, name, "while awaiting approval");
          return this.#end(record, request, stopped.errorType, stopped.details);
        }
        record.append({
          case: "approvalDecided",
          value: { approved: decision.approved, decidedBy: decision.decidedBy },
        });
        if (!decision.approved) {
          return decision.decidedBy === "(timeout)"
            ? this.#end(
                record,
                request,
                ErrorType.ApprovalTimeout,
                `run of ${quote(name)} was not approved within ${timeoutMs} ms`,
              )
            : this.#end(
                record,
                request,
                ErrorType.ApprovalRejected,
                `run of ${quote(name)} was rejected by ${quote(decision.decidedBy)}${decision.comment ? `: ${decision.comment}` : ""}`,
              );
        }
        try {
          ticket = await this.admit(record, name, prepared.tool.spec.maxConcurrency);
        } catch (error) {
          if (error instanceof ToolRuntimeError) return this.#end(record, request, error.errorType, error.details);
          throw error;
        }
      }

      if (ticket && !ticket.immediate) {
        record.setState(ExecutionState.QUEUED);
        record.append({ case: "queued", value: { position: ticket.position } });
        const timeoutMs = options?.queueTimeoutMs || this.limits.defaultQueueTimeoutMs;
        const outcome = await raceGrant(ticket.granted, timeoutMs, signal);
        // A break: a slot freed by each of many runs ending in one turn starts a queued run each.
        const paused = outcome === "granted" ? runWorkBudget.pause() : undefined;
        if (paused) await paused;
        if (outcome !== "granted") {
          ticket.release();
          ticket = undefined;
          if (outcome === "timeout")
            return this.#end(
              record,
              request,
              ErrorType.QueueTimeout,
              `run of ${quote(name)} waited ${timeoutMs} ms for a slot, its queue timeout`,
            );
          const stopped = stoppedOutcome(signal, name, "while queued");
          return this.#end(record, request, stopped.errorType, stopped.details);
        }
      }
      // The run's attempts take the ticket and the heartbeat over.
      const held = ticket;
      const beating = heartbeat;
      ticket = heartbeat = undefined;
      await this.#run(record, request, prepared, retry, held, beating, resume);
    } catch (error) {
      this.#failedUnexpectedly(record, request, error);
    } finally {
      heartbeat?.cancel();
      ticket?.release();
    }
  }

  /**
   * A run's attempts, to its end: at once when they end in this turn (a handler that returned a
   * value, for a caller that waits for the result), else once they settle. Releases `ticket` and
   * cancels `heartbeat` (one is started when the attempts go on past this turn) at the end. Never
   * throws or rejects.
   */
  #run(
    record: ExecutionRecord,
    request: StartRequest,
    prepared: PreparedRun,
    retry: ResolvedRetryPolicy,
    ticket: Ticket | undefined,
    heartbeat: Heartbeat | undefined,
    resume: ResumePoint | undefined,
  ): void | Promise<void> {
    let settling: Promise<void> | undefined;
    try {
      record.setState(ExecutionState.RUNNING);
      const attempted = runAttempts({
        record,
        runner: request.runner,
        prepared,
        inputs: request.inputs,
        retry,
        caller: request.caller,
        traceParent: request.traceParent,
        heartbeatTimeoutMs: request.options?.heartbeatTimeoutMs,
        stopGraceMs: this.#stopGraceMs,
        logger: this.logger,
        onEarlyOutcome: this.#answerEarly,
        firstAttempt: resume?.firstAttempt,
        beforeHandler: this.beforeHandler(record),
      });
      if (attempted instanceof Promise || !request.awaitsResult) {
        settling = this.#finishWhenSettled(record, request, attempted, ticket, heartbeat);
        return settling;
      }
      this.#finish(record, request, attempted);
    } catch (error) {
      this.#failedUnexpectedly(record, request, error);
    } finally {
      if (!settling) {
        heartbeat?.cancel();
        ticket?.release();
      }
    }
  }

  /**
   * Ends a run once its attempts settle. A run that is not done in its turn starts its heartbeat
   * here (unless it waited, and has one already); a result already there (StartExecution of a
   * handler that returned a value) ends the run a turn of the microtask queue later, so that the
   * caller has the record as it started. Reactions rather than an async function: one waiting in
   * every run in flight kept its frame, its two await closures and its promise (about 450 bytes).
   */
  #finishWhenSettled(
    record: ExecutionRecord,
    request: StartRequest,
    attempted: MaybePromise<ToolResult>,
    ticket: Ticket | undefined,
    heartbeat: Heartbeat | undefined,
  ): Promise<void> {
    const beating =
      heartbeat ?? (attempted instanceof Promise ? new Heartbeat(record, this.limits.heartbeatIntervalMs) : undefined);
    return Promise.resolve(attempted).then(
      (result) => this.#finishSettled(record, request, result, ticket, beating),
      (error: unknown) => this.#finishSettled(record, request, error, ticket, beating, true),
    );
  }

  /** The end of {@link #finishWhenSettled}: with the result, or with what the attempts threw (a bug). */
  #finishSettled(
    record: ExecutionRecord,
    request: StartRequest,
    outcome: unknown,
    ticket: Ticket | undefined,
    heartbeat: Heartbeat | undefined,
    threw = false,
  ): void {
    try {
      if (threw) this.#failedUnexpectedly(record, request, outcome);
      else this.#finish(record, request, outcome as ToolResult);
    } catch (error) {
      this.#failedUnexpectedly(record, request, error);
    } finally {
      heartbeat?.cancel();
      ticket?.release();
    }
  }

  async #awaitApproval(record: ExecutionRecord, timeoutMs: number, signal: CancellationView) {
    record.setState(ExecutionState.AWAITING_APPROVAL);
    const decision = record.awaitDecision();
    const expiresAt = new Date(Date.now() + timeoutMs);
    record.append({
      case: "awaitingApproval",
      value: { inputsDigest: record.inputsDigest, expiresAt: timestampFromDate(expiresAt) },
    });
    const timer = setTimeout(
      () =>
        this.decideByTimeout(record, { approved: false, decidedBy: "(timeout)", comment: "", decidedAt: new Date() }),
      timeoutMs,
    );
    let stopListening: (() => void) | undefined;
    const cancelled = new Promise<undefined>((resolve) => (stopListening = signal.onAbort(() => resolve(undefined))));
    this.#awaitingApproval += 1;
    try {
      return await Promise.race([decision, cancelled]);
    } finally {
      this.#awaitingApproval -= 1;
      clearTimeout(timer);
      stopListening?.();
    }
  }

  /** Ends a run that failed before or between its attempts. */
  #end(record: ExecutionRecord, request: StartRequest, errorType: ErrorTypeName, details: string): void {
    const name = record.init.toolName;
    this.#finish(record, request, failed(name, errorType, details, 0, { execution_id: record.id, tool_name: name }));
  }

  /** Answers a run's waiting caller ahead of its end (see AttemptLoopOptions.onEarlyOutcome). */
  readonly #answerEarly = (record: ExecutionRecord, early: ToolResult): void =>
    record.answer(this.#withRunFacts(record, early));

  #finish(record: ExecutionRecord, request: StartRequest, result: ToolResult): void {
    if (!record.isLive) return;
    record.stopClock();
    // The result is this run's own: its facts are added in place rather than by copying it.
    const final = result;
    this.#addRunFacts(record, (final.metadata ??= {}));
    if (!request.requireActive) {
      record.append({ case: "deactivated", value: { wasActive: request.runner.deactivate(record.init.toolName) } });
    }
    record.append({ case: "completed", value: { result: final } });
    record.finish(final);
    this.store.finished(record);
    for (const observer of this.#observers) observer.onExecutionEnd(record, final);
  }

  /** A copy of `result` with the run's facts in its metadata (see {@link addRunFacts}). */
  #withRunFacts(record: ExecutionRecord, result: ToolResult): ToolResult {
    const metadata = { ...result.metadata };
    this.#addRunFacts(record, metadata);
    return create(ToolResultSchema, { ...result, metadata });
  }

  /** Adds the run's facts to a result's metadata: ids, timings, writes, the approval. */
  #addRunFacts(record: ExecutionRecord, metadata: JsonObject): void {
    metadata["execution_id"] = record.id;
    metadata["tool_name"] = record.init.toolName;
    record.addTimings(metadata);
    metadata["writes"] = record.init.writes;
    // Only when some were dropped: a watcher then knows its log of the run is not complete.
    if (record.droppedEvents > 0) metadata["dropped_events"] = record.droppedEvents;
    const decision = record.decision;
    if (decision) {
      metadata["approval"] = {
        approved: decision.approved,
        decided_by: decision.decidedBy,
        decided_at: decision.decidedAt.toISOString(),
        comment: decision.comment,
      };
    }
  }
}

function isCompleted(event: RunEvent): boolean {
  return event.event.case === "completed";
}

/**
 * A run's HEARTBEAT events, every `intervalMs` while it is live: one small object on the shared
 * timers, which call a function shared by every run with it (a closure per run kept the run's
 * whole scope alive for as long as it went on).
 */
class Heartbeat {
  #timer: ScheduledTimer;

  constructor(
    readonly record: ExecutionRecord,
    readonly intervalMs: number,
  ) {
    this.#timer = sharedTimers.schedule(intervalMs, beat, this);
  }

  /** Records a heartbeat and schedules the next. */
  beat(): void {
    this.record.append({ case: "heartbeat", value: { elapsedMs: this.record.toProto().runningMs } });
    this.#timer = sharedTimers.schedule(this.intervalMs, beat, this);
  }

  cancel(): void {
    this.#timer.cancel();
  }
}

const beat = (heartbeat: Heartbeat): void => heartbeat.beat();

/** Waits for a slot, the queue timeout or cancellation, whichever comes first. */
function raceGrant(
  granted: Promise<void>,
  timeoutMs: number,
  signal: CancellationView,
): Promise<"granted" | "timeout" | "cancelled"> {
  if (signal.aborted) return Promise.resolve("cancelled");
  return new Promise((resolve) => new QueueWait(granted, timeoutMs, signal, resolve));
}

type QueueOutcome = "granted" | "timeout" | "cancelled";

/**
 * A queued run's wait for its slot, as one object: the first of the grant, the queue timeout and a
 * cancellation settles it, and the other two are let go. It replaced a race of three promises, each
 * derived from another, which a burst of queued runs (thousands waiting at once) all kept.
 */
class QueueWait {
  readonly #timer: ScheduledTimer;
  readonly #signal: CancellationView;
  #resolve: ((outcome: QueueOutcome) => void) | undefined;
  readonly #onAbort = (): void => this.settle("cancelled");

  constructor(
    granted: Promise<void>,
    timeoutMs: number,
    signal: CancellationView,
    resolve: (outcome: QueueOutcome) => void,
  ) {
    this.#resolve = resolve;
    this.#signal = signal;
    this.#timer = sharedTimers.schedule(timeoutMs, timedOut, this);
    signal.onAbort(this.#onAbort);
    void granted.then(() => this.settle("granted"));
  }

  settle(outcome: QueueOutcome): void {
    const resolve = this.#resolve;
    if (!resolve) return;
    this.#resolve = undefined;
    this.#timer.cancel();
    this.#signal.offAbort(this.#onAbort);
    resolve(outcome);
  }
}

const timedOut = (wait: QueueWait): void => wait.settle("timeout");
