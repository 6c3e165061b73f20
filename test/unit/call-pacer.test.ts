import { expect } from "chai";
import { createCallPacer } from "../../src/server/call-pacer.js";

/** Resolves after the event loop's check phase: one turn later. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("createCallPacer()", () => {
  // A clock the tests move: each start "costs" what the test says.
  let clockMs = 0;
  const now = (): number => clockMs;

  beforeEach(() => {
    clockMs = 0;
  });

  it("starts calls at once while the turn's budget lasts", () => {
    const pacer = createCallPacer(10, now);
    const started: number[] = [];
    for (let call = 0; call < 5; call += 1) pacer.run(() => started.push(call));
    expect(started).to.deep.equal([0, 1, 2, 3, 4]);
    expect(pacer.waiting).to.equal(0);
  });

  it("holds calls past the budget for later turns, in arrival order, each turn with a fresh budget", async () => {
    const pacer = createCallPacer(10, now);
    const started: number[] = [];
    // Every start costs 4 ms: three fit in a 10 ms turn (at 0, 4 and 8 ms).
    for (let call = 0; call < 7; call += 1)
      pacer.run(() => {
        started.push(call);
        clockMs += 4;
      });
    expect(started).to.deep.equal([0, 1, 2]);
    expect(pacer.waiting).to.equal(4);
    await nextTurn();
    expect(started).to.deep.equal([0, 1, 2, 3, 4, 5]);
    await nextTurn();
    expect(started).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
    expect(pacer.waiting).to.equal(0);
  });

  it("never lets a new call overtake one that waits, even when the new turn has budget left", async () => {
    const pacer = createCallPacer(10, now);
    const started: string[] = [];
    pacer.run(() => {
      started.push("first");
      clockMs += 20;
    });
    pacer.run(() => started.push("waiting"));
    clockMs += 100;
    pacer.run(() => started.push("later"));
    expect(started).to.deep.equal(["first"]);
    await nextTurn();
    expect(started).to.deep.equal(["first", "waiting", "later"]);
  });

  it("starts waiting calls one connection after another, each connection's in arrival order", async () => {
    const pacer = createCallPacer(10, now);
    const started: string[] = [];
    const call = (name: string, connection: string): void =>
      pacer.run(
        () => {
          started.push(name);
          clockMs += 4;
        },
        () => connection,
      );
    // A burst of eight calls on one connection, then one call on another: three fit a turn.
    for (let index = 1; index <= 8; index += 1) call(`burst-${index}`, "busy");
    call("probe", "quiet");
    expect(started).to.deep.equal(["burst-1", "burst-2", "burst-3"]);
    await nextTurn();
    // The probe's connection gets its turn after one more of the burst, not after all of it.
    expect(started).to.deep.equal(["burst-1", "burst-2", "burst-3", "burst-4", "probe", "burst-5"]);
    await nextTurn();
    await nextTurn();
    expect(started.slice(6)).to.deep.equal(["burst-6", "burst-7", "burst-8"]);
    expect(pacer.waiting).to.equal(0);
  });

  it("starts at once again once the waiting calls have started", async () => {
    const pacer = createCallPacer(10, now);
    const started: string[] = [];
    pacer.run(() => {
      started.push("a");
      clockMs += 20;
    });
    pacer.run(() => started.push("b"));
    await nextTurn();
    await nextTurn();
    pacer.run(() => started.push("c"));
    expect(started).to.deep.equal(["a", "b", "c"]);
  });

  it("sends past the budget in a later turn, in order, and ahead of calls waiting to start", async () => {
    const pacer = createCallPacer(10, now);
    const done: string[] = [];
    pacer.send(() => {
      done.push("send 1");
      clockMs += 12;
    });
    pacer.run(() => done.push("start 1"));
    pacer.send(() => done.push("send 2"));
    pacer.send(() => done.push("send 3"));
    expect(done).to.deep.equal(["send 1"]);
    expect(pacer.waiting).to.equal(3);
    await nextTurn();
    expect(done).to.deep.equal(["send 1", "send 2", "send 3", "start 1"]);
    expect(pacer.waiting).to.equal(0);
  });

  it("holds starts while sends wait, even with budget left in a new turn", async () => {
    const pacer = createCallPacer(10, now);
    const done: string[] = [];
    pacer.run(() => {
      done.push("start 1");
      clockMs += 10;
    });
    pacer.send(() => {
      done.push("send 1");
      clockMs += 10;
    });
    pacer.run(() => done.push("start 2"));
    expect(done).to.deep.equal(["start 1"]);
    await nextTurn();
    // "send 1" used the new turn's budget: "start 2" waits for the next one.
    expect(done).to.deep.equal(["start 1", "send 1"]);
    await nextTurn();
    expect(done).to.deep.equal(["start 1", "send 1", "start 2"]);
  });
});
