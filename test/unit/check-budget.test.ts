import { expect } from "chai";
import {
  checkBudget,
  CheckBudgetExceededError,
  checkBudgetUnits,
  checkTimeLimitMs,
  spendCheckBudget,
  withCheckBudget,
} from "../../src/json/check-budget.js";
import { countText } from "../../src/json/count-text.js";

function stopped(check: () => unknown): CheckBudgetExceededError {
  try {
    check();
  } catch (error) {
    expect(error).to.be.instanceOf(CheckBudgetExceededError);
    return error as CheckBudgetExceededError;
  }
  throw new Error("expected a CheckBudgetExceededError");
}

describe("withCheckBudget()", () => {
  it("allows 100,000 units and 250 ms, plus 4 units and 1 µs per byte of the value", () => {
    expect(checkBudgetUnits(0)).to.equal(100_000);
    expect(checkBudgetUnits(1000)).to.equal(104_000);
    expect(checkTimeLimitMs(0)).to.equal(250);
    expect(checkTimeLimitMs(4_000_000)).to.equal(4250);
  });

  it("runs a check that spends its units exactly, and stops one that spends one more, saying what it had", () => {
    const spend = (units: number) => () => {
      for (let spent = 0; spent < units; spent += 7) spendCheckBudget(Math.min(7, units - spent));
      return "done";
    };
    expect(withCheckBudget(250, spend(101_000))).to.equal("done");
    expect(stopped(() => withCheckBudget(250, spend(101_001))).message).to.equal(
      "the check takes more work than is allowed for 250 bytes (101,000 units, about one per subschema applied to one value, within 251 ms): simplify the schema, or make the value smaller",
    );
  });

  it("stops a check whose units come slowly at its time limit, measured from its first slice of units", () => {
    const started = performance.now();
    const error = stopped(() =>
      withCheckBudget(
        0,
        () => {
          for (;;) spendCheckBudget(1);
        },
        { units: Number.MAX_SAFE_INTEGER },
      ),
    );
    // The limit is of time passed (a busy machine lends the check less of it): at least the 250 ms
    // allowed, and not much more than a slice of units past it.
    const elapsedMs = performance.now() - started;
    expect(error.reason).to.equal("work");
    expect(elapsedMs).to.be.within(250, 5000);
  });

  it("gives each check a budget of its own, restores the outer one after, and charges nothing outside a check", () => {
    withCheckBudget(0, () => {
      spendCheckBudget(50_000);
      expect(stopped(() => withCheckBudget(0, () => spendCheckBudget(100_001))).reason).to.equal("work");
      spendCheckBudget(50_000);
    });
    expect(checkBudget.left).to.equal(Number.POSITIVE_INFINITY);
    spendCheckBudget(Number.MAX_SAFE_INTEGER);
  });

  it("stops a check that holds too many errors, with its own message", () => {
    expect(stopped(() => withCheckBudget(0, () => checkBudget.crowded())).message).to.equal(
      "the check collects more than 10,000 errors at once (one for each alternative that fails): simplify the schema, or make the value smaller",
    );
  });
});

describe("countText()", () => {
  it("writes counts with commas between thousands", () => {
    expect([0, 7, 999, 1000, 16_777_216, 17_179_869_182, 2.6].map(countText)).to.deep.equal([
      "0",
      "7",
      "999",
      "1,000",
      "16,777,216",
      "17,179,869,182",
      "3",
    ]);
  });
});
