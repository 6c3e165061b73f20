import { randomUUID } from "node:crypto";
import { ExecutionState, type Execution } from "../../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../../gen/toolruntime/v1/run_event_pb.js";
import { ErrorType, ToolRuntimeError } from "../../errors/tool-runtime-error.js";
import { quote } from "../../registry/names.js";
import type {
  ReplicaLease,
  RunCreation,
  RunRequest,
  RunStore,
  SlotOutcome,
  SlotRequest,
  StoredDecision,
  StoredRun,
} from "../run-store.js";

interface Row {
  readonly id: string;
  readonly ordinal: number;
  readonly key: string;
  readonly retrySafe: boolean;
  readonly request: RunRequest;
  execution: Execution;
  owner: string | undefined;
  epoch: number;
  events: RunEvent[];
  cancelReason: string | undefined;
  decision: StoredDecision | undefined;
  slot: "none" | "held" | "waiting";
  toolLimit: number;
  finishedAt: number | undefined;
}

const liveStates = [ExecutionState.AWAITING_APPROVAL, ExecutionState.QUEUED, ExecutionState.RUNNING];
const isLive = (row: Row): boolean => row.finishedAt === undefined;

/**
 * The state several in-process run stores share: what PostgreSQL holds for the PostgreSQL store.
 * Every operation on it is synchronous, so each is atomic, as a transaction is there.
 */
export class MemoryRunHub {
  readonly rows = new Map<string, Row>();
  readonly keys = new Map<string, string>();
  readonly leases = new Map<string, number>();
  /** Each replica's block of admission slots (see RunStore.resizeSlotBlock). */
  readonly blocks = new Map<string, number>();
  readonly runListeners = new Set<(id: string) => void>();
  readonly claimListeners = new Set<() => void>();
  readonly queueListeners = new Set<() => void>();
  readonly controlListeners = new Map<string, Set<() => void>>();
  ordinal = 0;

  /** Live rows, oldest first. */
  live(): Row[] {
    return [...this.rows.values()].filter(isLive);
  }

  /** Slots held in the blocks of replicas whose lease holds, but `except`'s. */
  blockSlots(except?: string): number {
    let total = 0;
    const now = Date.now();
    for (const [replica, slots] of this.blocks) {
      if (replica !== except && (this.leases.get(replica) ?? 0) > now) total += slots;
    }
    return total;
  }
}

/**
 * A run store in memory: the same contract as the PostgreSQL store (claims, fencing, leases,
 * cluster admission, idempotency) among the stores made on one {@link MemoryRunHub}, for runtimes
 * embedded in one process and for the contract suite. Notifications are synchronous calls.
 */
export function createMemoryRunStore(hub: MemoryRunHub, options: { leaseMs?: number } = {}): RunStore {
  const replicaId = randomUUID();
  const leaseMs = options.leaseMs ?? 10_000;
  hub.leases.set(replicaId, Date.now() + leaseMs);
  let validUntil = Date.now() + leaseMs;
  let losses = 0;
  // Renewed three times per lease, as the PostgreSQL store's keeper does (on this thread: a store
  // in one process has no other replica to lose its runs to when the event loop is blocked).
  const renewal = setInterval(
    () => {
      const now = Date.now();
      if ((hub.leases.get(replicaId) ?? 0) <= now) {
        losses += 1;
        // The block went with the lease (see the PostgreSQL store's lease keeper).
        hub.blocks.delete(replicaId);
      }
      hub.leases.set(replicaId, now + leaseMs);
      validUntil = now + leaseMs;
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );
  renewal.unref();
  const lease: ReplicaLease = {
    leaseMs,
    validUntil: () => validUntil,
    losses: () => losses,
    available: () => true,
    onAvailabilityChange: () => undefined,
    onStall: () => undefined,
  };
  /** A run's row as created: first epoch, no events, no slot. */
  const newRow = (run: RunCreation, key: string, execution: Execution, owner: string | undefined): Row => ({
    id: run.id,
    ordinal: ++hub.ordinal,
    key,
    retrySafe: run.retrySafe,
    request: run.request,
    execution,
    owner,
    epoch: 1,
    events: [],
    cancelReason: undefined,
    decision: undefined,
    slot: "none",
    toolLimit: 0,
    finishedAt: undefined,
  });
  const stored = (row: Row): StoredRun => ({
    id: row.id,
    ordinal: row.ordinal,
    execution: row.execution,
    request: row.request,
    owner: row.owner,
    epoch: row.epoch,
    lastSequence: row.events.length,
    retrySafe: row.retrySafe,
    cancelReason: row.cancelReason,
  });
  const ringRun = (id: string): void => hub.runListeners.forEach((listener) => listener(id));
  const ringOwner = (owner: string | undefined): void => {
    if (owner !== undefined) hub.controlListeners.get(owner)?.forEach((listener) => listener());
  };

  const admitRow = (row: Row, slot: SlotRequest): SlotOutcome => {
    const others = hub.live().filter((each) => each.id !== row.id && each.slot !== "none");
    const held = others.filter((each) => each.slot === "held");
    const waiting = others.filter((each) => each.slot === "waiting");
    const tool = row.execution.toolName;
    const fits =
      held.length + hub.blockSlots() < slot.maxConcurrent &&
      (slot.toolLimit === 0 || held.filter((each) => each.execution.toolName === tool).length < slot.toolLimit) &&
      !waiting.some((each) => each.execution.toolName === tool);
    row.toolLimit = slot.toolLimit;
    if (fits) {
      row.slot = "held";
      return { slot: "held", position: 0 };
    }
    if (waiting.length >= slot.maxQueued) {
      throw new ToolRuntimeError(
        "RESOURCE_EXHAUSTED",
        ErrorType.ResourceExhausted,
        `run of ${quote(tool)} cannot be queued: ${waiting.length} runs already wait across the cluster, the most allowed; retry later`,
        tool,
        Math.min(30_000, Math.max(100, Math.round((waiting.length / Math.max(1, slot.maxConcurrent)) * 100))),
      );
    }
    row.slot = "waiting";
    hub.queueListeners.forEach((listener) => listener());
    return { slot: "waiting", position: waiting.length };
  };

  const dispatch = (maxConcurrent: number): void => {
    const live = hub.live();
    let total = live.filter((row) => row.slot === "held").length + hub.blockSlots();
    for (const row of live.filter((each) => each.slot === "waiting").sort((a, b) => a.ordinal - b.ordinal)) {
      if (total >= maxConcurrent) break;
      const tool = row.execution.toolName;
      const running = live.filter((each) => each.slot === "held" && each.execution.toolName === tool).length;
      if (row.toolLimit !== 0 && running >= row.toolLimit) continue;
      row.slot = "held";
      total += 1;
      ringOwner(row.owner);
    }
  };

  /** Ends or hands back a run locked for this store, as the sweep and an unowned cancel do. */
  const writeEnd = (row: Row, end: { kind: "ended" | "requeued"; events: RunEvent[]; execution: Execution }): void => {
    row.events.push(...end.events);
    row.execution = end.execution;
    row.owner = undefined;
    row.epoch += 1;
    row.slot = "none";
    if (end.kind === "ended") row.finishedAt = Date.now();
    ringRun(row.id);
    if (end.kind === "requeued") hub.claimListeners.forEach((listener) => listener());
  };

  return {
    replicaId,
    lease,

    // eslint-disable-next-line @typescript-eslint/require-await -- a rejected promise, never a throw
    async create(run, idempotencyKey, slot) {
      const again = hub.rows.get(run.id);
      if (again) {
        // The same creation asked again: as it was answered while the run is as created.
        if (again.owner !== run.owner || again.epoch !== 1) return { existing: stored(again) };
        const slotNow: SlotOutcome | undefined =
          !slot || again.slot === "none"
            ? undefined
            : {
                slot: again.slot,
                position:
                  again.slot === "held"
                    ? 0
                    : hub.live().filter((each) => each.slot === "waiting" && each.ordinal < again.ordinal).length,
              };
        return { ordinal: again.ordinal, slot: slotNow };
      }
      const keyIndex = `${run.execution.caller}\u0000${run.execution.toolName}\u0000${idempotencyKey}`;
      const earlier = idempotencyKey === "" ? undefined : hub.keys.get(keyIndex);
      const existing = earlier === undefined ? undefined : hub.rows.get(earlier);
      if (existing) return { existing: stored(existing) };
      const row = newRow(run, idempotencyKey, run.execution, run.owner);
      // Admitted before it is kept: a full queue creates nothing.
      const admitted: SlotOutcome | undefined = slot ? admitRow(row, slot) : undefined;
      hub.rows.set(row.id, row);
      if (idempotencyKey !== "") hub.keys.set(keyIndex, row.id);
      if (run.owner === undefined) hub.claimListeners.forEach((listener) => listener());
      return { ordinal: row.ordinal, slot: admitted };
    },

    // eslint-disable-next-line @typescript-eslint/require-await -- a rejected promise, never a throw
    async admit(id, slot) {
      const row = hub.rows.get(id);
      if (!row) throw new Error(`no run ${id}`);
      return admitRow(row, slot);
    },

    release(id, maxConcurrent) {
      const row = hub.rows.get(id);
      if (row && row.slot !== "none") {
        row.slot = "none";
        dispatch(maxConcurrent);
      }
      return Promise.resolve();
    },

    dispatch(maxConcurrent) {
      dispatch(maxConcurrent);
      return Promise.resolve();
    },

    held: (ids) => Promise.resolve(ids.filter((id) => hub.rows.get(id)?.slot === "held")),

    checkBacklog() {
      // Writes here are synchronous: never behind.
    },

    resizeSlotBlock(wanted, maxConcurrent) {
      const current = hub.blocks.get(replicaId) ?? 0;
      const waiting = hub.live().filter((row) => row.slot === "waiting").length;
      let slots = wanted;
      if (wanted > current) {
        const free = maxConcurrent - hub.live().filter((row) => row.slot === "held").length - hub.blockSlots(replicaId);
        slots = waiting > 0 ? current : Math.max(current, Math.min(wanted, free));
      }
      hub.blocks.set(replicaId, slots);
      if (slots < current && waiting > 0) dispatch(maxConcurrent);
      return Promise.resolve({ slots, waiting });
    },

    flush(fence, events, execution, creation, call) {
      if (creation && call?.deadline !== undefined && Date.now() > call.deadline && !hub.rows.has(fence.id)) {
        return Promise.reject(
          new ToolRuntimeError(
            "DEADLINE_EXCEEDED",
            ErrorType.Timeout,
            "the call's deadline passed; nothing was written",
          ),
        );
      }
      if (creation && !hub.rows.has(fence.id) && (hub.leases.get(fence.owner) ?? 0) > Date.now()) {
        hub.rows.set(fence.id, newRow(creation, "", execution, fence.owner));
      }
      const row = hub.rows.get(fence.id);
      if (!row || row.owner !== fence.owner || row.epoch !== fence.epoch) return Promise.resolve(false);
      if ((hub.leases.get(fence.owner) ?? 0) <= Date.now()) return Promise.resolve(false);
      // Each event once, under its own sequence number: a retried flush adds only what is missing.
      row.events.push(...events.filter((event) => Number(event.sequence) > row.events.length));
      row.execution = execution;
      if (!liveStates.includes(execution.state)) {
        row.finishedAt ??= Date.now();
        // A run that ends gives its slot back with its end, as the PostgreSQL store's group does.
        row.slot = "none";
      }
      ringRun(row.id);
      return Promise.resolve(true);
    },

    get: (id) => Promise.resolve(hub.rows.has(id) ? stored(hub.rows.get(id) as Row) : undefined),

    events: (id, afterSequence) => Promise.resolve(hub.rows.get(id)?.events.slice(afterSequence) ?? []),

    list(query) {
      const rows = [...hub.rows.values()]
        .filter((row) => row.ordinal < query.beforeOrdinal)
        .filter((row) => query.toolName === "" || row.execution.toolName === query.toolName)
        .filter((row) => query.state === 0 || row.execution.state === (query.state as ExecutionState))
        .sort((a, b) => b.ordinal - a.ordinal)
        .slice(0, query.limit);
      return Promise.resolve(rows.map(stored));
    },

    requestCancel(id, reason, ended) {
      const row = hub.rows.get(id);
      if (!row || !isLive(row)) return Promise.resolve(false);
      if (row.owner === undefined) writeEnd(row, ended(stored(row)));
      else {
        row.cancelReason ??= reason;
        ringOwner(row.owner);
      }
      return Promise.resolve(true);
    },

    decide(id, decision) {
      const row = hub.rows.get(id);
      const pending = row && isLive(row) && row.execution.state === ExecutionState.AWAITING_APPROVAL && !row.decision;
      if (!pending) return Promise.resolve(false);
      row.decision = decision;
      ringOwner(row.owner);
      return Promise.resolve(true);
    },

    pendingControl(ids) {
      const rows = hub
        .live()
        .filter((row) => row.owner === replicaId && (row.cancelReason !== undefined || row.decision))
        .filter((row) => ids === undefined || ids.includes(row.id));
      return Promise.resolve(
        rows.map((row) => ({ id: row.id, cancelReason: row.cancelReason, decision: row.decision })),
      );
    },

    claim(toolNames, limit) {
      const claimed = hub
        .live()
        .filter((row) => row.owner === undefined && toolNames.includes(row.execution.toolName))
        .sort((a, b) => a.ordinal - b.ordinal)
        .slice(0, limit);
      for (const row of claimed) {
        row.owner = replicaId;
        row.epoch += 1;
      }
      return Promise.resolve(claimed.map(stored));
    },

    sweep(decide, maxConcurrent) {
      const now = Date.now();
      const lost = hub
        .live()
        .filter((row) => row.owner !== undefined && (hub.leases.get(row.owner) ?? 0) <= now)
        .sort((a, b) => a.ordinal - b.ordinal);
      for (const row of lost) writeEnd(row, decide(stored(row)));
      if (lost.length > 0) dispatch(maxConcurrent);
      return Promise.resolve(lost.length);
    },

    ownedLive() {
      const owned = hub.live().filter((row) => row.owner === replicaId);
      return Promise.resolve(owned.map((row) => ({ id: row.id, owner: replicaId, epoch: row.epoch })));
    },

    reconcile(fence, decide, maxConcurrent) {
      const row = hub.rows.get(fence.id);
      if (!row || !isLive(row) || row.owner !== fence.owner || row.epoch !== fence.epoch) return Promise.resolve(false);
      writeEnd(row, decide(stored(row)));
      dispatch(maxConcurrent);
      return Promise.resolve(true);
    },

    evict(maxRetained, retentionMs) {
      const finished = [...hub.rows.values()]
        .filter((row) => !isLive(row))
        .sort((a, b) => (b.finishedAt ?? 0) - (a.finishedAt ?? 0));
      const cutoff = Date.now() - retentionMs;
      for (const [index, row] of finished.entries()) {
        if (index < maxRetained && (row.finishedAt ?? 0) >= cutoff) continue;
        hub.rows.delete(row.id);
        if (row.key !== "") hub.keys.delete(`${row.execution.caller}\u0000${row.execution.toolName}\u0000${row.key}`);
      }
      return Promise.resolve();
    },

    onRunChange: (listener) => void hub.runListeners.add(listener),
    onClaimable: (listener) => void hub.claimListeners.add(listener),
    onControl(listener) {
      const set = hub.controlListeners.get(replicaId) ?? new Set();
      set.add(listener);
      hub.controlListeners.set(replicaId, set);
    },

    onQueued(listener) {
      hub.queueListeners.add(listener);
    },

    close() {
      clearInterval(renewal);
      hub.leases.set(replicaId, Date.now());
      hub.blocks.delete(replicaId);
      return Promise.resolve();
    },
  };
}
