import { expect } from "chai";
import { SortedNames } from "../../src/registry/sorted-names.js";
import { randomInts } from "../support/random-ints.js";

describe("SortedNames", () => {
  it("holds each name once, in code-unit order, across many chunks", () => {
    const names = new SortedNames();
    const expected = new Set<string>();
    const next = randomInts(7);
    for (let step = 0; step < 5000; step++) {
      const name = `n${next(3000)}`;
      if (next(4) === 0) {
        names.delete(name);
        expected.delete(name);
      } else {
        names.add(name);
        expected.add(name);
      }
    }
    const sorted = [...expected].sort();
    expect(sorted.length).to.be.above(1024, "the names span several chunks");
    expect(names.size).to.equal(sorted.length);
    expect([...names.from("")]).to.deep.equal(sorted);
  });

  it("lists from any name, present or not, to the end", () => {
    const names = new SortedNames();
    for (let index = 0; index < 2000; index++) names.add(`t${String(index).padStart(4, "0")}`);
    expect([...names.from("t1999")]).to.deep.equal(["t1999"]);
    expect([...names.from("t0511\u0000")].slice(0, 2)).to.deep.equal(["t0512", "t0513"]);
    expect([...names.from("t1")].length).to.equal(1000);
    expect([...names.from("u")]).to.deep.equal([]);
    expect([...names.from("a")].length).to.equal(2000);
  });

  it("ignores a duplicate add and the removal of an absent name, and empties on clear", () => {
    const names = new SortedNames();
    names.add("b");
    names.add("a");
    names.add("b");
    names.delete("c");
    expect([...names.from("")]).to.deep.equal(["a", "b"]);
    names.delete("a");
    names.delete("b");
    expect(names.size).to.equal(0);
    expect([...names.from("")]).to.deep.equal([]);
    names.add("x");
    names.clear();
    expect(names.size).to.equal(0);
    expect([...names.from("")]).to.deep.equal([]);
  });
});
