import { expect } from "chai";
import { performance } from "node:perf_hooks";
import { BackgroundPacking, quietMs, type Packable } from "../../src/registry/background-packing.js";

/** Entries that note when, and in which order, they were packed. */
function entries(count: number, packed: number[], times: number[] = [], work?: (index: number) => void): Packable[] {
  return Array.from({ length: count }, (_, index) => ({
    pack: () => {
      packed.push(index);
      times.push(performance.now());
      work?.(index);
      return true;
    },
  }));
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe("background packing", () => {
  it("packs the oldest entry at each add past its bound, so registrations that never pause leave at most that many waiting", () => {
    const packed: number[] = [];
    const packing = new BackgroundPacking(3);
    for (const entry of entries(10, packed)) packing.add(entry);
    expect(packed).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
    expect(packing.pending).to.equal(3);
    packing.drain();
    expect(packed).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(packing.pending).to.equal(0);
  });

  it("keeps its bound over many more entries than it holds, in order", () => {
    const packed: number[] = [];
    const packing = new BackgroundPacking(100);
    for (const entry of entries(50_000, packed)) packing.add(entry);
    expect(packing.pending).to.equal(100);
    // The packed head is dropped as it goes: the queue never holds the 50,000.
    expect(packing.slots).to.be.at.most(2 * (1024 + 100));
    expect(packed).to.have.length(49_900);
    expect(packed.every((index, position) => index === position)).to.equal(true);
    packing.drain();
    expect(packed).to.have.length(50_000);
  });

  it("packs none at once while refilled (a registry reloaded wholesale)", () => {
    const packed: number[] = [];
    const packing = new BackgroundPacking(3);
    packing.refill(() => {
      for (const entry of entries(10, packed)) packing.add(entry);
    });
    expect(packed).to.deep.equal([]);
    expect(packing.pending).to.equal(10);
    packing.clear();
    expect(packing.pending).to.equal(0);
    packing.drain();
    expect(packed).to.deep.equal([]);
  });

  it("refuses a bound that is not a number of entries", () => {
    expect(() => new BackgroundPacking(Number.NaN)).to.throw(RangeError, "maxPending is NaN");
    expect(() => new BackgroundPacking(-1)).to.throw(RangeError, "maxPending is -1");
    expect(() => new BackgroundPacking(0)).to.throw(RangeError, "maxPending is 0: it must be 1 or more");
  });

  // What this test holds was so before the bound on waiting entries as well.
  it("starts once registrations paused, and stops at the end of a slice when one came meanwhile", async () => {
    const packed: number[] = [];
    const times: number[] = [];
    const packing = new BackgroundPacking(10_000);
    let addedAt = 0;
    // Each pack takes a millisecond, so a slice (4 ms) packs a few of the 40; the first pack adds an
    // entry right after its slice, before the next slice's turn.
    const added = entries(40, packed, times, (index) => {
      const end = performance.now() + 1;
      while (performance.now() < end);
      if (index === 0) {
        setImmediate(() => {
          addedAt = performance.now();
          packing.add({ pack: () => (times.push(performance.now()), packed.push(-1), true) });
        });
      }
    });
    const firstAddAt = performance.now();
    for (const entry of added) packing.add(entry);
    await until(() => packing.pending === 0 && packed.length === 41);
    expect(times[0]).to.be.at.least(firstAddAt + quietMs - 1);
    const firstAfter = times.findIndex((time) => time > addedAt);
    expect(firstAfter).to.be.greaterThan(0);
    expect(firstAfter).to.be.lessThan(40);
    // Nothing was packed within the pause after the entry that came during the packing.
    expect(times[firstAfter]).to.be.at.least(addedAt + quietMs - 1);
    expect([...packed].sort((a, b) => a - b)).to.deep.equal([-1, ...Array.from({ length: 40 }, (_, index) => index)]);
  });
});
