import { expect } from "chai";
import { FifoIndex } from "../../src/collections/fifo-index.js";
import { ExecutionStore } from "../../src/executions/execution-store.js";

/** A small deterministic generator, so that a failure replays. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

interface Item {
  readonly id: string;
  readonly serial: number;
}

describe("FifoIndex", () => {
  for (const chunkSize of [1, 3, 64]) {
    it(`answers as an array searched from its end does, through 20,000 random steps (chunks of ${chunkSize})`, () => {
      const random = seededRandom(chunkSize);
      const index = new FifoIndex<Item>(chunkSize);
      // The model: items oldest first; ids repeat (a run taken over is finished again under its id).
      const model: Item[] = [];
      for (let serial = 0; serial < 20_000; serial += 1) {
        const roll = random();
        if (roll < 0.55) {
          const item = { id: `id-${Math.floor(random() * 500)}`, serial };
          index.push(item);
          model.push(item);
        } else if (roll < 0.95) {
          expect(index.shift()).to.equal(model.shift());
        } else {
          while (model.length > 0) expect(index.shift()).to.equal(model.shift());
          expect(index.shift()).to.equal(undefined);
        }
        expect(index.size).to.equal(model.length);
        expect(index.oldest()).to.equal(model[0]);
        const id = `id-${Math.floor(random() * 500)}`;
        expect(index.get(id)).to.equal(model.findLast((item) => item.id === id));
        if (serial % 499 === 0) expect(index.values()).to.deep.equal(model);
      }
    });
  }

  it("releases a removed item at once, keeping only its id until its chunk goes", () => {
    const index = new FifoIndex<Item>(4);
    const items = Array.from({ length: 6 }, (_, serial) => ({ id: `run-${serial}`, serial }));
    for (const item of items) index.push(item);
    expect(index.shift()).to.equal(items[0]);
    // Still in the oldest chunk's table of positions, but its slot is empty: not found.
    expect(index.get("run-0")).to.equal(undefined);
    expect(index.get("run-1")).to.equal(items[1]);
    expect(index.values()).to.deep.equal(items.slice(1));
  });

  it("refuses a chunk size that is not a positive integer", () => {
    expect(() => new FifoIndex<Item>(0)).to.throw(RangeError, "chunk size 0");
    expect(() => new FifoIndex<Item>(1.5)).to.throw(RangeError, "chunk size 1.5");
  });
});

describe("ExecutionStore's index of finished runs", () => {
  it("is made for any count bound an embedder passes: none, one, infinite, or not a number", () => {
    for (const maxRetained of [0, 1, 10_000, 10_000_000, Number.POSITIVE_INFINITY, Number.NaN]) {
      const store = new ExecutionStore({ maxRetained });
      expect(store.size, String(maxRetained)).to.equal(0);
      expect(store.get("unknown"), String(maxRetained)).to.equal(undefined);
    }
  });
});
