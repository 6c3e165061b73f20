import { expect } from "chai";
import { allowedNameRanges } from "../../src/auth/allowed-name-ranges.js";
import { actions, isAllowed, type Action, type Grant, type Identity } from "../../src/auth/permissions.js";
import { isInRange } from "../../src/registry/name-ranges.js";
import { randomInts } from "../support/random-ints.js";

// Names and patterns that are prefixes of one another, neighbours in order, or equal.
const names = ["fs", "fs.read", "fs.read.x", "fs.reads", "fs.write", "fsx.read", "fr.z", "ft.a", "net.get", "a.b"];
const patterns = ["*", "fs.*", "fs.read", "fs.read.*", "fsx.*", "fs", "net.get", "a.*", "zz.*", ".*"];

describe("allowedNameRanges()", () => {
  it("holds exactly the names isAllowed accepts for the action (seeded random identities)", () => {
    const next = randomInts(3);
    const pick = <T>(items: readonly T[]): T => items[next(items.length)] as T;
    for (let round = 0; round < 1000; round++) {
      const grants: Grant[] = Array.from({ length: next(4) }, () => ({
        actions: Array.from({ length: 1 + next(2) }, () => pick(actions)),
        patterns: Array.from({ length: next(4) }, () => pick(patterns)),
      }));
      const identity: Identity = { name: "random", grants };
      const action: Action = pick(["read", "execute", "register"] as const);
      const ranges = allowedNameRanges(identity, action);
      for (const name of names) {
        const inRanges = ranges.some((range) => isInRange(range, name));
        expect(inRanges, `${name} for ${action} with ${JSON.stringify(grants)}`).to.equal(
          isAllowed(identity, action, name),
        );
      }
    }
  });

  it("is empty for an identity with no grant of the action, and everything for admin on *", () => {
    const registrar: Identity = { name: "r", grants: [{ actions: ["register"], patterns: ["*"] }] };
    expect(allowedNameRanges(registrar, "read")).to.deep.equal([]);
    const admin: Identity = { name: "a", grants: [{ actions: ["admin"], patterns: ["*"] }] };
    expect(allowedNameRanges(admin, "read")).to.deep.equal([{ from: "", to: undefined }]);
  });
});
