import { expect } from "chai";
import { performance } from "node:perf_hooks";
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
});
