import { expect } from "chai";
import { sharedCapabilities } from "../../src/registry/shared-capabilities.js";

describe("sharedCapabilities()", () => {
  it("returns one frozen message per combination of flags", () => {
    const first = sharedCapabilities({ readOnly: true, idempotent: true });
    expect(sharedCapabilities({ idempotent: true, readOnly: true, writes: false })).to.equal(first);
    expect(sharedCapabilities({ readOnly: true })).to.not.equal(first);
    expect(Object.isFrozen(first)).to.equal(true);
    expect(first).to.include({ readOnly: true, idempotent: true, writes: false, unsafe: false });
  });

  it("gives all flags false for absent capabilities", () => {
    const none = sharedCapabilities(undefined);
    expect(none).to.equal(sharedCapabilities({}));
    expect(Object.values(none).filter((value) => value === true)).to.deep.equal([]);
    expect(none.$typeName).to.equal("toolruntime.v1.ToolCapability");
  });
});
