import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { ToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import type { ToolChange } from "../../src/registry/change-log.js";
import { RegistrySet } from "../../src/registry/registry-set.js";
import { RunnerSet } from "../../src/runner/runner-set.js";
import { createMemoryStoreSet } from "../../src/stores/memory/memory-store-set.js";
import { openPostgresStoreSet } from "../../src/stores/postgres/postgres-store-set.js";
import type { StoreSet } from "../../src/stores/store-set.js";
import { sharedPostgres } from "../support/postgres-server.js";

/** One process's view of a store: its registries, runners and stores. */
interface Replica {
  readonly registries: RegistrySet;
  readonly runners: RunnerSet;
  readonly stores: StoreSet;
}

/** Opens replicas of one store: each call is another process's view of the same state. */
type ReplicaFactory = () => Promise<Replica>;

const spec = (name: string, description = "") => create(ToolSpecSchema, { name, description });

async function rejection(promise: Promise<unknown>): Promise<ToolRuntimeError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(ToolRuntimeError);
    return error as ToolRuntimeError;
  }
  expect.fail("expected a rejection");
}

const implementations: { name: string; open: () => Promise<ReplicaFactory> }[] = [
  {
    name: "memory",
    open: () => {
      const registries = new RegistrySet({ maxTools: 2000 });
      const runners = new RunnerSet(registries.default);
      const replica = { registries, runners, stores: createMemoryStoreSet(registries, runners) };
      // One process is the whole state: every "replica" is the same one.
      return Promise.resolve(() => Promise.resolve(replica));
    },
  },
  {
    name: "postgres",
    open: async () => {
      const url = await (await sharedPostgres()).createDatabase("tool_store");
      return async () => {
        const registries = new RegistrySet({ maxTools: 2000 });
        const runners = new RunnerSet(registries.default);
        const stores = await openPostgresStoreSet(url, registries, runners, { maxTools: 2000, pollIntervalMs: 200 });
        return { registries, runners, stores };
      };
    },
  },
];

for (const implementation of implementations) {
  describe(`ToolStore contract (${implementation.name})`, function () {
    this.timeout(60_000);
    let openReplica: ReplicaFactory;
    const opened: Replica[] = [];
    const replica = async (): Promise<Replica> => {
      const next = await openReplica();
      opened.push(next);
      return next;
    };

    beforeEach(async () => {
      openReplica = await implementation.open();
    });

    afterEach(async () => {
      for (const each of opened.splice(0)) {
        each.runners.close();
        await each.stores.close();
      }
    });

    it("lets exactly one of 1,000 concurrent registrations of one name win; the rest get ALREADY_EXISTS", async () => {
      const { stores, registries } = await replica();
      const outcomes = await Promise.allSettled(
        Array.from({ length: 1000 }, (_, index) =>
          stores.tools.register("team", { spec: spec("race.tool", `${index}`) }),
        ),
      );
      const winners = outcomes.filter((outcome) => outcome.status === "fulfilled");
      const losers = outcomes.filter((outcome) => outcome.status === "rejected");
      expect(winners).to.have.length(1);
      expect(losers).to.have.length(999);
      for (const loser of losers) {
        expect(loser.reason).to.have.property("code", "ALREADY_EXISTS");
      }
      const view = registries.find("team");
      expect(view?.version).to.equal(1n);
      const winner = (winners[0] as PromiseFulfilledResult<{ spec: { description: string } }>).value;
      expect(view?.get("race.tool")?.spec.description).to.equal(winner.spec.description);
    });

    it("numbers concurrent changes gaplessly, one version each, in the order of the change log", async () => {
      const { stores, registries } = await replica();
      const names = Array.from({ length: 200 }, (_, index) => `gapless.t${index}`);
      const results = await Promise.all(names.map((name) => stores.tools.register("", { spec: spec(name) })));
      const versions = results.map((result) => result.spec.version).sort((a, b) => (a < b ? -1 : 1));
      expect(versions).to.deep.equal(Array.from({ length: 200 }, (_, index) => BigInt(index + 1)));
      const changes = (await stores.tools.changesSince(registries.default, 0n)) as ToolChange[];
      expect(changes.map((change) => change.version)).to.deep.equal(versions);
      expect(new Set(changes.map((change) => change.spec.name)).size).to.equal(200);
    });

    it("replaces only with replace, refuses to replace a tool served by a handler, and removes once", async () => {
      const { stores, registries } = await replica();
      await stores.tools.register("", { spec: spec("cas.tool", "first") });
      const replaced = await stores.tools.register("", { spec: spec("cas.tool", "second") }, { replace: true });
      expect(replaced.replaced).to.equal(true);
      expect(replaced.spec.version).to.equal(2n);
      expect(registries.default.get("cas.tool")?.spec.description).to.equal("second");
      await stores.tools.register("", { spec: spec("cas.handled"), handler: () => ({}) });
      const refused = await rejection(
        stores.tools.register("", { spec: spec("cas.handled", "takeover") }, { replace: true }),
      );
      expect(refused.code).to.equal("FAILED_PRECONDITION");
      expect(await stores.tools.remove("", "cas.tool")).to.equal(true);
      expect(await stores.tools.remove("", "cas.tool")).to.equal(false);
      expect(registries.default.get("cas.tool")).to.equal(undefined);
      const changes = (await stores.tools.changesSince(registries.default, 0n)) as ToolChange[];
      expect(changes.map((change) => change.kind)).to.deep.equal(["added", "updated", "added", "removed"]);
    });

    it("pages in name order with keyset tokens: every tool once, none skipped", async () => {
      const { stores } = await replica();
      const names = Array.from({ length: 250 }, (_, index) => `page.t${String(index).padStart(3, "0")}`);
      for (const name of [...names].reverse()) await stores.tools.register("paged", { spec: spec(name) });
      const view = await stores.tools.view("paged");
      const seen: string[] = [];
      let pageToken = "";
      let pages = 0;
      do {
        const page = view!.list({ pageSize: 100, pageToken });
        seen.push(...page.tools.map((tool) => tool.name));
        pageToken = page.nextPageToken;
        pages += 1;
      } while (pageToken !== "");
      expect(pages).to.equal(3);
      expect(seen).to.deep.equal(names);
    });

    it("refuses a tool past the registry's limit with RESOURCE_EXHAUSTED", async () => {
      const { stores } = await replica();
      // In batches: 2,000 writes at once would wait on the pool past its connect timeout.
      for (let batch = 0; batch < 20; batch++) {
        await Promise.all(
          Array.from({ length: 100 }, (_, index) =>
            stores.tools.register("full", { spec: spec(`full.t${batch * 100 + index}`) }),
          ),
        );
      }
      const refused = await rejection(stores.tools.register("full", { spec: spec("full.extra") }));
      expect(refused.code).to.equal("RESOURCE_EXHAUSTED");
    });

    it("adopts an equal spec registered at start without a new version, and gives it this process's handler", async () => {
      const { stores, registries } = await replica();
      await stores.tools.register("", { spec: spec("adopt.tool", "same"), handler: () => ({ from: "first" }) });
      const adopted = await stores.tools.register(
        "",
        { spec: spec("adopt.tool", "same"), handler: () => ({ from: "second" }) },
        { adopt: true },
      );
      expect(adopted.spec.version).to.equal(1n);
      expect(registries.default.version).to.equal(1n);
      const handler = registries.default.get("adopt.tool")?.handler;
      expect(handler?.({}, {} as never)).to.deep.equal({ from: "second" });
    });

    if (implementation.name === "postgres") {
      it("lets exactly one of concurrent registrations of one name on two replicas win", async () => {
        const [a, b] = [await replica(), await replica()];
        const outcomes = await Promise.allSettled(
          Array.from({ length: 100 }, (_, index) =>
            (index % 2 === 0 ? a : b).stores.tools.register("", { spec: spec("both.tool", `${index}`) }),
          ),
        );
        expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).to.have.length(1);
        const viewA = await a.stores.tools.view("");
        const viewB = await b.stores.tools.view("");
        expect(viewA?.get("both.tool")?.spec.description).to.equal(viewB?.get("both.tool")?.spec.description);
        expect(viewA?.version).to.equal(viewB?.version);
      });

      it("shows a replica's subscribers every change of another replica, gapless and in commit order", async () => {
        const [a, b] = [await replica(), await replica()];
        const seen: bigint[] = [];
        const all = new Promise<void>((resolve) => {
          b.registries.default.subscribe((change) => {
            seen.push(change.version);
            if (seen.length === 50) resolve();
          });
        });
        await Promise.all(
          Array.from({ length: 50 }, (_, index) => a.stores.tools.register("", { spec: spec(`follow.t${index}`) })),
        );
        await all; // by the doorbell or the poll, never by a sleep
        expect(seen).to.deep.equal(Array.from({ length: 50 }, (_, index) => BigInt(index + 1)));
      });

      it("reads another replica's write at once through view(), and keeps specs across a restart", async () => {
        const a = await replica();
        await a.stores.tools.register("kept", { spec: spec("kept.tool", "durable") });
        const b = await replica();
        expect((await b.stores.tools.view("kept"))?.get("kept.tool")?.spec.description).to.equal("durable");
        await a.stores.tools.register("kept", { spec: spec("kept.other") });
        expect((await b.stores.tools.view("kept"))?.get("kept.other")).to.not.equal(undefined);
        const changes = await b.stores.tools.changesSince((await b.stores.tools.view("kept"))!, 0n);
        expect(changes?.map((change) => change.spec.name)).to.deep.equal(["kept.tool", "kept.other"]);
      });
    }
  });
}
