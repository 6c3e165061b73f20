import { create, equals, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { RegistryEntry } from "../../src/registry/registry-entry.js";
import { SpecPacker } from "../../src/registry/spec-packer.js";
import { ToolRegistry } from "../../src/registry/tool-registry.js";
import type { ToolChange } from "../../src/registry/change-log.js";
import { watchRegistry, type WatchItem } from "../../src/registry/watch-registry.js";

/** A spec with a schema of `properties` described fields, every one different from other tools'. */
function specFor(index: number, properties = 6): ToolSpec {
  const fields: Record<string, unknown> = {};
  for (let p = 0; p < properties; p++) {
    fields[`field_${p}_${index}`] = {
      type: p % 2 === 0 ? "string" : "integer",
      description: `Field ${p} of tool ${index}: what the caller passes, in its own words.`,
      ...(p % 2 === 0 ? { maxLength: 10 + index } : { minimum: -index, maximum: 1e21 }),
    };
  }
  return create(ToolSpecSchema, {
    name: `pack.tool_${index}`,
    description: `Tool ${index} — with some text beyond ASCII: café, 東京, 🙂.`,
    toolType: index % 2 === 0 ? "http" : "function",
    capabilities: { readOnly: index % 3 === 0, idempotent: true },
    defaultTimeoutMs: 1000 + index,
    inputSchema: {
      type: "object",
      properties: fields as never,
      required: [`field_0_${index}`],
      additionalProperties: false,
    },
    outputSchema: { type: "object", properties: { ok: { type: "boolean", default: -0 } } },
  });
}

describe("packed specs", () => {
  it("unpack gives back a spec equal to the one packed, byte for byte in its encoding", () => {
    const packer = SpecPacker.fromSamples([specFor(1), specFor(2)]);
    for (const index of [3, 40, 900]) {
      const spec = specFor(index);
      const unpacked = packer.unpack(packer.pack(spec));
      expect(equals(ToolSpecSchema, unpacked, spec)).to.equal(true);
      expect(toBinary(ToolSpecSchema, unpacked)).to.deep.equal(toBinary(ToolSpecSchema, spec));
      expect(Object.is((unpacked.outputSchema?.["properties"] as never)["ok"]["default"], -0)).to.equal(true);
    }
  });

  it("packs a spec into well under half of its encoding once the dictionary knows its registry's vocabulary", () => {
    const packer = SpecPacker.fromSamples([specFor(1), specFor(2), specFor(3)]);
    const spec = specFor(77);
    expect(packer.pack(spec).length).to.be.below(toBinary(ToolSpecSchema, spec).byteLength / 2);
  });

  it("a packed entry unpacks on read and keeps the spec until 2,048 other entries were unpacked", () => {
    const packer = SpecPacker.fromSamples([specFor(1)]);
    const spec = specFor(5);
    const entry = new RegistryEntry(spec, undefined, undefined, packer);
    expect(entry.spec).to.equal(spec); // not packed yet
    expect(entry.pack()).to.equal(true);
    expect(entry.pack()).to.equal(false);
    expect(entry.packed).to.equal(true);
    const read = entry.spec;
    expect(read).to.not.equal(spec);
    expect(equals(ToolSpecSchema, read, spec)).to.equal(true);
    expect(entry.spec).to.equal(read); // held until its turn in the ring comes round
    for (let index = 0; index < 2048; index++) {
      const other = new RegistryEntry(specFor(100 + index), undefined, undefined, packer);
      other.pack();
      expect(other.spec.name).to.equal(`pack.tool_${100 + index}`);
    }
    const again = entry.spec;
    expect(again).to.not.equal(read);
    expect(equals(ToolSpecSchema, again, spec)).to.equal(true);
  });

  it("never packs a tool that has a handler here", () => {
    const packer = SpecPacker.fromSamples([specFor(1)]);
    const entry = new RegistryEntry(specFor(2), () => ({}), undefined, packer);
    expect(entry.pack()).to.equal(false);
    expect(entry.packed).to.equal(false);
    const withoutHandler = entry.withHandler(undefined, undefined);
    expect(withoutHandler.pack()).to.equal(true);
    expect(withoutHandler.packed).to.equal(true);
  });

  describe("in a registry past its packing threshold", () => {
    const threshold = 5;
    const fill = (registry: ToolRegistry, count: number): ToolSpec[] => {
      const specs = Array.from({ length: count }, (_, index) => registry.register({ spec: specFor(index) }).spec);
      registry.packPending();
      return specs;
    };

    it("packs the tools registered past the threshold, and every read gives the registered spec", () => {
      const registry = new ToolRegistry("packing", { packSpecsAbove: threshold });
      const registered = fill(registry, 3000);
      const packed = registered.filter((spec) => (registry.get(spec.name) as RegistryEntry).packed);
      expect(packed).to.have.length(3000 - threshold);
      // 3,000 tools outnumber the entries that keep their specs: most reads unpack.
      for (const spec of registered)
        expect(equals(ToolSpecSchema, registry.get(spec.name)?.spec as ToolSpec, spec)).to.equal(true);
    });

    it("lists, filters by tool type and snapshots packed tools as they were registered", () => {
      const registry = new ToolRegistry("packing", { packSpecsAbove: threshold });
      const registered = fill(registry, 40);
      const byName = new Map(registered.map((spec) => [spec.name, spec]));
      const page = registry.list({ toolType: "http", pageSize: 1000 });
      expect(page.tools.map((spec) => spec.name)).to.deep.equal(
        [...byName.keys()].filter((_, index) => index % 2 === 0).sort(),
      );
      for (const spec of page.tools)
        expect(equals(ToolSpecSchema, spec, byName.get(spec.name) as ToolSpec)).to.equal(true);
      const snapshot = registry.snapshot();
      expect(snapshot.tools.map((tool) => tool.spec.name)).to.deep.equal([...byName.keys()].sort());
    });

    it("keeps a snapshot's tools as they were when a tool is replaced after it", () => {
      const registry = new ToolRegistry("packing", { packSpecsAbove: threshold });
      fill(registry, 10);
      const snapshot = registry.snapshot();
      const before = snapshot.tools.find((tool) => tool.spec.name === "pack.tool_8")?.spec.description;
      registry.register(
        { spec: create(ToolSpecSchema, { ...specFor(8), description: "replaced" }) },
        { replace: true },
      );
      expect(snapshot.tools.find((tool) => tool.spec.name === "pack.tool_8")?.spec.description).to.equal(before);
      expect(registry.get("pack.tool_8")?.spec.description).to.equal("replaced");
    });

    it("replays changes, removals included, with their specs, to watchers resuming and to listeners", async () => {
      const registry = new ToolRegistry("packing", { packSpecsAbove: threshold });
      const heard: ToolChange[] = [];
      registry.subscribe((change) => heard.push(change));
      const registered = fill(registry, 12);
      registry.remove("pack.tool_9");
      const replayed = registry.changesSince(0n) as ToolChange[];
      expect(replayed.map((change) => [change.kind, change.spec.name, change.version])).to.deep.equal([
        ...registered.map((spec, index) => ["added", spec.name, BigInt(index + 1)]),
        ["removed", "pack.tool_9", 13n],
      ]);
      expect(equals(ToolSpecSchema, (replayed[12] as ToolChange).spec, registered[9] as ToolSpec)).to.equal(true);
      expect(heard.map((change) => change.spec.name)).to.deep.equal(replayed.map((change) => change.spec.name));

      const abort = new AbortController();
      const items: WatchItem[] = [];
      for await (const item of watchRegistry(registry, { fromVersion: 10n, signal: abort.signal })) {
        items.push(item);
        if (item.version === 13n) break;
      }
      expect(items.map((item) => [item.kind, item.spec?.name])).to.deep.equal([
        ["added", "pack.tool_10"],
        ["added", "pack.tool_11"],
        ["removed", "pack.tool_9"],
      ]);
    });

    it("keeps handlers' tools unpacked, and packs a tool once its handler is detached", () => {
      const registry = new ToolRegistry("packing", { packSpecsAbove: threshold });
      fill(registry, 8);
      registry.register({ spec: specFor(50), handler: () => ({}) });
      expect((registry.get("pack.tool_50") as RegistryEntry).packed).to.equal(false);
      registry.attachHandler("pack.tool_7", () => ({}), undefined);
      registry.refreshHandler("pack.tool_7");
      expect((registry.get("pack.tool_7") as RegistryEntry).packed).to.equal(false);
      registry.detachHandler("pack.tool_7");
      registry.packPending();
      const entry = registry.get("pack.tool_7") as RegistryEntry;
      expect(entry.packed).to.equal(true);
      expect(entry.handler).to.equal(undefined);
      expect(equals(ToolSpecSchema, entry.spec, { ...specFor(7), version: entry.spec.version })).to.equal(true);
    });

    it("packs in the background once registrations pause", async () => {
      const registry = new ToolRegistry("packing", { packSpecsAbove: threshold });
      for (let index = 0; index < 30; index++) registry.register({ spec: specFor(index) });
      const entry = registry.get("pack.tool_29") as RegistryEntry;
      expect(entry.packed).to.equal(false);
      while (!entry.packed) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(registry.snapshot().tools.filter((tool) => (tool as RegistryEntry).packed)).to.have.length(30 - threshold);
    });

    it("packs the oldest on the packing thread as registrations that never pause go, leaving at most its bound unpacked", async () => {
      const registry = new ToolRegistry("packing", { packSpecsAbove: threshold, maxSpecsWaitingToPack: 1000 });
      const count = threshold + 1000 + 300;
      for (let index = 0; index < count; index++) registry.register({ spec: specFor(index, 1) });
      // The latest wait for a pause; the oldest past the threshold went to the thread.
      expect((registry.get(`pack.tool_${count - 1}`) as RegistryEntry).packed).to.equal(false);
      await registry.packingSettled();
      const packed = registry.snapshot().tools.filter((tool) => (tool as RegistryEntry).packed);
      expect(packed.length).to.be.at.least(300);
      expect((registry.get(`pack.tool_${threshold}`) as RegistryEntry).packed).to.equal(true);
      const unpacked = registry.snapshot().tools.filter((tool) => !(tool as RegistryEntry).packed);
      expect(unpacked.length).to.be.at.most(threshold + 1000);
      registry.packPending();
    });

    it("leaves at most as many unpacked as its option says, the latest registered among them", async () => {
      for (const bound of [1, 40]) {
        const registry = new ToolRegistry("packing", { packSpecsAbove: threshold, maxSpecsWaitingToPack: bound });
        for (let index = 0; index < threshold + 100; index++) registry.register({ spec: specFor(index, 1) });
        expect((registry.get(`pack.tool_${threshold + 99}`) as RegistryEntry).packed).to.equal(false);
        await registry.packingSettled();
        const packed = registry.snapshot().tools.filter((tool) => (tool as RegistryEntry).packed);
        expect(packed.length, `bound ${bound}`).to.be.at.least(100 - bound);
        registry.packPending();
      }
    });

    it("packs nothing at once when reloaded wholesale, and forgets what the entries it let go were waiting for", () => {
      const registry = new ToolRegistry("packing", { packSpecsAbove: threshold, maxSpecsWaitingToPack: 1000 });
      for (let index = 0; index < 10; index++) registry.register({ spec: specFor(index, 1) });
      const before = registry.get("pack.tool_9") as RegistryEntry;
      const count = threshold + 1000 + 300;
      const specs = Array.from({ length: count }, (_, index) => ({ ...specFor(index, 1), version: 1n }));
      registry.reset(specs, 7n);
      expect(registry.snapshot().tools.some((tool) => (tool as RegistryEntry).packed)).to.equal(false);
      registry.packPending();
      // Its packer was made before (past the threshold): every spec of the reload is packed.
      expect(registry.snapshot().tools.filter((tool) => (tool as RegistryEntry).packed)).to.have.length(count);
      // The entry of before the reset left the queue unpacked: nothing holds it but this test.
      expect(before.packed).to.equal(false);
      expect(registry.version).to.equal(7n);
    });

    it("never packs with Infinity as the threshold", () => {
      const registry = new ToolRegistry("flat", { packSpecsAbove: Infinity });
      fill(registry, 50);
      expect(registry.snapshot().tools.some((tool) => (tool as RegistryEntry).packed)).to.equal(false);
    });
  });
});
