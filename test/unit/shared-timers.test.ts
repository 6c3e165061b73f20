import { expect } from "chai";
import { performance } from "node:perf_hooks";
import { SharedTimers } from "../../src/async/shared-timers.js";

/** Resolves when `callback` is called with the time it was called at. */
function timed(timers: SharedTimers, delayMs: number): { fired: Promise<number>; cancel: () => void } {
  let cancel: () => void = () => undefined;
  const fired = new Promise<number>((resolve) => {
    const timer = timers.schedule(delayMs, () => resolve(performance.now()));
    cancel = () => timer.cancel();
  });
  return { fired, cancel };
}

describe("SharedTimers", () => {
  it("runs each callback no earlier than its delay, callbacks of one delay in the order scheduled", async () => {
    const timers = new SharedTimers();
    const order: number[] = [];
    const start = performance.now();
    const all = [0, 1, 2].map(
      (index) =>
        new Promise<number>((resolve) =>
          timers.schedule(30, () => {
            order.push(index);
            resolve(performance.now());
          }),
        ),
    );
    const times = await Promise.all(all);
    expect(order).to.deep.equal([0, 1, 2]);
    // Never early, though Node's own timers may fire up to a millisecond early by performance.now().
    for (const time of times) expect(time - start).to.be.at.least(30);
  });

  it("calls a callback with the argument it was scheduled with, so one function serves many", async () => {
    const timers = new SharedTimers();
    const heard: string[] = [];
    const done = new Promise<void>((resolve) => {
      const hear = (run: { name: string }): void => {
        heard.push(run.name);
        if (heard.length === 2) resolve();
      };
      timers.schedule(5, hear, { name: "first" });
      timers.schedule(5, hear, { name: "second" });
    });
    await done;
    expect(heard).to.deep.equal(["first", "second"]);
  });

  it("runs callbacks of different delays by their own delays", async () => {
    const timers = new SharedTimers();
    const order: string[] = [];
    const long = new Promise<void>((resolve) =>
      timers.schedule(40, () => {
        order.push("40 ms");
        resolve();
      }),
    );
    const short = new Promise<void>((resolve) =>
      timers.schedule(5, () => {
        order.push("5 ms");
        resolve();
      }),
    );
    await Promise.all([long, short]);
    expect(order).to.deep.equal(["5 ms", "40 ms"]);
  });

  it("never runs a cancelled callback, whatever its place in the list", async () => {
    const timers = new SharedTimers();
    const ran: string[] = [];
    const first = timers.schedule(20, () => ran.push("first"));
    timers.schedule(20, () => ran.push("middle"));
    const last = timers.schedule(20, () => ran.push("last"));
    first.cancel();
    last.cancel();
    last.cancel();
    const after = timed(timers, 25);
    await after.fired;
    expect(ran).to.deep.equal(["middle"]);
  });

  it("serves a delay again after its list emptied, and lets a callback schedule the next one", async () => {
    const timers = new SharedTimers();
    const once = timed(timers, 5);
    await once.fired;
    let beats = 0;
    await new Promise<void>((resolve) => {
      const beat = (): void => {
        beats += 1;
        if (beats === 3) resolve();
        else timers.schedule(5, beat);
      };
      timers.schedule(5, beat);
    });
    expect(beats).to.equal(3);
  });

  it("counts a delay from a time given, keeping a later entry behind an earlier one of the same delay", async () => {
    const timers = new SharedTimers();
    const order: string[] = [];
    const start = performance.now();
    const fired = (name: string, resolve: (at: number) => void) => () => {
      order.push(name);
      resolve(performance.now());
    };
    // Scheduled now for 200 ms from now; then for 200 ms from 150 ms ago, which is due earlier
    // but kept behind it (its list stays in order), so both come at the first's time.
    const first = new Promise<number>((resolve) => timers.schedule(200, fired("first", resolve)));
    const second = new Promise<number>((resolve) =>
      timers.scheduleSince(start - 150, 200, fired("second", resolve), undefined),
    );
    // Alone in its list, a delay counted from 150 ms ago comes 50 ms from now.
    const alone = new Promise<number>((resolve) =>
      timers.scheduleSince(start - 150, 180, fired("alone", resolve), undefined),
    );
    const [firstAt, secondAt, aloneAt] = await Promise.all([first, second, alone]);
    expect(order).to.deep.equal(["alone", "first", "second"]);
    expect(aloneAt - start)
      .to.be.at.least(29)
      .and.below(150);
    expect(firstAt - start).to.be.at.least(199);
    expect(secondAt - start).to.be.at.least(199);
  });

  it("keeps an entry's time when a callback before it schedules again on the same delay (a heartbeat)", async () => {
    const timers = new SharedTimers();
    const delayMs = 300;
    let beatAgainAt = 0;
    const beatAgain = new Promise<number>((resolve) => {
      timers.schedule(delayMs, () => {
        // Due one delay after this one: the entry below is due long before.
        timers.schedule(delayMs, () => resolve(performance.now()));
        beatAgainAt = performance.now();
      });
    });
    // Due 20 ms after the first: it must not wait for the one the first callback schedules.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = await new Promise<number>((resolve) => timers.schedule(delayMs, () => resolve(performance.now())));
    const again = await beatAgain;
    expect(beatAgainAt).to.be.above(0);
    // The second fires about 20 ms after the first and a delay before the rescheduled one; armed
    // for the rescheduled one, both fired together.
    expect(again - second).to.be.at.least(delayMs / 3);
  });
});
