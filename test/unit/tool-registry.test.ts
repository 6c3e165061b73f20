import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { ToolRegistry } from "../../src/registry/tool-registry.js";
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
