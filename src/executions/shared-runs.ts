import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Logger } from "pino";
import type { ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { NextFlight } from "../async/next-flight.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import type { RunCreation, RunFence, RunStore, SlotOutcome, StoredRun } from "../stores/run-store.js";
import type { Ticket } from "./admission.js";
import { ExecutionRecord, type EventLimits, type ExecutionRecordInit } from "./execution-record.js";
import { decideLostRun } from "./replica-lost.js";
import { SlotBlock } from "./slot-block.js";

/** Timing of a replica's part in shared runs. */
export interface SharedRunsOptions {
  readonly store: RunStore;
  /** How long a replica's lease lasts, in milliseconds (the store's lease). Default 10,000. */
  readonly leaseMs?: number;
  /** How long the owner of a run batches its events before writing them, in milliseconds. Default 20. */
  readonly flushWindowMs?: number;
  /** Interval of the polls that back up the doorbell, in milliseconds. Default 500. */
  readonly pollIntervalMs?: number;
}

/** What shared runs need from the execution manager of this replica. */
export interface SharedRunsHost {
  /** The live or retained record of a run this replica owns, if any (trusted or not). */
  ownedRecord(id: string): ExecutionRecord | undefined;
  /** Starts, on this replica, a run claimed from the store (or taken back after a lost replica). */
  resume(run: StoredRun): void;
  /** The tools this replica can run, and how many more runs it would start now. */
  claimable(): { toolNames: string[]; room: number };
  readonly eventLimits: EventLimits;
  readonly logger: Logger | undefined;
  /** Most runs executing at once across the cluster (this replica's setting). */
  readonly maxConcurrent: number;
}

const maxMirrors = 10_000;
/** How often a handler waiting for the lease to be trusted again looks, in milliseconds. */
const trustPollMs = 25;
const maxLost = 10_000;

/**
 * This replica's part in runs shared through a store: it persists the runs it owns (events batched
 * per flush window, under the run's fence), keeps mirrors of runs others own for reading and
 * watching, relays cancellations and approvals that arrive through other replicas to its own runs,
 * claims runs it can execute, renews its lease, and takes over the runs of lost replicas.
 */
export class SharedRuns {
  readonly store: RunStore;
  /** This replica's block of the cluster's admission slots (see SlotBlock). */
  readonly block: SlotBlock;
  readonly #host: SharedRunsHost;
  readonly #flushWindowMs: number;
  readonly #mirrors = new Map<string, ExecutionRecord>();
  /** Feeds of every run (WatchExecutions) following now: while any does, every run is mirrored. */
  #feeds = 0;
  readonly #mirrorListeners = new Set<(mirror: ExecutionRecord) => void>();
  readonly #refreshes = new Map<string, NextFlight>();
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #claiming: NextFlight;
  /** Runs of this replica waiting in the cluster's queue, and how to let each in. */
  readonly #waiting = new Map<string, () => void>();
  readonly #controlling: NextFlight;
  /**
   * The runs this replica holds under a fence, until the store has their end: what the store must
   * agree it owns. A run the store says it owns but that is not here is an orphan (see #reconcile).
   */
  readonly #held = new Map<string, RunFence>();
  /** Runs this replica held and lost to another replica (or to a sweep): answered from the store. */
  readonly #lost = new Set<string>();
  /** Orphans seen by the last reconciliation, with their epochs (settled when seen twice). */
  #orphans = new Map<string, number>();
  /** Lease losses whose runs were checked against the store (see trusted). */
  #reconciledLosses = 0;
  readonly #reconciling: NextFlight;
  #closed = false;

  constructor(options: SharedRunsOptions, host: SharedRunsHost) {
    this.store = options.store;
    this.#host = host;
    this.#flushWindowMs = options.flushWindowMs ?? 20;
    const leaseMs = options.leaseMs ?? 10_000;
    const pollMs = options.pollIntervalMs ?? 500;
    this.#claiming = new NextFlight(() => this.#claim());
    this.#controlling = new NextFlight(() => this.#applyControl());
    this.#reconciling = new NextFlight(() => this.#reconcile());
    this.block = new SlotBlock({
      store: this.store,
      maxConcurrent: host.maxConcurrent,
      trusted: () => this.trusted(),
      logger: host.logger,
    });
    const lease = this.store.lease;
    // Losses of the lease before this replica held any run lose nothing.
    this.#reconciledLosses = lease.losses();
    lease.onStall((stalledMs) =>
      host.logger?.warn(
        { stalledMs, leaseMs: lease.leaseMs },
        `the event loop was blocked for ${stalledMs} ms (the replica lease is ${lease.leaseMs} ms): a handler that blocks it longer than six leases gets its runs taken over`,
      ),
    );
    const report = (what: string) => (error: unknown) => {
      if (!this.#closed) host.logger?.warn({ err: error }, `shared runs: ${what} failed; retrying`);
    };
    this.store.onRunChange((id) => {
      if (id === "") return;
      const mirror = this.#mirrors.get(id);
      const unseen = !mirror && this.#feeds > 0 && !host.ownedRecord(id);
      if (mirror?.isLive || unseen) this.#refresh(id).catch(report("refresh"));
    });
    this.store.onClaimable(() => void this.#claiming.run().catch(report("claim")));
    this.store.onControl(() => void this.#controlling.run().catch(report("control")));
    this.#every(pollMs, () => {
      if (this.#waiting.size > 0) this.store.dispatch(host.maxConcurrent).catch(report("dispatch"));
      this.block.tick().catch(report("slot block resize"));
      for (const [id, mirror] of this.#mirrors) if (mirror.isLive) this.#refresh(id).catch(report("refresh"));
      void this.#claiming.run().catch(report("claim"));
      void this.#controlling.run().catch(report("control"));
    });
    this.#every(Math.max(100, Math.floor(leaseMs / 2)), () => {
      this.store.sweep(decideLostRun, host.maxConcurrent).then((taken) => {
        if (taken > 0) void this.#claiming.run().catch(report("claim"));
      }, report("sweep"));
      void this.#reconciling.run().catch(report("reconciliation"));
    });
  }

  /**
   * Persists a run this replica owns: each change is written within the flush window (the end at
   * once), one transaction and one doorbell per flush, under `fence`. A refused write means another
   * replica took the run (this one was cut off past its lease): the local run is then cancelled and
   * writes nothing more. With `creation`, the run is not in the store yet: its first write creates
   * it (a run stored once; see SharedExecutionManager.startRun).
   */
  persist(record: ExecutionRecord, fence: RunFence, alreadyStored: number, creation?: RunCreation): void {
    this.#held.set(record.id, fence);
    let uncreated = creation;
    let flushed = alreadyStored;
    let flushedState: ExecutionState | undefined;
    let fenced = false;
    let timer: NodeJS.Timeout | undefined;
    let chain: Promise<void> = Promise.resolve();
    const flush = (): Promise<void> => {
      clearTimeout(timer);
      timer = undefined;
      const next = chain.then(async () => {
        if (fenced) throw lostOwnership(record);
        const events = record.events.slice(flushed);
        // Nothing new since the last write (a state change always comes with an event but one).
        if (events.length === 0 && record.state === flushedState) return;
        const written = await this.store.flush(fence, events, record.toProto(), uncreated);
        uncreated = undefined;
        if (!written) {
          fenced = true;
          this.#lose(record);
          throw lostOwnership(record);
        }
        flushed += events.length;
        flushedState = record.state;
        // Its end is stored: the store no longer says this replica owns it.
        if (!record.isLive && flushed === record.events.length) this.#held.delete(record.id);
      });
      // A failed flush leaves its events unflushed: the next change, or a retry, writes them.
      chain = next.catch(() => {
        if (!fenced && !this.#closed && flushed < record.events.length) timer ??= setTimeout(() => void flush(), 1000);
      });
      return next;
    };
    record.persistWith(flush, () => {
      if (!record.isLive) void flush().catch(() => undefined);
      else timer ??= setTimeout(() => void flush().catch(() => undefined), this.#flushWindowMs);
    });
  }

  /**
   * Whether this replica may answer for the runs it holds from memory and start their handlers:
   * its lease surely holds with a tenth of it to spare, and every loss of the lease was followed
   * by a check of its runs against the store. Otherwise it reads the store (which answers
   * UNAVAILABLE while unreachable).
   */
  trusted(): boolean {
    const lease = this.store.lease;
    // validUntil counts from when the renewal was sent, so it is already on the safe side; the
    // tenth of a lease covers the time between this check and what it allows.
    return Date.now() < lease.validUntil() - lease.leaseMs / 10 && lease.losses() === this.#reconciledLosses;
  }

  /**
   * Resolves true once this replica trusts its lease again (see {@link trusted}), checking its runs
   * against the store at once when a loss of the lease is what stands in the way; false when that
   * takes longer than `maxWaitMs`. A renewal late on a busy machine delays a handler's start
   * instead of failing its attempt.
   */
  async untilTrusted(maxWaitMs: number): Promise<boolean> {
    const until = Date.now() + maxWaitMs;
    while (!this.trusted()) {
      if (this.#closed || Date.now() >= until) return false;
      if (this.store.lease.losses() !== this.#reconciledLosses) void this.#reconciling.run().catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, Math.min(trustPollMs, Math.max(1, until - Date.now()))));
    }
    return true;
  }

  /** Whether this replica held the run `id` and lost it: the store's answer is the only one. */
  isLost(id: string): boolean {
    return this.#lost.has(id);
  }

  /**
   * A mirror of the run `id`, up to date with the store, or undefined when the store has no such
   * run. Mirrors of live runs follow the store (doorbell and poll) so watchers see their events.
   */
  async mirror(id: string): Promise<ExecutionRecord | undefined> {
    await this.#refresh(id);
    return this.#mirrors.get(id);
  }

  /**
   * The admission ticket of a run the store admitted (see RunStore.admit): granted at once when it
   * holds a slot, otherwise when the store gives it one (this replica's doorbell rings, or a poll
   * finds it). Releasing gives the slot back, or leaves the queue, across the cluster.
   */
  ticket(id: string, outcome: SlotOutcome): Ticket {
    const granted =
      outcome.slot === "held" ? Promise.resolve() : new Promise<void>((resolve) => this.#waiting.set(id, resolve));
    let released = false;
    return {
      granted,
      immediate: outcome.slot === "held",
      position: outcome.position,
      release: () => {
        if (released) return;
        released = true;
        this.#waiting.delete(id);
        // A run that ended gives its slot back with the write of its end.
        const record = this.#host.ownedRecord(id);
        if (record?.persisted && !record.isLive) return;
        this.store.release(id, this.#host.maxConcurrent).catch((error: unknown) => {
          this.#host.logger?.warn({ err: error, executionId: id }, "admission slot not given back; a sweep will");
        });
      },
    };
  }

  /**
   * Mirrors every run of the cluster while the returned function is not called: the live ones now,
   * and each new one as its owner first writes it, each told to the listeners of {@link onMirror}.
   */
  followAll(): () => void {
    this.#feeds += 1;
    void this.#mirrorLive().catch((error: unknown) =>
      this.#host.logger?.warn({ err: error }, "shared runs: live runs not mirrored"),
    );
    let followed = true;
    return () => {
      if (followed) this.#feeds -= 1;
      followed = false;
    };
  }

  /** Calls `listener` with each mirror made from now on, until the returned function is called. */
  onMirror(listener: (mirror: ExecutionRecord) => void): () => void {
    this.#mirrorListeners.add(listener);
    return () => this.#mirrorListeners.delete(listener);
  }

  /** The live mirrors kept now. */
  liveMirrors(): ExecutionRecord[] {
    return [...this.#mirrors.values()].filter((mirror) => mirror.isLive);
  }

  async #mirrorLive(): Promise<void> {
    const recent = await this.store.list({
      toolName: "",
      state: 0,
      beforeOrdinal: Number.POSITIVE_INFINITY,
      limit: 1000,
    });
    for (const run of recent) {
      const live = run.execution.result === undefined;
      if (live && !this.#mirrors.has(run.id) && !this.#host.ownedRecord(run.id)) await this.#refresh(run.id);
    }
  }

  /** A record for a listing: a mirror when one is kept, else one made from the stored run. */
  listed(run: StoredRun): ExecutionRecord {
    return this.#mirrors.get(run.id) ?? this.#newMirror(run);
  }

  /** Stops the loops (the store set closes the store itself). */
  close(): void {
    this.#closed = true;
    this.block.close();
    for (const timer of this.#timers) clearInterval(timer);
  }

  #every(ms: number, task: () => void): void {
    const timer = setInterval(task, ms);
    timer.unref();
    this.#timers.push(timer);
  }

  #refresh(id: string): Promise<void> {
    let flight = this.#refreshes.get(id);
    if (!flight) {
      flight = new NextFlight(async () => {
        try {
          const run = await this.store.get(id);
          if (!run) return;
          const mirror = this.#mirrors.get(id) ?? this.#keep(this.#newMirror(run));
          const events = await this.store.events(id, mirror.events.length);
          mirror.refresh(run.execution, events);
        } finally {
          if (!this.#mirrors.get(id)?.isLive) this.#refreshes.delete(id);
        }
      });
      this.#refreshes.set(id, flight);
    }
    return flight.run();
  }

  #newMirror(run: StoredRun): ExecutionRecord {
    const mirror = new ExecutionRecord(storedRecordInit(run, this.#host.eventLimits));
    mirror.refresh(run.execution, []);
    return mirror;
  }

  #keep(mirror: ExecutionRecord): ExecutionRecord {
    if (this.#mirrors.size >= maxMirrors) {
      // The oldest finished mirror goes first; a live one is followed until it ends.
      for (const [id, kept] of this.#mirrors) {
        if (!kept.isLive) {
          this.#mirrors.delete(id);
          break;
        }
      }
    }
    this.#mirrors.set(mirror.id, mirror);
    for (const listener of this.#mirrorListeners) listener(mirror);
    return mirror;
  }

  /**
   * Holds this replica's runs and the store's view of them against each other: a run held here
   * that the store gave to another replica (or ended) is lost here; a run the store says this
   * replica owns that is not held here (its creation's or claim's answer was lost) is settled as a
   * lost replica's run is — handed back for a replica to claim, or ended — once it was seen so in
   * two checks in a row (half a lease apart, longer than any creation or claim takes to be held).
   * A check after a lost lease makes the replica trusted again.
   */
  async #reconcile(): Promise<void> {
    if (this.#closed) return;
    const losses = this.store.lease.losses();
    const before = new Map(this.#held);
    const owned = new Map((await this.store.ownedLive()).map((fence) => [fence.id, fence.epoch]));
    for (const [id, fence] of before) {
      const record = this.#host.ownedRecord(id);
      // Ended here and stored meanwhile, or still the store's: nothing to do.
      if (!this.#held.has(id) || owned.get(id) === fence.epoch || !record) continue;
      // Live here but not the store's: another replica took it. Finished here: the store decides.
      this.#lose(record);
    }
    const orphans = new Map<string, number>();
    for (const [id, epoch] of owned) {
      if (this.#held.has(id) || this.#host.ownedRecord(id)) continue;
      if (this.#orphans.get(id) !== epoch) {
        orphans.set(id, epoch);
        continue;
      }
      const fence = { id, owner: this.store.replicaId, epoch };
      if (await this.store.reconcile(fence, decideLostRun, this.#host.maxConcurrent)) {
        this.#host.logger?.warn(
          { executionId: id },
          "a run the store gave this replica was not held here (the answer to its creation or claim was lost): handed back or ended",
        );
        void this.#claiming.run().catch(() => undefined);
      }
    }
    this.#orphans = orphans;
    this.#reconciledLosses = losses;
  }

  /** The run is another replica's now (or ended by a sweep): stop it here and answer from the store. */
  #lose(record: ExecutionRecord): void {
    this.#held.delete(record.id);
    this.#lost.add(record.id);
    // Kept as long as a retained record could be asked for; the oldest goes first.
    if (this.#lost.size > maxLost) this.#lost.delete(this.#lost.values().next().value as string);
    if (record.isLive && !record.cancellation.aborted) record.cancellation.abort(lostOwnership(record));
  }

  async #claim(): Promise<void> {
    if (this.#closed) return;
    const { toolNames, room } = this.#host.claimable();
    const claimed = await this.store.claim(toolNames, room);
    for (const run of claimed) this.#host.resume(run);
  }

  async #applyControl(): Promise<void> {
    if (this.#closed) return;
    if (this.#waiting.size > 0) {
      for (const id of await this.store.held([...this.#waiting.keys()])) {
        this.#waiting.get(id)?.();
        this.#waiting.delete(id);
      }
    }
    for (const control of await this.store.pendingControl()) {
      const record = this.#host.ownedRecord(control.id);
      if (!record?.isLive) continue;
      if (control.cancelReason !== undefined && !record.cancellation.aborted) {
        record.cancellation.abort(new Error(control.cancelReason));
      }
      if (control.decision) {
        record.decide({ ...control.decision, decidedAt: new Date(control.decision.decidedAt) });
      }
    }
  }
}

/** What a record of a stored run (a mirror, or a run taken over here) is created with. */
export function storedRecordInit(run: StoredRun, eventLimits: EventLimits): ExecutionRecordInit {
  const execution = run.execution;
  return {
    id: run.id,
    ordinal: run.ordinal,
    toolName: execution.toolName,
    runnerName: execution.runner,
    caller: execution.caller,
    inputs: run.request.inputs,
    writes: execution.writes,
    idempotencyKey: execution.idempotencyKey,
    eventLimits,
    createdAtMs: execution.createdAt ? timestampMs(execution.createdAt) : undefined,
  };
}

function lostOwnership(record: ExecutionRecord): ToolRuntimeError {
  return new ToolRuntimeError(
    "UNAVAILABLE",
    ErrorType.ReplicaLost,
    `this replica lost run ${quote(record.id)} of ${quote(record.toolName)}: its lease expired and another replica took it over`,
    record.toolName,
  );
}
