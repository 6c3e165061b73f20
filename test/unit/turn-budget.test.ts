import { expect } from "chai";
import { TurnBudget } from "../../src/async/turn-budget.js";

/** Resolves after the event loop's check phase: one turn later. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("TurnBudget", () => {
  let clockMs = 0;
  const now = (): number => clockMs;
  beforeEach(() => {
    clockMs = 0;
  });

  it("lets work go on at once while the turn has budget", () => {
    const budget = new TurnBudget(10, now);
    for (let step = 0; step < 5; step += 1) {
      expect(budget.pause()).to.equal(undefined);
      clockMs += 1;
    }
    expect(budget.waiting).to.equal(0);
  });

  it("holds work past the budget for later turns, resuming it in order within each turn's budget", async () => {
    const budget = new TurnBudget(10, now);
    expect(budget.pause()).to.equal(undefined);
    clockMs += 10;
    const resumed: number[] = [];
    const held = [1, 2, 3].map((n) =>
      (budget.pause() as Promise<void>).then(() => {
        resumed.push(n);
        // Each resumed piece of work costs 6 ms: two fit in a turn.
        clockMs += 6;
      }),
    );
    expect(budget.waiting).to.equal(3);
    expect(resumed).to.deep.equal([]);
    await nextTurn();
    await Promise.resolve();
    expect(resumed).to.deep.equal([1, 2]);
    await Promise.all(held);
    expect(resumed).to.deep.equal([1, 2, 3]);
    expect(budget.waiting).to.equal(0);
  });

  it("never lets new work pass work that waits", async () => {
    const budget = new TurnBudget(10, now);
    expect(budget.pause()).to.equal(undefined);
    clockMs += 20;
    const order: string[] = [];
    const first = (budget.pause() as Promise<void>).then(() => order.push("waiting"));
    clockMs += 100;
    const second = budget.pause();
    expect(second, "something waits: the newcomer waits too").to.be.instanceOf(Promise);
    await Promise.all([first, (second as Promise<void>).then(() => order.push("newcomer"))]);
    expect(order).to.deep.equal(["waiting", "newcomer"]);
  });
});
