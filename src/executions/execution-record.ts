import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { performance } from "node:perf_hooks";
import {
  ApprovalDecisionSchema,
  ExecutionSchema,
  ExecutionState,
  type Execution,
} from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunEventSchema } from "../../gen/toolruntime/v1/run_event_pb.js";
import { type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { Cancellation } from "../async/cancellation.js";
import { ErrorType } from "../errors/tool-runtime-error.js";
import { compactEvent, eventBodyOf } from "./compact-events.js";
import { inputsDigest } from "./inputs-digest.js";
import { runEvent } from "./run-event.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";

/** The body of a run event: which kind, and its fields. */
export type EventBody = NonNullable<MessageInitShape<typeof RunEventSchema>["event"]>;

const resolved = Promise.resolve();

/**
 * Times are kept as milliseconds after this module was loaded: small integers, which V8 keeps in
 * the record itself for about 24 days of uptime (an epoch time needs a boxed number of its own).
 */
const clockBaseMs = Date.now();

/**
 * `n`, an integer, as a 32-bit one when it fits, which V8 keeps unboxed (in 32 bits on a 64-bit
 * Node, 31 where pointers are compressed): arithmetic on boxed numbers, as on an epoch time, may
 * give a boxed result even when it is small.
 */
function smallInteger(n: number): number {
  return n <= 0x7fffffff && n >= -0x80000000 ? n | 0 : n;
}

/** Milliseconds since `clockBaseMs`, as a small integer. */
function clockMs(): number {
  return smallInteger(Date.now() - clockBaseMs);
}

/** Kinds of events that may be dropped when a run emits more than its share. */
const droppable = new Set<EventBody["case"]>(["progress", "log", "output", "heartbeat"]);

/** Most events, and bytes of events, a run keeps; lifecycle events are always kept. */
export interface EventLimits {
  readonly maxEvents: number;
  readonly maxBytes: number;
}

/** A human's (or the timeout's) decision on a run that needed approval. */
export interface Decision {
  readonly approved: boolean;
  readonly decidedBy: string;
  readonly comment: string;
  readonly decidedAt: Date;
}

/** What an {@link ExecutionRecord} is created with. */
export interface ExecutionRecordInit {
  readonly id: string;
  readonly ordinal: number;
  readonly toolName: string;
  readonly runnerName: string;
  readonly caller: string;
  /** The inputs as received, for the digest. */
  readonly inputs: unknown;
  readonly writes: boolean;
  readonly idempotencyKey: string;
  readonly eventLimits: EventLimits;
  /** When a run created on another replica was created (ms since the epoch); now by default. */
  readonly createdAtMs?: number | undefined;
}

/**
 * What few records use: waiters for changes and decisions, promises someone asked for, a shared
 * store's hooks. Kept apart so that a retained record, which has none of them, is smaller.
 */
interface RareParts {
  waiters?: (() => void)[] | undefined;
  decide?: ((decision: Decision) => void) | undefined;
  // The promises of `done` and `answered` are made when first asked for: most runs end with
  // nobody awaiting them (ExecuteTool reads answeredWith).
  settled?: Promise<ToolResult> | undefined;
  settle?: ((result: ToolResult) => void) | undefined;
  answered?: Promise<ToolResult> | undefined;
  answer?: ((result: ToolResult) => void) | undefined;
  /** For a mirror of a run another replica owns: the record as the store last had it. */
  stored?: Execution | undefined;
  /** Resolves once every change so far is in a shared store (see {@link ExecutionRecord.persistWith}). */
  durable?: (() => Promise<void>) | undefined;
  onChange?: (() => void) | undefined;
  /** Times the replica running it was lost and the run taken over (see Execution.replicas_lost). */
  replicasLost?: number | undefined;
}

/**
 * One run as a resource: its state, timings, attempts, approval, result, and the full, ordered log
 * of its events, which any number of watchers read at their own pace (so a slow watcher costs the
 * others nothing and a reattaching one misses nothing). Events are numbered from 1 without gaps.
 * An appended event is kept as its body and time, and built into a RunEvent message only when
 * someone reads {@link events}: most runs of a unary call are never watched.
 */
export class ExecutionRecord {
  // A record is retained for a while after its run (10,000 of them by default), and every object
  // and boxed number it holds is copied by each collection of the young generation it survives and
  // then marked in the old one: times are small integers (see clockBaseMs, and microseconds for
  // the timings), the pending events one plain array, the rarely used parts one optional object,
  // and a finished record is compacted once retained (see compact).
  #createdAtMs = clockMs();
  #events: RunEvent[] | undefined;
  /**
   * Appended events not yet built as messages, three entries each: kind, value, and when it
   * happened, in milliseconds after the record was created (a small integer, which V8 keeps
   * unboxed; an epoch time is a boxed number). Not the `{ case, value }` objects appended, which
   * would stay as one more object per event in a retained record, and not a second array for the
   * times, which is about 150 bytes more (V8 gives an array room for 17 items at its first push).
   */
  #pending: unknown[] = [];
  #cancellation: Cancellation | undefined = new Cancellation();
  state: ExecutionState = ExecutionState.RUNNING;
  attempts = 0;
  result: ToolResult | undefined;
  /** When the run ended, in milliseconds after it was created. */
  #finishedAfterMs: number | undefined;
  decision: Decision | undefined;
  droppedEvents = 0;
  #bytes = 0;
  #inputsDigest: string | undefined;
  /** Time spent in each state, in whole microseconds. */
  #awaitingApprovalUs = 0;
  #queuedUs = 0;
  #runningUs = 0;
  /**
   * When the current state began on the monotonic clock, in microseconds after {@link #monotonicBaseMs}:
   * a small integer, where the monotonic time itself is a boxed number.
   */
  #stateSinceUs = this.#monotonicUs();
  #clockStopped = false;
  #rare: RareParts | undefined;
  /** What {@link answered} resolved with, kept so that a caller can have it without waiting. */
  #answeredWith: ToolResult | undefined;

  constructor(readonly init: ExecutionRecordInit) {
    // A run taken over from another replica keeps its creation time.
    if (init.createdAtMs !== undefined) this.#createdAtMs = smallInteger(init.createdAtMs - clockBaseMs);
  }

  /** Cancels the run; its reason says why. */
  get cancellation(): Cancellation {
    // A compacted record let its cancellation go (see compact): a finished run has nothing to cancel.
    this.#cancellation ??= new Cancellation();
    return this.#cancellation;
  }

  /**
   * Called after each change (an event, a state, the end) of a record whose changes a shared store
   * persists; undefined otherwise, so an in-memory run pays nothing for it.
   */
  get onChange(): (() => void) | undefined {
    return this.#rare?.onChange;
  }

  set onChange(listener: (() => void) | undefined) {
    this.#rareParts().onChange = listener;
  }

  get id(): string {
    return this.init.id;
  }

  /** When the run was created. */
  get createdAt(): Date {
    return new Date(clockBaseMs + this.#createdAtMs);
  }

  /** When the run ended; undefined while it is live. */
  get finishedAt(): Date | undefined {
    const finishedAtMs = this.finishedAtMs;
    return finishedAtMs === undefined ? undefined : new Date(finishedAtMs);
  }

  /** The same, as epoch milliseconds. */
  get finishedAtMs(): number | undefined {
    const after = this.#finishedAfterMs;
    return after === undefined ? undefined : clockBaseMs + this.#createdAtMs + after;
  }

  /** The tool the run executes. */
  get toolName(): string {
    return this.init.toolName;
  }

  /** Name of the identity that started the run: its owner. */
  get owner(): string {
    return this.init.caller;
  }

  /** SHA-256 (hex) of the inputs' canonical JSON, computed when first needed. */
  get inputsDigest(): string {
    const stored = this.#rare?.stored;
    if (stored) return stored.inputsDigest;
    this.#inputsDigest ??= inputsDigest(this.init.inputs);
    return this.#inputsDigest;
  }

  /** Whether the run has not reached a final state. */
  get isLive(): boolean {
    return this.result === undefined;
  }

  /** Bytes held by this record's events (an estimate: see estimateBytes). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Resolves with the result when the run ends. */
  get done(): Promise<ToolResult> {
    const rare = this.#rareParts();
    rare.settled ??= this.result ? Promise.resolve(this.result) : new Promise((resolve) => (rare.settle = resolve));
    return rare.settled;
  }

  /**
   * Resolves with the result a caller waiting for the run is answered with: the final one, or an
   * earlier one (see {@link answer}) when the outcome is known while the run still cleans up.
   */
  get answered(): Promise<ToolResult> {
    const rare = this.#rareParts();
    rare.answered ??= this.#answeredWith
      ? Promise.resolve(this.#answeredWith)
      : new Promise((resolve) => (rare.answer = resolve));
    return rare.answered;
  }

  /**
   * Answers the callers waiting on {@link answered} ahead of the end: the outcome is decided, and
   * what follows (waiting for a handler to stop, rollback) must not hold them past their timeout.
   * The first answer wins; {@link finish} answers too.
   */
  answer(result: ToolResult): void {
    if (this.#answeredWith) return;
    this.#answeredWith = result;
    const rare = this.#rare;
    if (rare?.answer) {
      rare.answer(result);
      rare.answer = undefined;
    }
  }

  /** The result {@link answered} resolved with, once there is one; undefined before. */
  get answeredWith(): ToolResult | undefined {
    return this.#answeredWith;
  }

  /** The events so far, in order (event n has sequence n). */
  get events(): readonly RunEvent[] {
    if (this.#pending.length > 0) this.#build();
    return (this.#events ??= []);
  }

  /**
   * The events, as {@link events} gives them; for a finished run none of whose events was built
   * yet, built without being kept, so that the record stays in its compact form for as long as it
   * is retained (six RunEvent messages, their times and bodies, are about a kilobyte more per
   * record). For a reader that reads them once: RunTool of a run that ended inside start.
   */
  eventsOnce(): readonly RunEvent[] {
    if (this.isLive || (this.#events?.length ?? 0) > 0) return this.events;
    const events: RunEvent[] = [];
    this.#buildPending(events);
    return events;
  }

  /** The sequence number of the latest event. */
  get lastSequence(): number {
    return (this.#events?.length ?? 0) + this.#pending.length / 3;
  }

  /** Appends an event; returns false when a droppable event was dropped over the limits. */
  append(body: EventBody): boolean {
    if (!this.isLive && body.case !== "completed" && body.case !== "deactivated") return false;
    const size = estimateBytes(body);
    const limits = this.init.eventLimits;
    if (droppable.has(body.case) && (this.lastSequence >= limits.maxEvents || this.#bytes + size > limits.maxBytes)) {
      this.droppedEvents += 1;
      return false;
    }
    this.#pending.push(body.case, body.value, smallInteger(clockMs() - this.#createdAtMs));
    this.#bytes += size;
    this.#wake();
    this.onChange?.();
    return true;
  }

  /**
   * Makes this record's changes durable through `flush`, which resolves once every change made so
   * far is in the store: {@link durable} then waits for it. Set by the owner of a run whose record a
   * shared store holds.
   */
  persistWith(flush: () => Promise<void>, onChange: () => void): void {
    const rare = this.#rareParts();
    rare.durable = flush;
    rare.onChange = onChange;
  }

  /** Whether a shared store persists this record's changes ({@link durable} then waits for them). */
  get persisted(): boolean {
    return this.#rare?.durable !== undefined;
  }

  /** Resolves once every change so far is durable (at once without a shared store). */
  durable(): Promise<void> {
    return this.#rare?.durable?.() ?? resolved;
  }

  /**
   * Gives a run this replica takes over the history the store holds: its events (numbered from 1)
   * and attempts so far, so that its next events and attempt continue them.
   */
  restore(stored: Execution, events: readonly RunEvent[]): void {
    this.#addStored(events);
    this.attempts = stored.attempts;
    if (stored.replicasLost > 0) this.#rareParts().replicasLost = stored.replicasLost;
  }

  /** Whether this record mirrors a run that another replica owns (see {@link refresh}). */
  get isMirror(): boolean {
    return this.#rare?.stored !== undefined;
  }

  /**
   * Brings a mirror up to date with the store: the record as stored and the events after the ones
   * it holds (in order; ones it already holds are skipped). A stored result ends the mirror.
   */
  refresh(stored: Execution, events: readonly RunEvent[]): void {
    const rare = this.#rareParts();
    rare.stored = stored;
    this.state = stored.state;
    this.attempts = stored.attempts;
    const approval = stored.approval;
    if (approval && !this.decision) {
      this.decision = {
        approved: approval.approved,
        decidedBy: approval.decidedBy,
        comment: approval.comment,
        decidedAt: approval.decidedAt ? timestampDate(approval.decidedAt) : new Date(),
      };
    }
    this.#addStored(events);
    if (stored.result && this.isLive && Number(stored.lastSequence) <= this.lastSequence) {
      this.result = stored.result;
      const finishedAtMs = stored.finishedAt ? timestampDate(stored.finishedAt).getTime() : Date.now();
      this.#finishedAfterMs = smallInteger(finishedAtMs - clockBaseMs - this.#createdAtMs);
      rare.settle?.(stored.result);
      rare.settle = undefined;
      this.answer(stored.result);
    }
    this.#wake();
  }

  /** Moves to a live state, adding the time spent in the previous one to its timing. */
  setState(state: ExecutionState): void {
    this.#accountTime();
    this.state = state;
    this.onChange?.();
  }

  /** Resolves when an event is appended or the run ends. */
  changed(): Promise<void> {
    const rare = this.#rareParts();
    return new Promise((resolve) => (rare.waiters ??= []).push(resolve));
  }

  /** Waits for a decision (see {@link decide}). */
  awaitDecision(): Promise<Decision> {
    const rare = this.#rareParts();
    return new Promise((resolve) => (rare.decide = resolve));
  }

  /**
   * Records the decision on a run awaiting approval. Returns false when there is nothing to decide
   * (already decided, or not awaiting approval): the first decision wins.
   */
  decide(decision: Decision): boolean {
    const resolve = this.#rare?.decide;
    if (this.state !== ExecutionState.AWAITING_APPROVAL || this.decision || !resolve) return false;
    this.decision = decision;
    (this.#rare as RareParts).decide = undefined;
    resolve(decision);
    return true;
  }

  /** Ends the run with `result`; its state follows from it. */
  finish(result: ToolResult): void {
    if (!this.isLive) return;
    this.#accountTime();
    this.result = result;
    this.#finishedAfterMs = smallInteger(clockMs() - this.#createdAtMs);
    this.state = result.success
      ? ExecutionState.SUCCEEDED
      : result.error?.errorType === ErrorType.Cancelled
        ? ExecutionState.CANCELLED
        : ExecutionState.FAILED;
    const rare = this.#rare;
    if (rare?.settle) {
      rare.settle(result);
      rare.settle = undefined;
    }
    this.answer(result);
    this.#wake();
    this.onChange?.();
  }

  /**
   * Makes a finished record smaller for the time it is retained, keeping everything it tells: the
   * pending events' array is cut to their number, the events take their compact forms (see
   * compact-events.ts), and the cancellation of a run that was not cancelled is let go. Called by
   * the store that retains the record.
   */
  compact(): void {
    if (this.isLive) return;
    if (this.#cancellation && !this.#cancellation.aborted) this.#cancellation = undefined;
    const pending = this.#pending;
    if (pending.length === 0) return;
    // slice() gives an array with room for its items alone; the array pushed to has room for more.
    const compacted = pending.slice();
    for (let i = 0; i < compacted.length; i += 3) compactEvent(compacted, i, this.result);
    this.#pending = compacted;
  }

  /**
   * Stops the clocks of the states: the time spent in the current one is added now, and nothing
   * after. Called when the run's outcome is decided, before {@link timings} fills its metadata,
   * so the result and the record report the same times.
   */
  stopClock(): void {
    this.#accountTime();
    this.#clockStopped = true;
  }

  /** Adds the timing facts to a result's metadata, complete once {@link stopClock} was called. */
  addTimings(metadata: JsonObject): void {
    metadata["awaiting_approval_ms"] = this.#awaitingApprovalUs / 1000;
    metadata["queued_ms"] = this.#queuedUs / 1000;
    metadata["running_ms"] = this.#runningUs / 1000;
  }

  /** The record as the API shows it. */
  toProto(): Execution {
    const stored = this.#rare?.stored;
    if (stored) return create(ExecutionSchema, { ...stored, lastSequence: BigInt(this.lastSequence) });
    const live = this.isLive && !this.#clockStopped ? (this.#monotonicUs() - this.#stateSinceUs) / 1000 : 0;
    const timing = (state: ExecutionState, us: number): number => round(us / 1000 + (this.state === state ? live : 0));
    // A literal rather than create(): create() walks the descriptor's fields to fill in defaults,
    // about a microsecond for each StartExecution answered and each execution listed.
    const execution: Execution = {
      $typeName: "toolruntime.v1.Execution",
      executionId: this.id,
      toolName: this.init.toolName,
      runner: this.init.runnerName,
      state: this.state,
      inputsDigest: this.inputsDigest,
      caller: this.init.caller,
      createdAt: timestampFromMs(clockBaseMs + this.#createdAtMs),
      awaitingApprovalMs: timing(ExecutionState.AWAITING_APPROVAL, this.#awaitingApprovalUs),
      queuedMs: timing(ExecutionState.QUEUED, this.#queuedUs),
      runningMs: timing(ExecutionState.RUNNING, this.#runningUs),
      attempts: this.attempts,
      writes: this.init.writes,
      idempotencyKey: this.init.idempotencyKey,
      lastSequence: BigInt(this.lastSequence),
      outputOmitted: false,
      replicasLost: this.#rare?.replicasLost ?? 0,
    };
    const finishedAtMs = this.finishedAtMs;
    if (finishedAtMs !== undefined) execution.finishedAt = timestampFromMs(finishedAtMs);
    if (this.result) execution.result = this.result;
    if (this.decision) {
      execution.approval = create(ApprovalDecisionSchema, {
        approved: this.decision.approved,
        decidedBy: this.decision.decidedBy,
        decidedAt: timestampFromDate(this.decision.decidedAt),
        comment: this.decision.comment,
      });
    }
    return execution;
  }

  /** Builds the pending events into messages, numbered after those built before. */
  #build(): void {
    this.#buildPending((this.#events ??= []));
    this.#pending = [];
  }

  /** Builds the pending events into `events`, numbered after the events built before. */
  #buildPending(events: RunEvent[]): void {
    const pending = this.#pending;
    const first = (this.#events?.length ?? 0) + 1;
    const createdAtMs = clockBaseMs + this.#createdAtMs;
    for (let i = 0; i < pending.length; i += 3) {
      const body = eventBodyOf(pending[i], pending[i + 1], this.result);
      events.push(runEvent(first + i / 3, createdAtMs + (pending[i + 2] as number), this.id, body));
    }
  }

  /** Adds stored events that continue this record's log (ones it holds already are skipped). */
  #addStored(events: readonly RunEvent[]): void {
    if (this.#pending.length > 0) this.#build();
    const kept = (this.#events ??= []);
    for (const event of events) {
      if (Number(event.sequence) === kept.length + 1) kept.push(event);
    }
  }

  #accountTime(): void {
    if (this.#clockStopped) return;
    const now = this.#monotonicUs();
    // Whole microseconds: what the API reports, and a small integer rather than a boxed number.
    const elapsedUs = now - this.#stateSinceUs;
    this.#stateSinceUs = now;
    if (this.state === ExecutionState.AWAITING_APPROVAL) this.#awaitingApprovalUs += elapsedUs;
    else if (this.state === ExecutionState.QUEUED) this.#queuedUs += elapsedUs;
    else if (this.state === ExecutionState.RUNNING) this.#runningUs += elapsedUs;
  }

  /**
   * Where this record's monotonic times count from: its creation as the wall clock had it, moved to
   * the monotonic clock. Only differences of these times are used, so the wall clock's drift from
   * the monotonic one does not matter; what matters is that they stay small.
   */
  #monotonicBaseMs(): number {
    return clockBaseMs + this.#createdAtMs - performance.timeOrigin;
  }

  /** The monotonic clock now, in whole microseconds after {@link #monotonicBaseMs}. */
  #monotonicUs(): number {
    return smallInteger(Math.round((performance.now() - this.#monotonicBaseMs()) * 1000));
  }

  #rareParts(): RareParts {
    return (this.#rare ??= {});
  }

  #wake(): void {
    const rare = this.#rare;
    if (!rare?.waiters) return;
    const waiters = rare.waiters;
    rare.waiters = undefined;
    for (const wake of waiters) wake();
  }
}

/**
 * An estimate of the memory an event holds beyond what it shares (the spec in DISCOVERED is the
 * registry's own object): a fixed overhead plus its text and JSON payloads. Encoding every event to
 * measure it exactly cost more than the rest of a small run.
 */
function estimateBytes(body: EventBody): number {
  const overhead = 96;
  switch (body.case) {
    case "progress":
      return overhead + (body.value.message?.length ?? 0);
    case "log":
      return overhead + (body.value.message?.length ?? 0);
    case "output":
      return overhead + jsonLength(body.value.chunk);
    case "completed": {
      const result = body.value.result;
      // The output's size was measured when it was checked (metadata.output_bytes); metadata is
      // estimated from its number of facts rather than serialised again.
      const outputBytes = result?.metadata?.["output_bytes"];
      return (
        overhead +
        (typeof outputBytes === "number" ? outputBytes : jsonLength(result?.output)) +
        metadataBytesPerFact * Object.keys(result?.metadata ?? {}).length +
        (result?.error?.details?.length ?? 0)
      );
    }
    case "executionFinished":
    case "retryScheduled":
      return overhead + (body.value.error?.details?.length ?? 0);
    default:
      return overhead;
  }
}

/** Bytes a fact of a result's metadata is taken to hold, for the estimate. */
const metadataBytesPerFact = 48;

function jsonLength(value: unknown): number {
  try {
    return (
      JSON.stringify(value, (_key, item: unknown) => (typeof item === "bigint" ? item.toString() : item))?.length ?? 0
    );
  } catch {
    return 0;
  }
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
