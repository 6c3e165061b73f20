import { execFileSync } from "node:child_process";
import { expect } from "chai";
import { ChurnMap } from "../../src/collections/churn-map.js";
import { ChurnSet } from "../../src/collections/churn-set.js";

/** A small deterministic generator, so that a failure replays. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

describe("ChurnMap", () => {
  it("answers as a Map does through 20,000 random sets and deletions (many renewals)", () => {
    const random = seededRandom(7);
    const churn = new ChurnMap<number, string>();
    const map = new Map<number, string>();
    for (let step = 0; step < 20_000; step += 1) {
      const key = Math.floor(random() * 300);
      if (random() < 0.5) {
        expect(churn.set(key, `v${step}`)).to.equal(churn);
        map.set(key, `v${step}`);
      } else {
        expect(churn.delete(key)).to.equal(map.delete(key));
      }
      expect(churn.size).to.equal(map.size);
      expect(churn.get(key)).to.equal(map.get(key));
      expect(churn.has(key)).to.equal(map.has(key));
      if (step % 997 === 0) expect([...churn]).to.deep.equal([...map]);
    }
    expect([...churn.keys()]).to.deep.equal([...map.keys()]);
    expect([...churn.values()]).to.deep.equal([...map.values()]);
    expect([...churn.entries()]).to.deep.equal([...map.entries()]);
  });

  it("keeps insertion order across renewals, as a Map does", () => {
    const churn = new ChurnMap<number, number>();
    for (let key = 0; key < 1_000; key += 1) churn.set(key, key);
    for (let key = 0; key < 1_000; key += 2) churn.delete(key);
    churn.set(0, 0);
    expect([...churn.keys()].slice(0, 3)).to.deep.equal([1, 3, 5]);
    expect([...churn.keys()].at(-1)).to.equal(0);
    expect(churn.size).to.equal(501);
  });

  it("visits in forEach what a Map visits when the callback deletes entries past the renewal count", () => {
    const churn = new ChurnMap<number, number>();
    const map = new Map<number, number>();
    for (let key = 0; key < 500; key += 1) {
      churn.set(key, key);
      map.set(key, key);
    }
    const visit = (target: Map<number, number> | ChurnMap<number, number>): number[] => {
      const seen: number[] = [];
      target.forEach((_value, key) => {
        seen.push(key);
        // Deletes this entry and the next: 500 deletions, far past the 64 that renew the map.
        target.delete(key);
        target.delete(key + 1);
      });
      return seen;
    };
    expect(visit(churn)).to.deep.equal(visit(map));
    expect(churn.size).to.equal(0);
    // Renewals resume once the iteration ended.
    for (let key = 0; key < 200; key += 1) churn.set(key, key);
    for (let key = 0; key < 200; key += 1) expect(churn.delete(key)).to.equal(true);
    expect(churn.size).to.equal(0);
  });

  it("passes itself and thisArg to forEach's callback, and empties on clear", () => {
    const churn = new ChurnMap<string, number>([
      ["a", 1],
      ["b", 2],
    ]);
    const seen: unknown[] = [];
    const thisArg = { name: "this" };
    churn.forEach(function (this: unknown, value, key, map) {
      seen.push([this, value, key, map]);
    }, thisArg);
    expect(seen).to.deep.equal([
      [thisArg, 1, "a", churn],
      [thisArg, 2, "b", churn],
    ]);
    churn.clear();
    expect([churn.size, churn.get("a"), Object.prototype.toString.call(churn)]).to.deep.equal([
      0,
      undefined,
      "[object ChurnMap]",
    ]);
  });
});

describe("ChurnSet", () => {
  it("answers as a Set does through 20,000 random adds and deletions", () => {
    const random = seededRandom(11);
    const churn = new ChurnSet<number>();
    const set = new Set<number>();
    for (let step = 0; step < 20_000; step += 1) {
      const member = Math.floor(random() * 200);
      if (random() < 0.5) {
        expect(churn.add(member)).to.equal(churn);
        set.add(member);
      } else {
        expect(churn.delete(member)).to.equal(set.delete(member));
      }
      expect([churn.size, churn.has(member)]).to.deep.equal([set.size, set.has(member)]);
    }
    expect([...churn]).to.deep.equal([...set]);
    expect([...churn.values()]).to.deep.equal([...set.values()]);
    const each: number[] = [];
    churn.forEach((member, again, itself) => {
      expect([again, itself]).to.deep.equal([member, churn]);
      each.push(member);
    });
    expect(each).to.deep.equal([...set]);
    churn.clear();
    expect(churn.size).to.equal(0);
  });
});

/**
 * Run in a child with --expose-gc: a long-lived map (in the old generation after full collections)
 * takes 20,000 objects of about 2 KB, 16 at a time, as a session takes its streams; then two young
 * collections. Prints the heap kept beyond the start, in MB. Only the test's own collections may be
 * full ones: a full collection during the loop breaks a Map's chain of tables, and V8 starts one when
 * the old generation reaches its first limit or when its memory reducer sees the process idle (on a
 * busy machine half the runs of the plain Map kept 0.6 MB instead of 28). So the child starts with a
 * larger old generation, no memory reducer and collections on its own thread: 43.8 MB for the Map,
 * 1.05 MB for the ChurnMap, run after run.
 */
const keptAfterChurn = `
const { ChurnMap } = await import(process.argv[1]);
const keep = process.argv[2] === "churn" ? new ChurnMap() : new Map();
keep.set(-1, {});
gc();
gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < 20000; i += 1) {
  keep.set(i, new Array(256).fill(i));
  keep.delete(i - 16);
}
gc({ type: "minor" });
gc({ type: "minor" });
process.stdout.write(String((process.memoryUsage().heapUsed - before) / 1e6));
`;

function keptMb(kind: "map" | "churn"): number {
  const module = new URL("../../src/collections/churn-map.js", import.meta.url).href;
  const output = execFileSync(
    process.execPath,
    [
      "--expose-gc",
      "--initial-old-space-size=256",
      "--no-memory-reducer",
      "--single-threaded-gc",
      "--input-type=module",
      "-e",
      keptAfterChurn,
      module,
      kind,
    ],
    { encoding: "utf8" },
  );
  return Number(output);
}

describe("ChurnMap and the young collections", () => {
  it("lets its former entries die young, where a long-lived Map keeps them all until a full collection", () => {
    // The Map's chain of tables is what the ChurnMap exists for: if this V8 no longer keeps them,
    // this first figure says so.
    expect(keptMb("map")).to.be.greaterThan(10);
    expect(keptMb("churn")).to.be.lessThan(4);
  });
});
