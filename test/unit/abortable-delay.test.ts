import { expect } from "chai";
import { performance } from "node:perf_hooks";
import { Cancellation } from "../../src/async/cancellation.js";
import { abortableDelay } from "../../src/tools/abortable-delay.js";

describe("abortableDelay()", () => {
  it("never resolves before its delay by performance.now(), though Node's timers may fire early", async () => {
    for (let round = 0; round < 40; round++) {
      const ms = 1 + (round % 4);
      const start = performance.now();
      await abortableDelay(ms, new AbortController().signal);
      expect(performance.now() - start).to.be.at.least(ms);
    }
  });

  it("rejects with the signal's reason as soon as it aborts, and at once when it was aborted", async () => {
    const controller = new AbortController();
    const waiting = abortableDelay(60_000, controller.signal);
    const reason = new Error("stop");
    controller.abort(reason);
    expect(
      await waiting.then(
        () => undefined,
        (error: unknown) => error,
      ),
    ).to.equal(reason);
    const late = await abortableDelay(10, controller.signal).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(late).to.equal(reason);
  });

  it("takes a run's Cancellation: rejects with its reason when cancelled, at once when it was, and lets go of its listener", async () => {
    /** Counts the listeners it holds. */
    class CountingCancellation extends Cancellation {
      held = 0;
      override onAbort(listener: (reason: unknown) => void): () => void {
        this.held += 1;
        return super.onAbort(listener);
      }
      override offAbort(listener: (reason: unknown) => void): void {
        this.held -= 1;
        super.offAbort(listener);
      }
    }
    const quiet = new CountingCancellation();
    const start = performance.now();
    await abortableDelay(3, quiet);
    expect(performance.now() - start).to.be.at.least(3);
    expect(quiet.held, "no listener left once the delay is over").to.equal(0);

    const cancellation = new Cancellation();
    const waiting = abortableDelay(60_000, cancellation);
    const reason = new Error("stop");
    cancellation.abort(reason);
    const rejected = (promise: Promise<void>) =>
      promise.then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(await rejected(waiting)).to.equal(reason);
    expect(await rejected(abortableDelay(10, cancellation))).to.equal(reason);
  });
});
