import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { maxSkippedPerPage, ToolRegistry, type ListToolsQuery } from "../../src/registry/tool-registry.js";
import { rangeOfName, rangeOfPrefix } from "../../src/registry/name-ranges.js";
import { ToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import { ChangeLog } from "../../src/registry/change-log.js";

const spec = (name: string, toolType = "") => create(ToolSpecSchema, { name, toolType });

describe("ToolRegistry", () => {
  describe("register()", () => {
    it("rejects a duplicate name with ALREADY_EXISTS and keeps the first spec", () => {
      const registry = new ToolRegistry("default");
      registry.register({ spec: create(ToolSpecSchema, { name: "a.b", description: "first" }) });
      expect(() => registry.register({ spec: create(ToolSpecSchema, { name: "a.b", description: "second" }) }))
        .to.throw(ToolRuntimeError)
        .with.property("code", "ALREADY_EXISTS");
      expect(registry.get("a.b")?.spec.description).to.equal("first");
      expect(registry.version).to.equal(1n);
    });

    it("counts a description's characters as code points: 4,096 emoji pass, one more does not", () => {
      const registry = new ToolRegistry("described");
      const emoji = "😀".repeat(4096);
      registry.register({ spec: create(ToolSpecSchema, { name: "a.emoji", description: emoji }) });
      expect(registry.get("a.emoji")?.spec.description).to.equal(emoji);
      expect(() => registry.register({ spec: create(ToolSpecSchema, { name: "a.more", description: `${emoji}x` }) }))
        .to.throw(ToolRuntimeError)
        .with.property("details", 'description of "a.more" has 4097 characters: the limit is 4096');
    });

    it("refuses registrations beyond maxTools with RESOURCE_EXHAUSTED", () => {
      const registry = new ToolRegistry("small", { maxTools: 2 });
      registry.register({ spec: spec("a.one") });
      registry.register({ spec: spec("a.two") });
      expect(() => registry.register({ spec: spec("a.three") }))
        .to.throw(ToolRuntimeError)
        .with.property("code", "RESOURCE_EXHAUSTED");
    });
  });

  describe("schemas", () => {
    it("keeps an owned spec's schema object as it is, and copies an author's", () => {
      const registry = new ToolRegistry("default");
      const inputSchema = { type: "object", properties: { n: { type: "integer" } } };
      const owned = registry.register({ spec: create(ToolSpecSchema, { name: "a.owned", inputSchema }), owned: true });
      const copied = registry.register({ spec: create(ToolSpecSchema, { name: "a.copied", inputSchema }) });
      expect(owned.spec.inputSchema).to.equal(inputSchema);
      expect(copied.spec.inputSchema).to.not.equal(inputSchema);
      expect(copied.spec.inputSchema).to.deep.equal(inputSchema);
      expect(() =>
        registry.register({
          spec: create(ToolSpecSchema, { name: "a.bad", inputSchema: { type: "object", requried: ["n"] } }),
          owned: true,
        }),
      ).to.throw(/requried/);
    });

    it("keeps its own copy of a spec's schema, checked on first use with the usual messages", () => {
      const registry = new ToolRegistry("default");
      const inputSchema = { type: "object", properties: { n: { type: "integer", minimum: 1 } }, required: ["n"] };
      registry.register({ spec: create(ToolSpecSchema, { name: "a.count", inputSchema }) });
      inputSchema.required = ["m"];
      const tool = registry.get("a.count");
      expect(tool?.spec.inputSchema).to.deep.equal({
        type: "object",
        properties: { n: { type: "integer", minimum: 1 } },
        required: ["n"],
      });
      expect(tool?.checkInputs?.({ n: 0 })).to.deep.equal(["/n is 0: must be >= 1"]);
      expect(tool?.checkInputs?.({ n: 2 })).to.deep.equal([]);
      expect(tool?.checkOutput).to.equal(undefined);
    });
  });

  describe("get()", () => {
    it("returns undefined for unknown names, prototype names included", () => {
      const registry = new ToolRegistry("default");
      for (const name of ["a.b", "__proto__", "constructor", "toString", "hasOwnProperty"]) {
        expect(registry.get(name)).to.equal(undefined);
      }
    });
  });

  describe("list()", () => {
    it("pages in name order, continuing after the last name even when tools change between pages", () => {
      const registry = new ToolRegistry("default");
      for (const name of ["n.c", "n.a", "n.e", "m.z", "n.b"]) registry.register({ spec: spec(name) });
      const first = registry.list({ namespace: "n", pageSize: 2 });
      expect(first.tools.map((tool) => tool.name)).to.deep.equal(["n.a", "n.b"]);
      registry.remove("n.a");
      registry.register({ spec: spec("n.bb") });
      const second = registry.list({ namespace: "n", pageSize: 2, pageToken: first.nextPageToken });
      expect(second.tools.map((tool) => tool.name)).to.deep.equal(["n.bb", "n.c"]);
      const third = registry.list({ namespace: "n", pageSize: 2, pageToken: second.nextPageToken });
      expect(third.tools.map((tool) => tool.name)).to.deep.equal(["n.e"]);
      expect(third.nextPageToken).to.equal("");
    });

    it("does not match a namespace by a mere prefix of its name", () => {
      const registry = new ToolRegistry("default");
      registry.register({ spec: spec("fs.read") });
      registry.register({ spec: spec("fsx.read") });
      expect(registry.list({ namespace: "fs" }).tools.map((tool) => tool.name)).to.deep.equal(["fs.read"]);
    });

    it("filters by tool_type", () => {
      const registry = new ToolRegistry("default");
      registry.register({ spec: spec("a.one", "http") });
      registry.register({ spec: spec("a.two", "function") });
      expect(registry.list({ toolType: "http" }).tools.map((tool) => tool.name)).to.deep.equal(["a.one"]);
    });

    describe("cost", () => {
      const handler = () => ({});
      /** 5,000 tools without a handler, and a tool with one at the end of every 10th namespace of 100. */
      function largeRegistry(): ToolRegistry {
        const registry = new ToolRegistry("large");
        for (let index = 0; index < 5000; index++) {
          const toolType = index % 1000 === 0 ? "rare" : "bulk";
          registry.register({ spec: spec(`ns${String(index % 100).padStart(2, "0")}.tool_${index}`, toolType) });
        }
        for (let index = 0; index < 100; index += 10) registry.register({ spec: spec(`ns${index}.zrun`), handler });
        return registry;
      }
      /** Every page of a listing, following its tokens. */
      function pagesOf(registry: ToolRegistry, query: ListToolsQuery): { names: string[]; examined: number[] } {
        const names: string[] = [];
        const examined: number[] = [];
        let pageToken = "";
        do {
          const page = registry.list({ ...query, pageToken });
          names.push(...page.tools.map((tool) => tool.name));
          examined.push(page.examined);
          pageToken = page.nextPageToken;
        } while (pageToken !== "");
        return { names, examined };
      }

      it("looks only at tools that can run here when listing those, whatever else the registry holds", () => {
        const listing = pagesOf(largeRegistry(), { runnableOnly: true, pageSize: 3 });
        expect(listing.names).to.deep.equal([
          "ns0.zrun",
          "ns10.zrun",
          "ns20.zrun",
          "ns30.zrun",
          "ns40.zrun",
          "ns50.zrun",
          "ns60.zrun",
          "ns70.zrun",
          "ns80.zrun",
          "ns90.zrun",
        ]);
        expect(listing.examined).to.deep.equal([4, 4, 4, 1]);
      });

      it("looks only at the tools of a tool_type when filtering on it", () => {
        const listing = pagesOf(largeRegistry(), { toolType: "rare", pageSize: 2 });
        expect(listing.names).to.deep.equal([
          "ns00.tool_0",
          "ns00.tool_1000",
          "ns00.tool_2000",
          "ns00.tool_3000",
          "ns00.tool_4000",
        ]);
        expect(listing.examined).to.deep.equal([3, 3, 1]);
      });

      it("looks only at names within the ranges given, and within the namespace", () => {
        const registry = largeRegistry();
        const within = [rangeOfPrefix("ns10."), rangeOfName("ns20.zrun"), rangeOfPrefix("ns3")];
        const runnable = pagesOf(registry, { runnableOnly: true, within, pageSize: 10 });
        expect(runnable.names).to.deep.equal(["ns10.zrun", "ns20.zrun", "ns30.zrun"]);
        expect(runnable.examined).to.deep.equal([3]);
        const inNamespace = pagesOf(registry, { namespace: "ns20", within, pageSize: 10 });
        expect(inNamespace.names).to.deep.equal(["ns20.zrun"]);
        expect(inNamespace.examined).to.deep.equal([1]);
      });

      it("ends a page after leaving out 1,000 tools, short, with a token that goes on, and lists every match once", () => {
        expect(maxSkippedPerPage).to.equal(1000);
        const registry = largeRegistry();
        // About one tool in a hundred: a page of 100 would look at the whole registry.
        const matches = (name: string): boolean => name.endsWith("77") || name.endsWith(".zrun");
        const listing = pagesOf(registry, { pageSize: 100, include: (tool) => matches(tool.name) });
        const expected = registry
          .snapshot()
          .tools.map((tool) => tool.spec.name)
          .filter(matches);
        expect(expected.length).to.be.within(50, 100);
        expect(listing.names).to.deep.equal(expected);
        for (const examined of listing.examined) expect(examined).to.be.at.most(100 + maxSkippedPerPage);
        // Short pages: the matches would fit in one.
        expect(listing.examined.length).to.be.at.least(Math.floor(registry.size / (100 + maxSkippedPerPage)));
        const nothing = pagesOf(registry, { pageSize: 100, include: () => false });
        expect(nothing.names).to.deep.equal([]);
        expect(nothing.examined).to.have.length(Math.ceil(registry.size / maxSkippedPerPage));
      });

      it("keeps its indexes in step through replacement, removal, a store's changes, handlers and reset", () => {
        const registry = new ToolRegistry("mirror");
        // What a listing walks is what it lists: an index holding a stale name would make it look at more.
        const walked = (query: ListToolsQuery): string[] => {
          const listing = pagesOf(registry, query);
          expect(listing.examined.reduce((sum, count) => sum + count, 0)).to.equal(listing.names.length);
          return listing.names;
        };
        const runnableNames = () => walked({ runnableOnly: true });
        const typed = (toolType: string) => walked({ toolType });
        registry.register({ spec: spec("a.one", "http") });
        registry.register({ spec: spec("a.two", "http") }, {});
        registry.register({ spec: spec("a.one", "grpc") }, { replace: true });
        expect(typed("http")).to.deep.equal(["a.two"]);
        expect(typed("grpc")).to.deep.equal(["a.one"]);
        registry.remove("a.two");
        expect(typed("http")).to.deep.equal([]);
        // A shared store's changes: has_handler as another replica or provider set it.
        const served = create(ToolSpecSchema, { name: "b.served", toolType: "http", hasHandler: true });
        registry.apply({ kind: "added", spec: served, version: registry.version + 1n });
        expect(runnableNames()).to.deep.equal(["b.served"]);
        const unserved = create(ToolSpecSchema, { name: "b.served", toolType: "http", hasHandler: false });
        registry.apply({ kind: "updated", spec: unserved, version: registry.version + 1n });
        expect(runnableNames()).to.deep.equal([]);
        registry.apply({ kind: "updated", spec: served, version: registry.version + 1n });
        registry.attachHandler("b.served", handler, undefined);
        registry.refreshHandler("b.served");
        registry.detachHandler("b.served");
        // Served elsewhere still: has_handler is the store's.
        expect(runnableNames()).to.deep.equal(["b.served"]);
        registry.apply({ kind: "removed", spec: served, version: registry.version + 1n });
        expect(runnableNames()).to.deep.equal([]);
        expect(typed("http")).to.deep.equal([]);
        registry.reset([served, create(ToolSpecSchema, { name: "c.idle", toolType: "grpc" })], registry.version + 5n);
        expect(runnableNames()).to.deep.equal(["b.served"]);
        expect(typed("grpc")).to.deep.equal(["c.idle"]);
        expect(typed("http")).to.deep.equal(["b.served"]);
        expect(walked({})).to.deep.equal(["b.served", "c.idle"]);
      });
    });
  });

  describe("subscribe() and changesSince()", () => {
    it("reports each change in order and replays retained changes", () => {
      const registry = new ToolRegistry("default", { retainedChanges: 2 });
      const seen: string[] = [];
      const unsubscribe = registry.subscribe((change) =>
        seen.push(`${change.kind}:${change.spec.name}:${change.version}`),
      );
      registry.register({ spec: spec("a.one") });
      registry.register({ spec: spec("a.one") }, { replace: true });
      registry.remove("a.one");
      unsubscribe();
      registry.register({ spec: spec("a.two") });
      expect(seen).to.deep.equal(["added:a.one:1", "updated:a.one:2", "removed:a.one:3"]);
      expect(registry.changesSince(2n)?.map((change) => change.kind)).to.deep.equal(["removed", "added"]);
      expect(registry.changesSince(1n)).to.equal(undefined);
      expect(registry.changesSince(4n)).to.deep.equal([]);
    });
  });
});

describe("ChangeLog", () => {
  it("keeps the latest changes up to its capacity", () => {
    const log = new ChangeLog(3);
    for (let version = 1n; version <= 5n; version++) log.append({ kind: "added", spec: spec("a.b"), version });
    expect(log.since(2n, 5n)?.map((change) => change.version)).to.deep.equal([3n, 4n, 5n]);
    expect(log.since(1n, 5n)).to.equal(undefined);
  });
});
