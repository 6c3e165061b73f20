import { expect } from "chai";
import { ToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import { StorePressure } from "../../src/stores/postgres/store-pressure.js";

/** A clock the test moves by hand. */
function manualClock() {
  let nowMs = 1000;
  return { now: () => nowMs, elapse: (ms: number) => void (nowMs += ms) };
}

describe("StorePressure", () => {
  it("lets a burst in whole: the front of the queue waited little", () => {
    const clock = manualClock();
    const pressure = new StorePressure({ connections: 2, targetWaitMs: 20, windowMs: 30, now: clock.now });
    const first = pressure.waiting();
    pressure.acquired(first);
    const burst = Array.from({ length: 200 }, () => pressure.waiting());
    pressure.acquired(burst.shift() as number);
    clock.elapse(40);
    pressure.acquired(burst.shift() as number);
    expect(pressure.standing).to.equal(false);
    expect(() => pressure.checkRoomForNewRun("demo.tool")).to.not.throw();
  });

  it("refuses new runs with RESOURCE_EXHAUSTED and a retry delay once every wait of a window was longer than the target", () => {
    const clock = manualClock();
    const pressure = new StorePressure({ connections: 2, targetWaitMs: 20, windowMs: 30, now: clock.now });
    const queued = Array.from({ length: 10 }, () => pressure.waiting());
    clock.elapse(40);
    pressure.acquired(queued.shift() as number);
    expect(pressure.standing).to.equal(true);
    let refused: unknown;
    try {
      pressure.checkRoomForNewRun("demo.tool");
    } catch (error) {
      refused = error;
    }
    expect(refused).to.be.instanceOf(ToolRuntimeError);
    const error = refused as ToolRuntimeError;
    expect(error.code).to.equal("RESOURCE_EXHAUSTED");
    expect(error.retryAfterMs).to.be.within(50, 5000);
    expect(error.details).to.match(
      /^run of "demo.tool" not started: this replica's 2 connections to the store are all busy and 9 operations wait for one; retry in \d+ ms or on another replica$/,
    );
    // The queue drains: a window whose waits were short lets runs in again.
    for (const token of queued) pressure.acquired(token);
    const quick = pressure.waiting();
    pressure.acquired(quick);
    clock.elapse(40);
    pressure.acquired(pressure.waiting());
    expect(pressure.standing).to.equal(false);
  });

  it("takes an idle pool for no queue at all", () => {
    const clock = manualClock();
    const pressure = new StorePressure({ connections: 2, targetWaitMs: 20, windowMs: 30, now: clock.now });
    clock.elapse(40);
    expect(pressure.standing).to.equal(false);
  });
});
