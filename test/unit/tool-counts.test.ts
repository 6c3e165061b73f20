import { expect } from "chai";
import { ToolCounts } from "../../src/executions/tool-counts.js";

describe("ToolCounts", () => {
  it("counts up and down per tool, never below zero, and keeps a name at zero", () => {
    const counts = new ToolCounts();
    counts.increment("demo.a");
    counts.increment("demo.a");
    counts.increment("demo.b");
    counts.decrement("demo.a");
    counts.decrement("demo.b");
    counts.decrement("demo.b");
    expect([counts.get("demo.a"), counts.get("demo.b"), counts.get("demo.c")]).to.deep.equal([1, 0, 0]);
    expect(counts.namesKept).to.equal(2);
  });

  it("sweeps the zeros once the names kept pass the bound, and keeps the counts that are not zero", () => {
    const counts = new ToolCounts(8);
    for (let index = 0; index < 4; index += 1) counts.increment(`busy.${index}`);
    for (let index = 0; index < 5; index += 1) {
      counts.increment(`idle.${index}`);
      counts.decrement(`idle.${index}`);
    }
    // 4 busy and 5 idle names: past 8, so the last decrement swept the zeros.
    expect(counts.namesKept).to.equal(4);
    expect([0, 1, 2, 3].map((index) => counts.get(`busy.${index}`))).to.deep.equal([1, 1, 1, 1]);
  });

  it("moves the bound past twice the names left, so that many busy tools are not swept on every run", () => {
    const counts = new ToolCounts(4);
    for (let index = 0; index < 10; index += 1) counts.increment(`busy.${index}`);
    counts.increment("idle");
    counts.decrement("idle");
    // 11 names kept, past 4: swept to the 10 busy ones, and the bound is now 20.
    expect(counts.namesKept).to.equal(10);
    for (let index = 0; index < 9; index += 1) {
      counts.increment(`idle.${index}`);
      counts.decrement(`idle.${index}`);
    }
    expect(counts.namesKept).to.equal(19);
  });
});
