import { expect } from "chai";
import { ToolRuntimeError } from "../../src/errors/tool-runtime-error.js";
import { ConnectionGate, type GateTurn } from "../../src/stores/postgres/connection-gate.js";

/** Whether `promise` has settled by the end of this turn of the event loop. */
async function settledNow(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe("ConnectionGate", () => {
  it("lets as many operations through as the pool has connections, then serves work under way before new runs", async () => {
    const gate = new ConnectionGate({ connections: 2, newWorkWaitMs: { min: 60_000, max: 60_000 } });
    const first = await gate.enter(false, "");
    const second = await gate.enter(true, "demo.tool");
    const order: string[] = [];
    const newRun = gate.enter(true, "demo.tool").then((turn) => (order.push("new"), turn));
    const underWay = gate.enter(false, "").then((turn) => (order.push("under way"), turn));
    expect(await settledNow(newRun)).to.equal(false);
    expect(gate.waiting).to.equal(2);
    first.release();
    first.release(); // twice is once
    const granted = await underWay;
    expect(order).to.deep.equal(["under way"]);
    second.release();
    const next: GateTurn = await newRun;
    expect(order).to.deep.equal(["under way", "new"]);
    granted.release();
    next.release();
    expect(gate.waiting).to.equal(0);
    // All four connections' turns are back: two enter at once again.
    await Promise.all([gate.enter(true, "demo.tool"), gate.enter(false, "")]);
  });

  it("refuses a new run that gets no connection within its wait with RESOURCE_EXHAUSTED and a retry delay", async () => {
    const gate = new ConnectionGate({ connections: 1, newWorkWaitMs: { min: 20, max: 20 } });
    const busy = await gate.enter(false, "");
    let refused: unknown;
    try {
      await gate.enter(true, "demo.tool");
    } catch (error) {
      refused = error;
    }
    expect(refused).to.be.instanceOf(ToolRuntimeError);
    const error = refused as ToolRuntimeError;
    expect(error.code).to.equal("RESOURCE_EXHAUSTED");
    expect(error.errorType).to.equal("ResourceExhaustedError");
    expect(error.retryAfterMs).to.be.within(50, 5000);
    expect(error.details).to.match(
      /^run of "demo\.tool" not started: this replica's 1 connections to the store stayed busy with work under way for 20 ms \(0 operations wait\); retry in \d+ ms or on another replica$/,
    );
    expect(gate.waiting).to.equal(0);
    busy.release();
    (await gate.enter(true, "demo.tool")).release();
  });

  it("lets work under way wait as long as its caller allows, and stop waiting when told", async () => {
    const gate = new ConnectionGate({ connections: 1, newWorkWaitMs: { min: 1, max: 1 } });
    const busy = await gate.enter(false, "");
    const giveUp = new AbortController();
    const waiting = gate.enter(false, "", giveUp.signal);
    expect(await settledNow(waiting)).to.equal(false);
    giveUp.abort(new Error("deadline passed"));
    let reason: unknown;
    await waiting.catch((error: unknown) => (reason = error));
    expect((reason as Error).message).to.equal("deadline passed");
    expect(gate.waiting).to.equal(0);
    busy.release();
  });
});
