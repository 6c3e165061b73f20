import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { ExecutionSchema, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import { decideLostRun } from "../../src/executions/replica-lost.js";
import { openDoorbell, type Doorbell } from "../../src/stores/postgres/doorbell.js";
import { migrate } from "../../src/stores/postgres/migrate.js";
import { openDatabase, type Database } from "../../src/stores/postgres/open-database.js";
import { createPostgresRunStore } from "../../src/stores/postgres/postgres-run-store.js";
import { createMemoryRunStore, MemoryRunHub } from "../../src/stores/memory/memory-run-store.js";
import type { NewRun, RunStore } from "../../src/stores/run-store.js";
import { sharedPostgres } from "../support/postgres-server.js";

/** A run of `tool` to create; `owner` undefined leaves it to be claimed. */
function newRun(tool: string, owner: string | undefined, retrySafe = false): NewRun {
  return {
    id: randomUUID(),
    execution: create(ExecutionSchema, { toolName: tool, caller: "alice", state: ExecutionState.RUNNING }),
    request: {
      toolName: tool,
      lifecycle: "run",
      runnerName: "",
      inputs: {},
      timeoutMs: 0,
      options: "",
      traceParent: "",
    },
    retrySafe,
    owner,
  };
}

/** A heartbeat event under `sequence`. */
function heartbeat(sequence: number): RunEvent {
  return create(RunEventSchema, { sequence: BigInt(sequence), event: { case: "heartbeat", value: {} } });
}

/** Opens one replica's run store on the shared state of a test; `close` releases what it holds. */
type Opener = (leaseMs: number) => Promise<{ store: RunStore; close: () => Promise<void> }>;

const implementations: { name: string; fresh: () => Promise<Opener> }[] = [
  {
    name: "memory",
    fresh: () => {
      const hub = new MemoryRunHub();
      return Promise.resolve((leaseMs) => {
        const store = createMemoryRunStore(hub, { leaseMs });
        return Promise.resolve({ store, close: () => store.close() });
      });
    },
  },
  {
    name: "postgres",
    fresh: async () => {
      const url = await (await sharedPostgres()).createDatabase("run_store");
      return async (leaseMs) => {
        // The contract is about claims, fences and keys: its bursts of creates from one process (200
        // at once) are let in whole rather than shed as overload (see ConnectionGate).
        const database: Database = await openDatabase(url, { newRunWaitMs: { min: 5000, max: 5000 } });
        await migrate(database.pool);
        const doorbell: Doorbell = openDoorbell(url);
        const store = await createPostgresRunStore(database, doorbell, { leaseMs });
        return {
          store,
          close: async () => {
            await store.close();
            await doorbell.close();
            await database.pool.end();
          },
        };
      };
    },
  },
];

for (const implementation of implementations)
  describe(`RunStore contract (${implementation.name})`, function () {
    this.timeout(60_000);
    const opened: (() => Promise<void>)[] = [];
    let open: Opener;

    /** One replica's run store on the test's shared state. */
    const replica = async (leaseMs = 10_000): Promise<RunStore> => {
      const { store, close } = await open(leaseMs);
      opened.push(close);
      return store;
    };

    beforeEach(async () => {
      open = await implementation.fresh();
    });

    afterEach(async () => {
      for (const close of opened.splice(0)) await close();
    });

    it("never assigns a run twice: five replicas claiming 200 runs concurrently take each exactly once", async () => {
      const stores = await Promise.all(Array.from({ length: 5 }, () => replica()));
      const runs = Array.from({ length: 200 }, () => newRun("claim.tool", undefined));
      await Promise.all(runs.map((run) => stores[0]!.create(run, "")));
      const claimedBy = new Map<string, string>();
      let duplicates = 0;
      await Promise.all(
        stores.map(async (store) => {
          for (;;) {
            const claimed = await store.claim(["claim.tool"], 7);
            if (claimed.length === 0) return;
            for (const run of claimed) {
              if (claimedBy.has(run.id)) duplicates += 1;
              claimedBy.set(run.id, store.replicaId);
              expect(run.owner).to.equal(store.replicaId);
              expect(run.epoch).to.equal(2);
            }
          }
        }),
      );
      expect(duplicates).to.equal(0);
      expect(claimedBy.size).to.equal(200);
    });

    it("fences writes by owner and epoch: a stale owner's flush is refused and writes nothing", async () => {
      const [a, b] = [await replica(), await replica()];
      const run = newRun("fence.tool", a.replicaId);
      await a.create(run, "");
      const fence = { id: run.id, owner: a.replicaId, epoch: 1 };
      expect(await a.flush(fence, [], run.execution)).to.equal(true);
      expect(await a.flush({ ...fence, epoch: 2 }, [], run.execution)).to.equal(false);
      expect(await b.flush({ ...fence, owner: b.replicaId }, [], run.execution)).to.equal(false);
      const stored = await b.get(run.id);
      expect(stored?.owner).to.equal(a.replicaId);
      expect(stored?.lastSequence).to.equal(0);
    });

    it("makes an idempotency key global: of 50 concurrent creates with one key, one creates and all name it", async () => {
      const stores = [await replica(), await replica()];
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, (_, index) => stores[index % 2]!.create(newRun("key.tool", undefined), "one-key")),
      );
      const created = outcomes.filter((outcome) => "ordinal" in outcome);
      expect(created).to.have.length(1);
      const ids = new Set(outcomes.flatMap((outcome) => ("existing" in outcome ? [outcome.existing.id] : [])));
      expect(ids.size).to.equal(1);
    });

    it("takes over a lost replica's runs once: a retry-safe run is handed back, any other ends ReplicaLostError", async () => {
      const [lost, survivor, other] = [await replica(500), await replica(), await replica()];
      const safe = newRun("lost.safe", lost.replicaId, true);
      const unsafe = newRun("lost.unsafe", lost.replicaId, false);
      const started = create(ExecutionSchema, { ...unsafe.execution, attempts: 1 });
      await lost.create({ ...safe, execution: create(ExecutionSchema, { ...safe.execution, attempts: 1 }) }, "");
      await lost.create({ ...unsafe, execution: started }, "");
      await lost.close(); // its lease ends now
      const taken = await Promise.all([survivor.sweep(decideLostRun, 10), other.sweep(decideLostRun, 10)]);
      expect(taken[0] + taken[1]).to.equal(2);
      const requeued = await survivor.get(safe.id);
      expect(requeued?.owner).to.equal(undefined);
      expect(requeued?.execution.state).to.equal(ExecutionState.QUEUED);
      expect((await survivor.events(safe.id, 0)).map((event) => event.event.case)).to.deep.equal(["retryScheduled"]);
      const ended = await survivor.get(unsafe.id);
      expect(ended?.execution.state).to.equal(ExecutionState.FAILED);
      expect(ended?.execution.result?.error?.errorType).to.equal("ReplicaLostError");
      expect(await survivor.sweep(decideLostRun, 10)).to.equal(0);
    });

    it("admits across replicas: never more held than the limit, a bounded FIFO queue, the next let in on release", async () => {
      const [a, b] = [await replica(), await replica()];
      const slot = { toolLimit: 0, maxConcurrent: 3, maxQueued: 4 };
      const runs = Array.from({ length: 7 }, (_, index) => newRun("slot.tool", (index % 2 ? a : b).replicaId));
      const outcomes = [];
      for (const [index, run] of runs.entries()) outcomes.push(await (index % 2 ? a : b).create(run, "", slot));
      const slots = outcomes.map((outcome) => ("slot" in outcome ? outcome.slot?.slot : "existing"));
      expect(slots).to.deep.equal(["held", "held", "held", "waiting", "waiting", "waiting", "waiting"]);
      let refused: unknown;
      try {
        await a.create(newRun("slot.tool", a.replicaId), "", slot);
      } catch (error) {
        refused = error;
      }
      expect(refused).to.be.instanceOf(ToolRuntimeError);
      expect(refused).to.have.property("code", "RESOURCE_EXHAUSTED");
      await b.release(runs[0]!.id, 3);
      expect(await a.held(runs.slice(3).map((run) => run.id))).to.deep.equal([runs[3]!.id]);
    });

    it("counts slot blocks as held: growth takes only free slots and none while runs wait; a shrink lets them in", async () => {
      const [a, b] = [await replica(), await replica()];
      const slot = { toolLimit: 0, maxConcurrent: 4, maxQueued: 10 };
      expect(await a.resizeSlotBlock(3, 4)).to.deep.equal({ slots: 3, waiting: 0 });
      // One slot is left for the cluster: B's block gets it, not the two it asks for.
      expect(await b.resizeSlotBlock(2, 4)).to.deep.equal({ slots: 1, waiting: 0 });
      const queued = newRun("block.tool", b.replicaId);
      const outcome = await b.create(queued, "", slot);
      expect("slot" in outcome && outcome.slot?.slot).to.equal("waiting");
      // A run waits: no block grows, not even into a slot that shrinking just freed.
      expect(await b.resizeSlotBlock(0, 4)).to.deep.equal({ slots: 0, waiting: 1 });
      expect(await a.held([queued.id])).to.deep.equal([queued.id]);
      expect(await a.resizeSlotBlock(4, 4)).to.deep.equal({ slots: 3, waiting: 0 });
      // Shrinking lets the waiting run in: A gives one back while one waits.
      const second = newRun("block.tool", b.replicaId);
      expect("slot" in (await b.create(second, "", slot)) ? "created" : "existing").to.equal("created");
      expect(await a.held([second.id])).to.deep.equal([]);
      expect(await a.resizeSlotBlock(2, 4)).to.deep.equal({ slots: 2, waiting: 1 });
      expect(await a.held([second.id])).to.deep.equal([second.id]);
    });

    it("frees a replica's slot block when the replica leaves (its lease ends): the slots are free again for others", async () => {
      const [lost, survivor] = [await replica(300), await replica()];
      expect((await lost.resizeSlotBlock(4, 4)).slots).to.equal(4);
      expect((await survivor.resizeSlotBlock(1, 4)).slots).to.equal(0);
      await lost.close(); // its lease ends now
      expect((await survivor.resizeSlotBlock(4, 4)).slots).to.equal(4);
    });

    it("creates a run stored once with its first flush: once under retries, owned and fenced, refused without a lease", async () => {
      const [a, b] = [await replica(), await replica()];
      const run = newRun("once.tool", a.replicaId, true);
      const ended = create(ExecutionSchema, { ...run.execution, state: ExecutionState.SUCCEEDED, attempts: 1 });
      const events = [heartbeat(1), heartbeat(2)];
      const fence = { id: run.id, owner: a.replicaId, epoch: 1 };
      expect(await b.get(run.id)).to.equal(undefined);
      expect(await a.flush(fence, events, ended, run)).to.equal(true);
      // The same write again (its answer lost): nothing twice.
      expect(await a.flush(fence, events, ended, run)).to.equal(true);
      const stored = await b.get(run.id);
      expect(stored?.owner).to.equal(a.replicaId);
      expect(stored?.epoch).to.equal(1);
      expect(stored?.retrySafe).to.equal(true);
      expect(stored?.execution.state).to.equal(ExecutionState.SUCCEEDED);
      expect(stored?.request.toolName).to.equal("once.tool");
      expect((await b.events(run.id, 0)).map((event) => Number(event.sequence))).to.deep.equal([1, 2]);
      const listed = await b.list({ toolName: "once.tool", state: 0, beforeOrdinal: Infinity, limit: 10 });
      expect(listed.map((each) => each.id)).to.deep.equal([run.id]);
      // Another replica cannot create or write it under the owner's fence.
      expect(await b.flush({ ...fence, owner: b.replicaId }, [], ended, run)).to.equal(false);
      // Without a lease, nothing is created.
      const late = newRun("once.tool", a.replicaId, true);
      await a.close();
      expect(await b.flush({ id: late.id, owner: a.replicaId, epoch: 1 }, [], ended, late)).to.equal(false);
      expect(await b.get(late.id)).to.equal(undefined);
    });
  });
