import { expect } from "chai";
import { performance } from "node:perf_hooks";
import {
  BackgroundPacking,
  batchSize,
  maxBatchesInFlight,
  quietMs,
  type Packable,
} from "../../src/registry/background-packing.js";
import type { OffThreadPacker, PackingJob } from "../../src/registry/spec-packing-worker.js";

/** Entries packed here note when, and in which order; packed elsewhere, what they adopted. */
class TestEntry implements Packable {
  packedAs: string | undefined;
  constructor(
    readonly index: number,
    readonly log: number[],
    readonly times: number[] = [],
    readonly work?: (index: number) => void,
  ) {}

  pack(): boolean {
    if (this.packedAs !== undefined) return false;
    this.packedAs = `here ${this.index}`;
    this.log.push(this.index);
    this.times.push(performance.now());
    this.work?.(this.index);
    return true;
  }

  packingJob(): PackingJob | undefined {
    return this.packedAs === undefined
      ? { dictionary: dictionary, bytes: Uint8Array.of(this.index % 256, Math.floor(this.index / 256)) }
      : undefined;
  }

  /** Times a packed form made elsewhere was handed to this entry. */
  adoptions = 0;

  adoptPacked(packed: string): void {
    this.adoptions++;
    if (this.packedAs === undefined) this.packedAs = packed;
  }
}

const dictionary = Uint8Array.of(1, 2, 3);

function entries(count: number, packed: number[], times: number[] = [], work?: (index: number) => void): TestEntry[] {
  return Array.from({ length: count }, (_, index) => new TestEntry(index, packed, times, work));
}

/** Entries numbered from `from` (those added after others a test follows). */
function entriesFrom(from: number, count: number, packed: number[]): TestEntry[] {
  return Array.from({ length: count }, (_, index) => new TestEntry(from + index, packed));
}

/**
 * A packing thread the test answers by hand: each batch waits in `batches` until answered or
 * refused; `fail` refuses every batch at it for good, as SpecPackingWorker does when its thread dies.
 */
class HandPacker implements OffThreadPacker {
  readonly batches: { jobs: readonly PackingJob[]; answer: () => void; refuse: () => void }[] = [];
  failure: Error | undefined;

  packAll(jobs: readonly PackingJob[]): Promise<string[]> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.batches.push({
        jobs,
        answer: () => resolve(jobs.map((job) => `there ${(job.bytes[0] ?? 0) + 256 * (job.bytes[1] ?? 0)}`)),
        refuse: () => reject(new Error("the thread was stopped")),
      });
    });
  }

  fail(): void {
    this.failure = new Error("the thread failed");
    for (const batch of this.batches) batch.refuse();
  }

  /** The entry indices of batch `number`. */
  indicesOf(number: number): number[] {
    return (this.batches[number]?.jobs ?? []).map((job) => (job.bytes[0] ?? 0) + 256 * (job.bytes[1] ?? 0));
  }
}

/** A packing of bound `maxPending` with a hand-answered thread, and `count` entries added to it. */
function packingWithThread(maxPending: number, count: number) {
  const packed: number[] = [];
  const thread = new HandPacker();
  const packing = new BackgroundPacking(maxPending, thread);
  const added = entries(count, packed);
  for (const entry of added) packing.add(entry);
  return { packed, thread, packing, added };
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, index) => from + index);

describe("background packing", () => {
  describe("on the event loop (no packing thread)", () => {
    it("packs the oldest entry at each add past its bound, so registrations that never pause leave at most that many waiting", () => {
      const packed: number[] = [];
      const packing = new BackgroundPacking(3, null);
      for (const entry of entries(10, packed)) packing.add(entry);
      expect(packed).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
      expect(packing.pending).to.equal(3);
      packing.drain();
      expect(packed).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(packing.pending).to.equal(0);
    });

    it("keeps its bound over many more entries than it holds, in order", () => {
      const packed: number[] = [];
      const packing = new BackgroundPacking(100, null);
      for (const entry of entries(50_000, packed)) packing.add(entry);
      expect(packing.pending).to.equal(100);
      // The packed head is dropped as it goes: the queue never holds the 50,000.
      expect(packing.slots).to.be.at.most(2 * (1024 + 100));
      expect(packed).to.have.length(49_900);
      expect(packed.every((index, position) => index === position)).to.equal(true);
      packing.drain();
      expect(packed).to.have.length(50_000);
    });

    // What this test holds was so before the bound on waiting entries as well.
    it("starts once registrations paused, and stops at the end of a slice when one came meanwhile", async () => {
      const packed: number[] = [];
      const times: number[] = [];
      const packing = new BackgroundPacking(10_000, null);
      let addedAt = 0;
      // Each pack takes a millisecond, so a slice (4 ms) packs a few of the 40; the first pack adds an
      // entry right after its slice, before the next slice's turn.
      const added = entries(40, packed, times, (index) => {
        const end = performance.now() + 1;
        while (performance.now() < end);
        if (index === 0) {
          setImmediate(() => {
            addedAt = performance.now();
            packing.add(new TestEntry(-1, packed, times));
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
      expect([...packed].sort((a, b) => a - b)).to.deep.equal([-1, ...range(0, 40)]);
    });
  });

  it("packs none at once while refilled (a registry reloaded wholesale)", () => {
    const packed: number[] = [];
    const thread = new HandPacker();
    const packing = new BackgroundPacking(3, thread);
    packing.refill(() => {
      for (const entry of entries(10, packed)) packing.add(entry);
    });
    expect(packed).to.deep.equal([]);
    expect(thread.batches).to.have.length(0);
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

  describe("with a packing thread", () => {
    it("sends the oldest in batches past its bound, and each entry takes its own packed form when answered", async () => {
      // 1,001 waiting send the first batch; a batch more and 1,001 wait again, which sends the next.
      const { packed, thread, packing, added } = packingWithThread(1000, 1001 + batchSize + 10);
      expect(thread.batches.map((_, number) => thread.indicesOf(number))).to.deep.equal([
        range(0, batchSize),
        range(batchSize, 2 * batchSize),
      ]);
      expect(packing.pending).to.equal(added.length - 2 * batchSize);
      expect(packing.inFlight).to.equal(2 * batchSize);
      expect(packed, "nothing packed on the event loop").to.deep.equal([]);
      for (const batch of thread.batches) batch.answer();
      await packing.settled();
      expect(packing.inFlight).to.equal(0);
      expect(added.slice(0, 2 * batchSize).every((entry) => entry.packedAs === `there ${entry.index}`)).to.equal(true);
      expect(added.slice(2 * batchSize).every((entry) => entry.packedAs === undefined)).to.equal(true);
      packing.clear();
    });

    it("packs on the event loop past its bound while the thread holds its most batches", () => {
      const { packed, thread, packing } = packingWithThread(10, 10 + maxBatchesInFlight * 11 + 5);
      // Each batch took the 11 waiting then (the bound and one); the thread's last answer is still due.
      expect(thread.batches).to.have.length(maxBatchesInFlight);
      expect(packing.inFlight).to.equal(maxBatchesInFlight * 11);
      expect(packed).to.deep.equal(range(maxBatchesInFlight * 11, maxBatchesInFlight * 11 + 5));
      expect(packing.pending).to.equal(10);
      packing.clear();
    });

    it("sends batches once registrations paused, the next at each answer while they stay paused, and stops when one comes", async () => {
      const packed: number[] = [];
      const thread = new HandPacker();
      const packing = new BackgroundPacking(100_000, thread);
      const count = (maxBatchesInFlight + 2) * batchSize;
      const added = entries(count, packed);
      const firstAddAt = performance.now();
      for (const entry of added) packing.add(entry);
      expect(thread.batches).to.have.length(0);
      await until(() => thread.batches.length === maxBatchesInFlight);
      expect(performance.now()).to.be.at.least(firstAddAt + quietMs - 1);
      thread.batches[0]?.answer();
      await until(() => thread.batches.length === maxBatchesInFlight + 1);
      expect(thread.indicesOf(maxBatchesInFlight)).to.deep.equal(
        range(maxBatchesInFlight * batchSize, (maxBatchesInFlight + 1) * batchSize),
      );
      // A registration now: the next answer sends nothing until the next pause.
      const late = new TestEntry(count, packed);
      const lateAt = performance.now();
      packing.add(late);
      thread.batches[1]?.answer();
      await until(() => thread.batches.length === maxBatchesInFlight + 2);
      expect(performance.now()).to.be.at.least(lateAt + quietMs - 1);
      await until(() => {
        for (const batch of thread.batches) batch.answer();
        return late.packedAs !== undefined && added.every((entry) => entry.packedAs !== undefined);
      });
      expect(late.packedAs).to.equal(`there ${count}`);
      expect(packing.pending).to.equal(0);
      expect(packed, "nothing packed on the event loop").to.deep.equal([]);
    });

    it("drains the entries at the thread too; they count against its batches until it answers, and its answer changes none", async () => {
      const { packed, thread, packing, added } = packingWithThread(5, 20);
      // Batches of 6 went at the 6th, 12th and 18th entries; two wait here.
      expect(packing.inFlight).to.equal(18);
      expect(packing.pending).to.equal(2);
      packing.drain();
      expect([...packed].sort((a, b) => a - b)).to.deep.equal(range(0, 20));
      expect(packing.inFlight).to.equal(18);
      let settled = false;
      const whenSettled = packing.settled().then(() => (settled = true));
      for (const entry of entriesFrom(100, 6, packed)) packing.add(entry);
      // Three batches at the thread, still: the fourth goes, and nothing more.
      expect(thread.batches).to.have.length(maxBatchesInFlight);
      await new Promise((resolve) => setImmediate(resolve));
      expect(settled).to.equal(false);
      for (const batch of thread.batches) batch.answer();
      await whenSettled;
      expect(packing.inFlight).to.equal(0);
      expect(added.every((entry) => entry.packedAs === `here ${entry.index}` && entry.adoptions === 0)).to.equal(true);
      packing.clear();
    });

    it("lets go of the batches at the thread when cleared: their answer changes none, and they count until it comes", async () => {
      const { packed, thread, packing, added: dropped } = packingWithThread(3, 4 * maxBatchesInFlight);
      expect(thread.batches).to.have.length(maxBatchesInFlight);
      packing.clear();
      expect(packing.pending).to.equal(0);
      // The thread is still busy with every batch: entries past the bound are packed here.
      const added = entriesFrom(100, 5, packed);
      for (const entry of added) packing.add(entry);
      expect(thread.batches).to.have.length(maxBatchesInFlight);
      expect(packed).to.deep.equal([100, 101]);
      for (const batch of thread.batches) batch.answer();
      await packing.settled();
      expect(dropped.every((entry) => entry.packedAs === undefined && entry.adoptions === 0)).to.equal(true);
      packing.clear();
    });

    it("packs on the event loop from the thread's failure on, every refused batch included, oldest first", async () => {
      const { packed, thread, packing } = packingWithThread(3, 3 + 3 * 4);
      expect(thread.batches.map((_, number) => thread.indicesOf(number))).to.deep.equal([
        range(0, 4),
        range(4, 8),
        range(8, 12),
      ]);
      thread.fail();
      await packing.settled();
      // The refused batches wait again, in their place, before the three that never went.
      expect(packing.pending).to.equal(15);
      // The next add brings the queue back to its bound here, oldest first.
      packing.add(new TestEntry(15, packed));
      expect(packed).to.deep.equal(range(0, 13));
      expect(packing.pending).to.equal(3);
      expect(thread.batches).to.have.length(3);
      await until(() => packed.length === 16);
      expect(packed).to.deep.equal(range(0, 16));
    });

    it("sends a batch the thread refused without failing (it was stopped) again at the next pause", async () => {
      const { packed, thread, packing, added } = packingWithThread(3, 4);
      thread.batches[0]?.refuse();
      await packing.settled();
      expect(packing.pending).to.equal(4);
      await until(() => thread.batches.length === 2);
      expect(thread.indicesOf(1)).to.deep.equal(range(0, 4));
      thread.batches[1]?.answer();
      await packing.settled();
      expect(added.map((entry) => entry.packedAs)).to.deep.equal(range(0, 4).map((index) => `there ${index}`));
      expect(packed).to.deep.equal([]);
    });
  });
});
