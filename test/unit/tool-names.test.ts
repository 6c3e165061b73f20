import { expect } from "chai";
import { checkToolName, isToolName, maxToolNameLength } from "../../src/registry/names.js";

describe("tool names", () => {
  const valid = ["fs.read_file", "builtin.noop", "a.b", "a1.b-2.c_3", `a.${"b".repeat(64)}`, "a.b.c.d.e.f.g.h"];
  const invalid = [
    "",
    "noop",
    "Fs.read",
    "fs..read",
    "fs.read.",
    ".fs.read",
    "fs.réad",
    "fs.read file",
    "__proto__.x",
    `a.${"b".repeat(65)}`,
    "a.b.c.d.e.f.g.h.i",
    `${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(10)}`,
  ];

  it("tells valid names from invalid ones, the same way every time", () => {
    for (let pass = 0; pass < 3; pass++) {
      for (const name of valid) expect(isToolName(name), name).to.equal(true);
      for (const name of invalid) expect(isToolName(name), name).to.equal(false);
    }
    expect(invalid.at(-1)?.length).to.be.greaterThan(maxToolNameLength);
  });

  it("keeps its answers past the names it remembers (thousands of distinct names)", () => {
    for (let index = 0; index < 5000; index++) {
      expect(isToolName(`ns.tool_${index}`)).to.equal(true);
      expect(isToolName(`ns.Tool_${index}`)).to.equal(false);
    }
    for (const name of valid) expect(isToolName(name), name).to.equal(true);
    for (const name of invalid) expect(isToolName(name), name).to.equal(false);
  });

  it("explains an invalid name, and accepts a valid one, after either was seen", () => {
    expect(checkToolName("fs.read_file")).to.equal(undefined);
    expect(checkToolName("Fs.read")?.details).to.match(/^tool name "Fs\.read" is invalid: use 2 to 8 segments/);
    expect(checkToolName("")?.details).to.match(/^tool name is empty/);
  });
});
