import { expect } from "chai";
import {
  firstRangeReaching,
  intersectRanges,
  isInRange,
  normalizeRanges,
  rangeOfName,
  rangeOfPrefix,
  type NameRange,
} from "../../src/registry/name-ranges.js";
import { SortedNames } from "../../src/registry/sorted-names.js";
import { randomInts } from "../support/random-ints.js";

const inAny = (ranges: readonly NameRange[], name: string): boolean => ranges.some((range) => isInRange(range, name));

/** Short names over a small alphabet, so that prefixes, equal names and neighbours are frequent. */
function randomName(next: (bound: number) => number): string {
  const alphabet = ["a", "b", ".", "c"];
  let name = "";
  for (let length = next(5); length > 0; length--) name += alphabet[next(alphabet.length)] as string;
  return name;
}

function randomRange(next: (bound: number) => number): NameRange {
  const name = randomName(next);
  return next(2) === 0 ? rangeOfPrefix(name) : rangeOfName(name);
}

describe("name ranges", () => {
  it("a prefix's range holds exactly the names starting with it, up to a last code unit of 0xFFFF", () => {
    expect(rangeOfPrefix("fs.")).to.deep.equal({ from: "fs.", to: "fs/" });
    expect(rangeOfPrefix("a\uffff")).to.deep.equal({ from: "a\uffff", to: "b" });
    expect(rangeOfPrefix("")).to.deep.equal({ from: "", to: undefined });
    expect(rangeOfPrefix("\uffff")).to.deep.equal({ from: "\uffff", to: undefined });
    const range = rangeOfPrefix("fs.");
    expect(["fs.", "fs.read", "fs.\uffff"].every((name) => isInRange(range, name))).to.equal(true);
    expect(["fs", "fs/", "fsx.read", "fr.z"].some((name) => isInRange(range, name))).to.equal(false);
  });

  it("a name's range holds that name alone", () => {
    const range = rangeOfName("fs.read");
    expect(isInRange(range, "fs.read")).to.equal(true);
    expect(["fs.rea", "fs.read.x", "fs.read\u0000", "fs.reae"].some((name) => isInRange(range, name))).to.equal(false);
  });

  it("normalizes and intersects to the same names as the ranges given, sorted, apart, none empty (seeded random cases)", () => {
    const next = randomInts(11);
    for (let round = 0; round < 500; round++) {
      const a = Array.from({ length: next(5) }, () => randomRange(next));
      const b = Array.from({ length: next(5) }, () => randomRange(next));
      const normalA = normalizeRanges(a);
      const normalB = normalizeRanges(b);
      const both = intersectRanges(normalA, normalB);
      for (const ranges of [normalA, normalB, both]) {
        ranges.forEach((range, index) => {
          expect(range.to === undefined || range.from < range.to, "not empty").to.equal(true);
          const following = ranges[index + 1];
          if (following) expect(range.to !== undefined && range.to < following.from, "apart, in order").to.equal(true);
        });
      }
      for (let probe = 0; probe < 40; probe++) {
        const name = randomName(next);
        expect(inAny(normalA, name), `${name} in ${JSON.stringify(a)}`).to.equal(inAny(a, name));
        expect(inAny(both, name), `${name} in both`).to.equal(inAny(a, name) && inAny(b, name));
        const first = firstRangeReaching(normalA, name);
        const expected = normalA.findIndex((range) => range.to === undefined || range.to > name);
        expect(first).to.equal(expected === -1 ? normalA.length : expected);
      }
    }
  });
});

describe("SortedNames", () => {
  describe("within()", () => {
    it("yields, in order, exactly the names in the ranges from the start on (seeded random cases)", () => {
      const next = randomInts(5);
      for (let round = 0; round < 200; round++) {
        const names = new SortedNames();
        const all = new Set<string>();
        for (let count = next(60); count > 0; count--) {
          const name = randomName(next);
          names.add(name);
          all.add(name);
        }
        const ranges = normalizeRanges(Array.from({ length: next(4) }, () => randomRange(next)));
        const start = randomName(next);
        const expected = [...all].filter((name) => name >= start && inAny(ranges, name)).sort();
        expect([...names.within(ranges, start)]).to.deep.equal(expected);
      }
    });
  });
});
