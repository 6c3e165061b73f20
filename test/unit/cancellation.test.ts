import { expect } from "chai";
import { Cancellation, cancellationOfSignal } from "../../src/async/cancellation.js";

describe("Cancellation", () => {
  it("tells each listener once, with the reason, and keeps the first reason", () => {
    const cancellation = new Cancellation();
    const heard: unknown[] = [];
    cancellation.onAbort((reason) => heard.push(reason));
    cancellation.onAbort((reason) => heard.push(`second: ${String(reason)}`));
    expect(cancellation.aborted).to.equal(false);
    cancellation.abort("first");
    cancellation.abort("again");
    expect(heard).to.deep.equal(["first", "second: first"]);
    expect(cancellation.aborted).to.equal(true);
    expect(cancellation.reason).to.equal("first");
  });

  it("calls a listener added after the abort at once, and not one that was removed", () => {
    const cancellation = new Cancellation();
    const heard: string[] = [];
    const stop = cancellation.onAbort(() => heard.push("removed"));
    stop();
    cancellation.abort(new Error("stop"));
    cancellation.onAbort(() => heard.push("late"));
    expect(heard).to.deep.equal(["late"]);
  });

  it("tells any number of listeners in the order added, whichever were removed, one alone included", () => {
    for (const [count, removed] of [
      [1, []],
      [1, [0]],
      [2, [0]],
      [2, [1]],
      [3, [1]],
      [4, [0, 3]],
    ] as const) {
      const cancellation = new Cancellation();
      const heard: number[] = [];
      const listeners = Array.from({ length: count }, (_, index) => () => heard.push(index));
      for (const listener of listeners) cancellation.onAbort(listener);
      for (const index of removed) cancellation.offAbort(listeners[index] as () => number);
      cancellation.abort("stop");
      const expected = listeners
        .map((_, index) => index)
        .filter((index) => !(removed as readonly number[]).includes(index));
      expect(heard, `${count} listeners, ${removed.join(",")} removed`).to.deep.equal(expected);
    }
  });

  it("makes an AbortSignal that follows it, whether asked for before or after the abort", () => {
    const early = new Cancellation();
    const signal = early.signal;
    let fired = 0;
    signal.addEventListener("abort", () => (fired += 1));
    const reason = new Error("why");
    early.abort(reason);
    expect(signal.aborted).to.equal(true);
    expect(signal.reason).to.equal(reason);
    expect(fired).to.equal(1);

    const late = new Cancellation();
    late.abort("done");
    expect(late.signal.aborted).to.equal(true);
    expect(late.signal.reason).to.equal("done");
  });

  it("views an AbortSignal the same way", () => {
    const controller = new AbortController();
    const view = cancellationOfSignal(controller.signal);
    const heard: unknown[] = [];
    const stop = view.onAbort((reason) => heard.push(reason));
    view.onAbort((reason) => heard.push(`kept: ${String(reason)}`));
    stop();
    controller.abort("gone");
    expect(heard).to.deep.equal(["kept: gone"]);
    expect(view.aborted).to.equal(true);
    expect(view.reason).to.equal("gone");
  });

  it("removes a listener by itself with offAbort, on a Cancellation and on an AbortSignal's view", () => {
    const cancellation = new Cancellation();
    const controller = new AbortController();
    const view = cancellationOfSignal(controller.signal);
    const heard: string[] = [];
    for (const [name, source] of [
      ["cancellation", cancellation],
      ["signal", view],
    ] as const) {
      const removed = (): number => heard.push(`${name} removed`);
      const kept = (): number => heard.push(`${name} kept`);
      source.onAbort(removed);
      source.onAbort(kept);
      source.offAbort(removed);
      // Removing twice, or a listener never added, changes nothing.
      source.offAbort(removed);
      source.offAbort(() => undefined);
    }
    cancellation.abort("stop");
    controller.abort("stop");
    expect(heard).to.deep.equal(["cancellation kept", "signal kept"]);
  });
});
