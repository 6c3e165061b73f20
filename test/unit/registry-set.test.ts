import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { thrownBy } from "../support/expect-error.js";
import { RegistrySet } from "../../src/registry/registry-set.js";

const spec = (name: string) => ({ spec: create(ToolSpecSchema, { name }) });

/** Creates registry `name` with one tool, removes the tool, and returns the registry's last version. */
function createAndEmpty(set: RegistrySet, name: string): bigint {
  const registry = set.getOrCreate(name);
  registry.register(spec("ns.tool"));
  registry.remove("ns.tool");
  return registry.version;
}

describe("RegistrySet", () => {
  describe("getOrCreate()", () => {
    it("creates new registries after 63 were created and emptied, keeping the default", () => {
      const set = new RegistrySet();
      set.default.register(spec("keep.me"));
      for (let index = 0; index < 63; index++) createAndEmpty(set, `r${index}`);
      for (let index = 0; index < 63; index++) set.getOrCreate(`fresh${index}`).register(spec("ns.tool"));
      expect(set.all()).to.have.length(64);
      expect(set.default.get("keep.me")).to.not.equal(undefined);
    });

    it("answers RESOURCE_EXHAUSTED when every registry holds tools or is watched", () => {
      const set = new RegistrySet({ maxRegistries: 3 });
      set.getOrCreate("full").register(spec("ns.tool"));
      createAndEmpty(set, "watched");
      const unsubscribe = set.get("watched").subscribe(() => undefined);
      const error = thrownBy(() => set.getOrCreate("another"));
      expect([error.code, error.details]).to.deep.equal([
        "RESOURCE_EXHAUSTED",
        'registry "another" cannot be created: the server holds its maximum of 3 registries and none is empty and unwatched; remove the tools of one first',
      ]);
      unsubscribe();
      expect(set.getOrCreate("another").name).to.equal("another");
      expect(set.find("watched")).to.equal(undefined);
    });

    it("continues the versions of a reclaimed registry when its name is created again", () => {
      const set = new RegistrySet({ maxRegistries: 2 });
      const last = createAndEmpty(set, "a");
      expect(last).to.equal(2n);
      createAndEmpty(set, "b");
      const again = set.getOrCreate("a");
      expect(again.version).to.equal(2n);
      expect(again.register(spec("ns.other")).spec.version).to.equal(3n);
      expect(again.changesSince(2n)?.map((change) => change.version)).to.deep.equal([3n]);
      expect(again.changesSince(1n)).to.equal(undefined);
    });

    it("keeps versions growing for a name whose tombstone was forgotten", () => {
      const set = new RegistrySet({ maxRegistries: 2, maxTombstones: 1 });
      const registry = set.getOrCreate("a");
      for (let index = 0; index < 5; index++) registry.register(spec(`ns.t${index}`));
      for (let index = 0; index < 5; index++) registry.remove(`ns.t${index}`);
      expect(registry.version).to.equal(10n);
      createAndEmpty(set, "b"); // reclaims "a"
      createAndEmpty(set, "c"); // reclaims "b"; the single tombstone now remembers "b", "a" is forgotten
      expect(set.getOrCreate("a").version >= 10n, "the version of a re-created registry").to.equal(true);
    });
  });

  describe("getForWatch()", () => {
    it("brings back a reclaimed registry empty at its last version", () => {
      const set = new RegistrySet({ maxRegistries: 2 });
      createAndEmpty(set, "a");
      createAndEmpty(set, "b");
      expect(set.find("a")).to.equal(undefined);
      const back = set.getForWatch("a");
      expect([back.size, back.version]).to.deep.equal([0, 2n]);
    });

    it("answers NOT_FOUND for a name that never held a registry", () => {
      const error = thrownBy(() => new RegistrySet().getForWatch("never"));
      expect([error.code, error.details]).to.deep.equal([
        "NOT_FOUND",
        'registry "never" does not exist: register a tool in it first, or omit the name for the default registry',
      ]);
    });
  });
});
