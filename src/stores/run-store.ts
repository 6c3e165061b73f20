import type { JsonValue } from "@bufbuild/protobuf";
import type { Execution } from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { StoreCall } from "./store-call.js";

/** What a replica needs to start a run that another replica created: the call, as data. */
export interface RunRequest {
  readonly toolName: string;
  /** "run" for RunTool and StartExecution (a private runner: activated, then deactivated), "execute" for ExecuteTool. */
  readonly lifecycle: "run" | "execute";
  readonly runnerName: string;
  readonly inputs: JsonValue;
  /** Time each attempt may take, in milliseconds; 0 for the tool's default. */
  readonly timeoutMs: number;
  /** ExecutionOptions as protobuf bytes, base64. */
  readonly options: string;
  readonly traceParent: string;
}

/** A run as a shared store holds it. */
export interface StoredRun {
  readonly id: string;
  /** Position in creation order, across replicas: listings go newest first by it. */
  readonly ordinal: number;
  /** The record as its owner last wrote it. */
  readonly execution: Execution;
  readonly request: RunRequest;
  /** The replica that owns the run, or undefined while it waits to be claimed. */
  readonly owner: string | undefined;
  /** Bumped each time ownership changes; every owner write must name it. */
  readonly epoch: number;
  /** The sequence number of its latest stored event. */
  readonly lastSequence: number;
  /** Whether another attempt is safe after its owner is lost (the tool is idempotent or read_only). */
  readonly retrySafe: boolean;
  /** Why a cancellation was asked of its owner, when one was and the owner has not acted on it yet. */
  readonly cancelReason?: string | undefined;
}

/** The owner's claim on a run: writes that do not match the stored owner and epoch are refused. */
export interface RunFence {
  readonly id: string;
  readonly owner: string;
  readonly epoch: number;
}

/** A run to create. */
export interface NewRun {
  readonly id: string;
  readonly execution: Execution;
  readonly request: RunRequest;
  /** Whether another attempt is safe after its owner is lost (the tool is idempotent or read_only). */
  readonly retrySafe: boolean;
  /** This replica when it runs the run itself; undefined to leave it to a replica that can. */
  readonly owner: string | undefined;
}

/**
 * What a flush that creates its run adds to it (see RunStore.flush): the record is the flush's, the
 * owner the fence's.
 */
export type RunCreation = Pick<NewRun, "id" | "request" | "retrySafe">;

/** A run's request for an admission slot, with the limits of the replica asking. */
export interface SlotRequest {
  /** The tool's own limit of runs at once; 0 for none. */
  readonly toolLimit: number;
  /** Most runs executing at once across the cluster. */
  readonly maxConcurrent: number;
  /** Most runs waiting for a slot across the cluster; beyond it admission fails. */
  readonly maxQueued: number;
}

/** Where a run stands after asking for a slot. */
export interface SlotOutcome {
  readonly slot: "held" | "waiting";
  /** Runs waiting ahead of it (0 when held). */
  readonly position: number;
}

/** A replica's block of admission slots, and how many runs wait in the cluster's queue. */
export interface SlotBlockSize {
  readonly slots: number;
  readonly waiting: number;
}

/** A decision on a run awaiting approval, as stored. */
export interface StoredDecision {
  readonly approved: boolean;
  readonly decidedBy: string;
  readonly comment: string;
  readonly decidedAt: string;
}

/** What a listing asks the store for: newest first, before an ordinal, filtered. */
export interface RunQuery {
  readonly toolName: string;
  readonly state: number;
  readonly beforeOrdinal: number;
  readonly limit: number;
}

/** Requests for a run that reached the store through another replica, for its owner to act on. */
export interface RunControl {
  readonly id: string;
  readonly cancelReason: string | undefined;
  readonly decision: StoredDecision | undefined;
}

/**
 * Execution records, their append-only events, idempotency keys, ownership (claims fenced by an
 * epoch) and replica leases, shared by every replica on one store. A record is data; the live run
 * (its abort controller, waiters, the attempt in progress) exists only on its owner, which writes
 * every change through {@link flush} under its fence. Other replicas read records and events, and
 * reach the owner through {@link requestCancel} and {@link decide} plus a doorbell.
 */
export interface RunStore {
  /** This replica's identifier (a UUID), the owner named in its claims. */
  readonly replicaId: string;

  /** This replica's lease, kept by the store (see {@link ReplicaLease}). */
  readonly lease: ReplicaLease;

  /**
   * Creates a run, or returns the retained run of the same caller, tool and idempotency key (the
   * key is global: one run per key across replicas). `ordinal` is the created run's position.
   * Safe to retry with the same run after an ambiguous failure: a run of that id still as created
   * answers as it did. With `call`'s deadline, nothing is created once it passed.
   */
  create(
    run: NewRun,
    idempotencyKey: string,
    slot?: SlotRequest,
    call?: StoreCall,
  ): Promise<{ ordinal: number; slot: SlotOutcome | undefined } | { existing: StoredRun }>;

  /**
   * Asks for an admission slot for a run, against the cluster's counts: held at once when it fits
   * (and no earlier run of its tool waits), else waiting in the cluster's FIFO queue. Throws
   * RESOURCE_EXHAUSTED (with a retry delay) when the queue is full: with `create`, nothing is then
   * created.
   */
  admit(id: string, slot: SlotRequest): Promise<SlotOutcome>;
  /** Gives a run's slot back (or leaves the queue), and lets waiting runs that now fit in. */
  release(id: string, maxConcurrent: number): Promise<void>;
  /**
   * Gives slots to waiting runs that fit, in queue order. Release does it too; a replica with runs
   * waiting also calls it now and then, so a slot released while a run was being queued is not
   * left unused.
   */
  dispatch(maxConcurrent: number): Promise<void>;
  /** Which of these waiting runs now hold a slot. */
  held(ids: readonly string[]): Promise<string[]>;

  /**
   * Throws RESOURCE_EXHAUSTED (naming `toolName`, with a retry delay) when this replica's writes are
   * behind: the oldest not committed yet has waited longer than a new run may (a quarter of
   * `call`'s time, 100 to 250 ms). Past the store's capacity a replica then refuses new runs before
   * they cost anything, and the runs under way finish in time. UNAVAILABLE instead when the store
   * answers nothing at all meanwhile (unreachable, not busy).
   */
  checkBacklog(toolName: string, call?: StoreCall): void;

  /**
   * Sets this replica's block of admission slots to `wanted` (see {@link SlotBlockSize}): slots it
   * hands to runs of tools without a limit of their own, locally, with no statement per run. A
   * block counts against the cluster's `maxConcurrent` while this replica's lease holds and goes
   * with it. Shrinking always succeeds (and lets waiting runs in); growing takes only free slots,
   * and none while runs wait in the cluster's queue, which go first.
   */
  resizeSlotBlock(wanted: number, maxConcurrent: number): Promise<SlotBlockSize>;

  /**
   * Writes the owner's new events and the record as it is now; resolves false, writing nothing,
   * when the fence no longer holds (another replica took the run) or the owner's lease expired.
   * Each event is stored under its own sequence number, once: a flush retried after an ambiguous
   * failure (its events and more) stores each event once and leaves no gap. With `creation`, the
   * first flush of a run creates it, owned by `fence.owner` at epoch 1, without an idempotency key:
   * a retried creation creates it once; with `call`'s deadline, nothing is created once it passed
   * (rejected with DEADLINE_EXCEEDED).
   */
  flush(
    fence: RunFence,
    events: readonly RunEvent[],
    execution: Execution,
    creation?: RunCreation,
    call?: StoreCall,
  ): Promise<boolean>;

  get(id: string): Promise<StoredRun | undefined>;
  /** Events of a run after `afterSequence`, in order. */
  events(id: string, afterSequence: number): Promise<RunEvent[]>;
  list(query: RunQuery): Promise<StoredRun[]>;

  /**
   * Asks the owner to cancel a live run. A run no replica owns yet is ended here instead, as
   * cancelled, with the events `ended` gives. Resolves false when the run is not live.
   */
  requestCancel(id: string, reason: string, ended: (run: StoredRun) => EndedRun, call?: StoreCall): Promise<boolean>;

  /** Records the decision on a run awaiting approval, once: resolves false when one exists or it awaits none. */
  decide(id: string, decision: StoredDecision, call?: StoreCall): Promise<boolean>;

  /** The cancellations and decisions waiting for runs this replica owns (all, or those `ids`). */
  pendingControl(ids?: readonly string[]): Promise<RunControl[]>;

  /** Claims up to `limit` unowned live runs of the tools this replica can run. */
  claim(toolNames: readonly string[], limit: number): Promise<StoredRun[]>;

  /**
   * Takes the live runs of replicas whose lease expired: each is ended with the events `decide`
   * gives, or handed back for another replica to claim (a new attempt); their slots are given back
   * and waiting runs that now fit get them. Resolves to the runs taken.
   */
  sweep(decide: (run: StoredRun) => EndedRun | RequeuedRun, maxConcurrent: number): Promise<number>;

  /** The live runs the store says this replica owns, with their fences. */
  ownedLive(): Promise<RunFence[]>;

  /**
   * Settles a run the store says this replica owns but the replica does not hold (its creation's
   * or claim's answer was lost): ended or handed back with what `decide` gives, as a lost
   * replica's run is, as long as `fence` still holds. Resolves whether it did.
   */
  reconcile(
    fence: RunFence,
    decide: (run: StoredRun) => EndedRun | RequeuedRun,
    maxConcurrent: number,
  ): Promise<boolean>;

  /** Deletes finished runs past the retention bounds. */
  evict(maxRetained: number, retentionMs: number): Promise<void>;

  /** Calls `listener(id)` when the run `id` may have changed, or `listener("")` for many. */
  onRunChange(listener: (id: string) => void): void;
  /** Calls `listener` when runs may be waiting to be claimed. */
  onClaimable(listener: () => void): void;
  /** Calls `listener` when a cancellation or decision may wait for a run this replica owns. */
  onControl(listener: () => void): void;
  /** Calls `listener` when a run joined the cluster's admission queue (blocks then give back free slots). */
  onQueued(listener: () => void): void;

  close(): Promise<void>;
}

/**
 * A replica's lease, renewed by the store on its own (for PostgreSQL, on a thread of its own, so
 * that a busy event loop does not cost it). A replica trusts what it holds of its runs only while
 * the lease surely holds and every loss of it was reconciled.
 */
export interface ReplicaLease {
  /** How long the lease lasts without renewal, in milliseconds. */
  readonly leaseMs: number;
  /** Until when the lease surely holds (this process's clock, ms since the epoch). */
  validUntil(): number;
  /** How many times the lease was found expired and taken again (its runs may have been taken). */
  losses(): number;
  /** Whether the store answered the lease keeper lately (the readiness of this replica). */
  available(): boolean;
  /** Calls `listener` each time {@link available} changes. */
  onAvailabilityChange(listener: (available: boolean) => void): void;
  /** Calls `listener` when this process's event loop was blocked for more than half a lease (ms). */
  onStall(listener: (stalledMs: number) => void): void;
}

/** A run the sweeper (or a cancel of an unowned run) ends: its final events and record. */
export interface EndedRun {
  readonly kind: "ended";
  readonly events: RunEvent[];
  readonly execution: Execution;
}

/** A run handed back for another replica to claim, with the events that say so. */
export interface RequeuedRun {
  readonly kind: "requeued";
  readonly events: RunEvent[];
  readonly execution: Execution;
}
