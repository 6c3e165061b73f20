import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ExecutionOptionsSchema, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { failed } from "../runner/run-outcome.js";
import { resolvePageSize } from "../registry/page-token.js";
import type { ToolRunner } from "../runner/tool-runner.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import type { RunRequest, SlotRequest, StoredRun } from "../stores/run-store.js";
import type { StoreCall } from "../stores/store-call.js";
import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import type { PreparedRun } from "../runner/tool-runner.js";
import type { Ticket } from "./admission.js";
import type { ResolvedRetryPolicy } from "./retry-policy.js";
import { ExecutionRecord, type Decision, type ExecutionRecordInit } from "./execution-record.js";
import {
  ExecutionManager,
  type CheckedStart,
  type ExecutionManagerOptions,
  type StartOutcome,
  type StartRequest,
} from "./execution-manager.js";
import {
  approvalNotPending,
  checkCancellable,
  checkDigest,
  checkSameInputs,
  newDecision,
  newRecordInit,
  withOrdinal,
} from "./run-checks.js";
import { decodeToken, encodeToken, type ListExecutionsQuery } from "./execution-store.js";
import { cancelledUnclaimed } from "./replica-lost.js";
import { resolveRetryPolicy } from "./retry-policy.js";
import { SharedRuns, storedRecordInit, type SharedRunsOptions } from "./shared-runs.js";

/** Runs claimed at a time by one replica; the cluster's admission then decides when each runs. */
const claimBatch = 16;

/** What a shared manager needs from the runtime to run what it claims. */
export interface SharedExecutionHooks {
  /** The runner for a claimed run: a named one for ExecuteTool, a private one otherwise. */
  runnerFor(lifecycle: RunRequest["lifecycle"], runnerName: string): ToolRunner;
  /** The tools this replica has handlers for (its own and its providers'). */
  claimableTools(): string[];
}

/**
 * The execution manager of a replica sharing a run store. A run is created in the store before it
 * is acknowledged; the replica that can execute it owns it (the one that started it when it has
 * the tool's handler, otherwise the first one that can claim it) and persists its changes. Any
 * replica reads, lists and watches any run (mirrors follow the store), and reaches the owner for a
 * cancellation or an approval through the store; an approval is decided once, in the store.
 * Idempotency keys are global; admission limits (runs at once, per tool, the queue) hold across the
 * cluster, with one FIFO queue in the store.
 */
export class SharedExecutionManager extends ExecutionManager {
  readonly shared: SharedRuns;
  /** Runs stored once (see startRun): their handlers start without waiting for a write. */
  readonly #startsUnstored = new WeakSet<ExecutionRecord>();

  constructor(
    options: ExecutionManagerOptions,
    sharedOptions: SharedRunsOptions,
    private readonly hooks: SharedExecutionHooks,
  ) {
    super(options);
    this.shared = new SharedRuns(sharedOptions, {
      ownedRecord: (id) => this.#held(id),
      resume: (run) => {
        this.#resume(run).catch((error: unknown) =>
          this.logger?.error({ err: error, executionId: run.id }, "a claimed run could not start"),
        );
      },
      // Admission is the cluster's: a claimed run waits in the cluster's queue like any other.
      claimable: () => ({ toolNames: hooks.claimableTools(), room: claimBatch }),
      eventLimits: this.eventLimits,
      logger: this.logger,
      maxConcurrent: this.admission.maxConcurrent,
    });
  }

  /**
   * Starts a run. A run this replica executes, of a tool without approval or a limit of its own,
   * takes a slot of this replica's block (no statement, no lock); the others are admitted in the
   * store as they are created, so a full queue is the caller's status code and creates nothing
   * (a claimer admits the runs it claims). Such a run without an idempotency key is created in a
   * group write (see RunStore.flush) rather than by a statement of its own: before it is
   * acknowledged when its caller does not wait for its result (StartExecution); by its first
   * write otherwise (ExecuteTool, RunTool, MCP), which for a `writes` tool is its attempt's start
   * and for a tool that may safely run again (read_only or idempotent) its end, or the flush window
   * while it goes on (stored once: creation, start and end in one write; its handler starts before
   * anything is stored). Every run in the store has its attempt's start stored before its handler
   * runs. The caller of a run is answered once its end is stored.
   */
  override async startRun(request: StartRequest): Promise<StartOutcome> {
    const { prepared, spec, retry, key } = this.checkStart(request, true);
    // Past the store's capacity, a new run is refused before it costs anything.
    this.refuseWhenBehind(spec.name, request.deadlineMs ?? request.callTimeoutMs);
    const needsApproval = spec.capabilities?.humanApprovalRequired ?? false;
    const retrySafe = (spec.capabilities?.idempotent || spec.capabilities?.readOnly) ?? false;
    const fromBlock = prepared !== undefined && !needsApproval && spec.maxConcurrency === 0;
    const blockTicket = fromBlock ? (this.shared.block.take() ?? (await this.shared.block.afterGrowth())) : undefined;
    const init = newRecordInit(request, spec, key, this.eventLimits, 0);
    try {
      if (blockTicket && prepared && key === "") {
        return await this.#startInGroup(request, prepared, retry, init, retrySafe, blockTicket);
      }
      return await this.#createThenStart(request, { prepared, spec, retry, key }, init, retrySafe, blockTicket);
    } catch (error) {
      blockTicket?.release();
      throw error;
    }
  }

  /** Starts a run created by a group write (see startRun). */
  async #startInGroup(
    request: StartRequest,
    prepared: PreparedRun,
    retry: ResolvedRetryPolicy,
    init: ExecutionRecordInit,
    retrySafe: boolean,
    ticket: Ticket,
  ): Promise<StartOutcome> {
    const store = this.shared.store;
    const record = new ExecutionRecord(init);
    const fence = { id: record.id, owner: store.replicaId, epoch: 1 };
    const creation = { id: init.id, request: toRunRequest(request), retrySafe };
    // Stored once: nothing of it is in the store before its handler starts, so nothing to wait for.
    // A run in the store has its attempt's start stored first, whatever its tool: a handler that
    // takes its replica down at once must still count as an attempt, or it would be taken over and
    // run again without end.
    if (retrySafe && request.awaitsResult) this.#startsUnstored.add(record);
    if (request.awaitsResult) {
      this.store.add(record);
      this.shared.persist(record, fence, 0, creation);
    } else {
      const callTimeoutMs = request.deadlineMs ?? request.callTimeoutMs;
      if (!(await store.flush(fence, [], record.toProto(), creation, storeCall(callTimeoutMs)))) {
        throw leaseNotTrusted(record);
      }
      this.store.add(record);
      this.shared.persist(record, fence, 0);
    }
    this.launch(record, request, prepared, retry, ticket);
    return { record, deduplicated: false };
  }

  /** Starts a run created in the store first (see startRun). */
  async #createThenStart(
    request: StartRequest,
    { prepared, spec, retry, key }: CheckedStart,
    init: ExecutionRecordInit,
    retrySafe: boolean,
    blockTicket: Ticket | undefined,
  ): Promise<StartOutcome> {
    const store = this.shared.store;
    const needsApproval = spec.capabilities?.humanApprovalRequired ?? false;
    const slot = prepared && !needsApproval && !blockTicket ? this.#slotRequest(spec.maxConcurrency) : undefined;
    const draft = new ExecutionRecord(init);
    if (!prepared) draft.state = ExecutionState.QUEUED;
    const callTimeoutMs = request.deadlineMs ?? request.callTimeoutMs;
    const created = await store.create(
      {
        id: init.id,
        execution: draft.toProto(),
        request: toRunRequest(request),
        retrySafe,
        owner: prepared ? store.replicaId : undefined,
      },
      key,
      slot,
      storeCall(callTimeoutMs),
    );
    if ("existing" in created) {
      blockTicket?.release();
      checkSameInputs(created.existing.execution.inputsDigest, created.existing.id, request, key, spec.name);
      return { record: await this.getRun(created.existing.id), deduplicated: true };
    }
    if (!prepared) return { record: await this.getRun(init.id), deduplicated: false };
    const record = new ExecutionRecord(withOrdinal(init, created.ordinal));
    this.store.add(record);
    this.shared.persist(record, { id: record.id, owner: store.replicaId, epoch: 1 }, 0);
    const ticket = blockTicket ?? (created.slot ? this.shared.ticket(record.id, created.slot) : undefined);
    this.launch(record, request, prepared, retry, ticket);
    return { record, deduplicated: false };
  }

  override refuseWhenBehind(toolName: string, callTimeoutMs?: number): void {
    this.shared.store.checkBacklog(toolName, storeCall(callTimeoutMs));
  }

  /**
   * The run from memory when this replica owns it and trusts its lease (see SharedRuns.trusted);
   * otherwise from the store, which answers UNAVAILABLE while unreachable.
   */
  override async getRun(id: string): Promise<ExecutionRecord> {
    const owned = this.#owned(id);
    if (owned) return owned;
    const mirror = await this.shared.mirror(id);
    if (mirror) return mirror;
    // A run this replica lost is the store's to answer for: no longer there, it is unknown.
    if (this.shared.isLost(id)) throw this.unknownExecution(id);
    return this.get(id);
  }

  override async listRuns(query: ListExecutionsQuery): Promise<{ records: ExecutionRecord[]; nextPageToken: string }> {
    const pageSize = resolvePageSize(query.pageSize);
    let before = decodeToken(query.pageToken);
    const records: ExecutionRecord[] = [];
    /** Each listed record's position in the store (a run stored once learns its own only there). */
    const ordinals = new Map<ExecutionRecord, number>();
    // Reads past the page by one match, to know whether another page follows.
    for (;;) {
      const batch = await this.shared.store.list({
        toolName: query.toolName,
        state: query.state,
        beforeOrdinal: before,
        limit: 100,
      });
      for (const run of batch) {
        const record = this.#owned(run.id) ?? this.shared.listed(run);
        ordinals.set(record, run.ordinal);
        if (query.include?.(record) ?? true) records.push(record);
        if (records.length > pageSize) break;
      }
      const last = batch.at(-1);
      if (records.length > pageSize || batch.length < 100 || !last) break;
      before = last.ordinal;
    }
    const page = records.slice(0, pageSize);
    const tail = page.at(-1);
    return {
      records: page,
      nextPageToken: records.length > pageSize && tail ? encodeToken(ordinals.get(tail) ?? tail.init.ordinal) : "",
    };
  }

  override async cancelRun(id: string, reason: string | Error, callTimeoutMs?: number): Promise<ExecutionRecord> {
    if (this.#owned(id)) return this.cancel(id, reason);
    const mirror = await this.getRun(id);
    checkCancellable(mirror);
    if (mirror.isLive) {
      const text = typeof reason === "string" ? reason : reason.message;
      await this.shared.store.requestCancel(id, text, (run) => cancelledUnclaimed(run, text), storeCall(callTimeoutMs));
    }
    return this.getRun(id);
  }

  override async decideRun(
    id: string,
    approved: boolean,
    inputsDigest: string,
    decidedBy: string,
    comment: string,
    callTimeoutMs?: number,
  ): Promise<ExecutionRecord> {
    const record = await this.getRun(id);
    checkDigest(record, inputsDigest);
    const decision = newDecision(approved, decidedBy, comment);
    // The owner's state is stored before the decision is checked against it.
    await record.durable();
    if (!(await this.shared.store.decide(id, toStoredDecision(decision), storeCall(callTimeoutMs)))) {
      throw approvalNotPending(record);
    }
    if (!record.isMirror) record.decide(decision);
    return record.isMirror ? this.getRun(id) : record;
  }

  override onNewRun(listener: (record: ExecutionRecord) => void): () => void {
    const stopLocal = super.onNewRun(listener);
    const stopMirrors = this.shared.onMirror(listener);
    const stopFollowing = this.shared.followAll();
    return () => {
      stopLocal();
      stopMirrors();
      stopFollowing();
    };
  }

  override liveRuns(): ExecutionRecord[] {
    return [...super.liveRuns().filter((record) => !record.isMirror), ...this.shared.liveMirrors()];
  }

  override close(): void {
    super.close();
    this.shared.close();
  }

  protected override decideByTimeout(record: ExecutionRecord, decision: Decision): void {
    // Decided in the store, so a decision sent through another replica meanwhile wins once.
    record
      .durable()
      .then(() => this.shared.store.decide(record.id, toStoredDecision(decision)))
      .then(
        (taken) => taken && record.decide(decision),
        (error: unknown) => this.logger?.warn({ err: error, executionId: record.id }, "approval timeout not recorded"),
      );
  }

  protected override async admit(record: ExecutionRecord, _toolName: string, toolLimit: number): Promise<Ticket> {
    return this.shared.ticket(record.id, await this.shared.store.admit(record.id, this.#slotRequest(toolLimit)));
  }

  #slotRequest(toolLimit: number): SlotRequest {
    return { toolLimit, maxConcurrent: this.admission.maxConcurrent, maxQueued: this.admission.maxQueued };
  }

  /**
   * The attempt's start is stored before its handler is called, and no handler starts on a
   * replica that does not trust its lease (it may have lost the run without knowing yet).
   */
  protected override beforeHandler(record: ExecutionRecord): () => Promise<void> {
    return async () => {
      // A run stored once starts before anything of it is stored: its tool may safely run again.
      if (!this.#startsUnstored.has(record)) await record.durable();
      if (!(await this.shared.untilTrusted(this.shared.store.lease.leaseMs))) throw leaseNotTrusted(record);
      // Checked against the store meanwhile, the run may have turned out to be another replica's.
      if (this.shared.isLost(record.id)) throw leaseNotTrusted(record);
    };
  }

  /** A run this replica holds and may answer for from memory (see getRun). */
  #owned(id: string): ExecutionRecord | undefined {
    return this.shared.trusted() ? this.#held(id) : undefined;
  }

  /** A run this replica holds (it owns it, as far as it knows), trusted or not. */
  #held(id: string): ExecutionRecord | undefined {
    const record = this.store.get(id);
    return record && !record.isMirror && !this.shared.isLost(id) ? record : undefined;
  }

  /** A slot for a claimed run: from this replica's block for a tool without a limit of its own, else the store's. */
  async #admitClaimed(id: string, spec: ToolSpec): Promise<Ticket> {
    if (spec.maxConcurrency === 0) {
      const fromBlock = this.shared.block.take() ?? (await this.shared.block.afterGrowth());
      if (fromBlock) return fromBlock;
    }
    return this.shared.ticket(id, await this.shared.store.admit(id, this.#slotRequest(spec.maxConcurrency)));
  }

  /** Starts here a run claimed from the store: a new one, or one taken back from a lost replica. */
  async #resume(run: StoredRun): Promise<void> {
    const stored = run.request;
    const execution = run.execution;
    const record = new ExecutionRecord(storedRecordInit(run, this.eventLimits));
    const events = await this.shared.store.events(run.id, 0);
    record.restore(execution, events);
    this.store.add(record);
    this.shared.persist(record, { id: run.id, owner: this.shared.store.replicaId, epoch: run.epoch }, events.length);
    const options =
      stored.options === "" ? undefined : fromBinary(ExecutionOptionsSchema, Buffer.from(stored.options, "base64"));
    const request: StartRequest = {
      runner: this.hooks.runnerFor(stored.lifecycle, stored.runnerName),
      requireActive: stored.lifecycle === "execute",
      toolName: stored.toolName,
      inputs: stored.inputs,
      timeoutMs: stored.timeoutMs,
      options,
      caller: execution.caller,
      traceParent: stored.traceParent === "" ? undefined : stored.traceParent,
    };
    try {
      // Activation was checked when the run started; the tool must still be here.
      const prepared = request.runner.prepare(stored.toolName, { timeoutMs: stored.timeoutMs }, false);
      const spec = prepared.tool.spec;
      const approved = events.some((event) => event.event.case === "approvalDecided" && event.event.value.approved);
      // Admitted across the cluster, as a run created here is (a full queue ends it RESOURCE_EXHAUSTED).
      const ticket =
        spec.capabilities?.humanApprovalRequired && !approved ? undefined : await this.#admitClaimed(run.id, spec);
      this.launch(record, request, prepared, resolveRetryPolicy(options?.retryPolicy, spec), ticket, {
        discovered: events.some((event) => event.event.case === "discovered"),
        approved,
        firstAttempt: execution.attempts + 1,
      });
    } catch (error) {
      const details = error instanceof Error ? error.message : String(error);
      const type = (error as { errorType?: string }).errorType ?? "InternalError";
      record.stopClock();
      record.append({
        case: "completed",
        value: { result: failed(stored.toolName, type, details, 0, { execution_id: run.id }) },
      });
      record.finish(failed(stored.toolName, type, details, 0, { execution_id: run.id }));
      this.store.finished(record);
    }
  }
}

function toRunRequest(request: StartRequest): RunRequest {
  return {
    toolName: request.toolName,
    lifecycle: request.requireActive ? "execute" : "run",
    runnerName: request.runner.name,
    inputs: request.inputs as RunRequest["inputs"],
    timeoutMs: request.timeoutMs,
    options: request.options ? Buffer.from(toBinary(ExecutionOptionsSchema, request.options)).toString("base64") : "",
    traceParent: request.traceParent ?? "",
  };
}

/** What the store is told of a call with `timeoutMs` left (see StoreCall). */
function storeCall(timeoutMs: number | undefined): StoreCall {
  return { deadline: timeoutMs === undefined ? undefined : Date.now() + timeoutMs };
}

function leaseNotTrusted(record: ExecutionRecord): ToolRuntimeError {
  return new ToolRuntimeError(
    "UNAVAILABLE",
    ErrorType.Unavailable,
    `this replica's lease on the store is overdue, so it starts no handler of ${quote(record.toolName)} until the store confirms its runs; retry later`,
    record.toolName,
  );
}

function toStoredDecision(decision: Decision) {
  return { ...decision, decidedAt: decision.decidedAt.toISOString() };
}
