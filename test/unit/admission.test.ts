import { expect } from "chai";
import { Admission } from "../../src/executions/admission.js";

/** Whether `promise` has settled once the queued reactions ran. */
async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe("Admission", () => {
  it("grants a free slot at once, whether `granted` is read before or after, and counts it until released", async () => {
    const admission = new Admission({ maxConcurrent: 2, maxQueued: 4 });
    const first = admission.admit("demo.a", 0);
    expect([first.immediate, first.position]).to.deep.equal([true, 0]);
    expect(await hasSettled(first.granted)).to.equal(true);
    expect(admission.running).to.equal(1);
    first.release();
    first.release();
    expect(admission.running, "release is idempotent").to.equal(0);
  });

  it("grants a queued ticket when a slot frees, in order, and never one withdrawn while waiting", async () => {
    const admission = new Admission({ maxConcurrent: 1, maxQueued: 4 });
    const running = admission.admit("demo.a", 0);
    const withdrawn = admission.admit("demo.a", 0);
    const waiting = admission.admit("demo.a", 0);
    expect([withdrawn.immediate, withdrawn.position, waiting.position]).to.deep.equal([false, 0, 1]);
    // Promises asked for while waiting: they must settle (or not) by themselves.
    const withdrawnGranted = withdrawn.granted;
    const waitingGranted = waiting.granted;
    expect(await hasSettled(waitingGranted)).to.equal(false);
    withdrawn.release();
    expect(admission.queued).to.equal(1);
    running.release();
    expect(await hasSettled(waitingGranted)).to.equal(true);
    expect(await hasSettled(withdrawnGranted)).to.equal(false);
    expect([admission.running, admission.queued]).to.deep.equal([1, 0]);
    waiting.release();
    expect(admission.running).to.equal(0);
  });
});
