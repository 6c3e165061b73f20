import { expect } from "chai";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { collectInLulls, LullPolicy } from "../../src/async/lull-collection.js";

const mb = 1024 * 1024;

/**
 * A child process with `--expose-gc` that runs collectInLulls (50 ms intervals, 8 MB of growth),
 * promotes `promoteMb` of objects and lets them go, then either idles or keeps its event loop busy
 * for a second, and prints what happened as JSON.
 */
async function childRun(promoteMb: number, busy: boolean): Promise<{ started: number; majorAfterStart: number }> {
  const moduleUrl = new URL("../../src/async/lull-collection.js", import.meta.url).href;
  const script = `
    import { PerformanceObserver, constants } from "node:perf_hooks";
    import { collectInLulls } from ${JSON.stringify(moduleUrl)};
    const majors = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries())
        if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(performance.now());
    }).observe({ entryTypes: ["gc"] });
    gc({ type: "major" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const collection = collectInLulls({ intervalMs: 50, minGrowthBytes: 8 * 1024 * 1024 });
    // Objects that live through two young collections move to the old space; then they are let go.
    let kept = [];
    for (let i = 0; i < ${promoteMb} * 1024; i++) kept.push({ bytes: new Array(100).fill(i) });
    gc({ type: "minor" });
    gc({ type: "minor" });
    kept = undefined;
    const from = performance.now();
    let startedAt;
    while (performance.now() - from < 1500) {
      if (${busy}) {
        const end = performance.now() + 200;
        while (performance.now() < end);
        await new Promise((resolve) => setImmediate(resolve));
      } else {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      if (startedAt === undefined && collection.started > 0) startedAt = performance.now();
    }
    collection.stop();
    const majorAfterStart = startedAt === undefined ? 0 : majors.filter((at) => at >= startedAt - 60).length;
    console.log(JSON.stringify({ started: collection.started, majorAfterStart }));
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    // A larger first limit of the old space, and no memory reducer: V8 starts no full collection of
    // its own meanwhile (it would at about 30 MB of a fresh process's old space).
    ["--expose-gc", "--initial-old-space-size=256", "--no-memory-reducer", "--input-type=module", "-e", script],
    { timeout: 30_000 },
  );
  return JSON.parse(stdout) as { started: number; majorAfterStart: number };
}

describe("full collections in lulls", () => {
  it("asks once the old space grew enough in a lull, and not again until a full collection ended", () => {
    const policy = new LullPolicy(100 * mb, { lullUtilization: 0.5, minGrowthBytes: 32 * mb });
    expect(policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 120 * mb }), "too little growth").to.equal(false);
    expect(policy.shouldCollect({ utilization: 0.9, oldSpaceBytes: 140 * mb }), "busy").to.equal(false);
    expect(policy.shouldCollect({ utilization: 0.5, oldSpaceBytes: 140 * mb }), "at the threshold").to.equal(false);
    expect(policy.shouldCollect({ utilization: 0.49, oldSpaceBytes: 132 * mb })).to.equal(true);
    expect(policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 200 * mb }), "asked already").to.equal(false);
    policy.collected(60 * mb);
    expect(policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 80 * mb }), "growth counts from 60 MB").to.equal(
      false,
    );
    expect(policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 92 * mb })).to.equal(true);
  });

  it("counts growth from a full collection V8 started itself", () => {
    const policy = new LullPolicy(100 * mb, { minGrowthBytes: 32 * mb });
    policy.collected(140 * mb);
    expect(policy.shouldCollect({ utilization: 0, oldSpaceBytes: 150 * mb })).to.equal(false);
    expect(policy.shouldCollect({ utilization: 0, oldSpaceBytes: 172 * mb })).to.equal(true);
  });

  it("does nothing without --expose-gc", () => {
    expect(typeof (globalThis as { gc?: unknown }).gc).to.equal("undefined");
    const collection = collectInLulls({ intervalMs: 1 });
    expect(collection.active).to.equal(false);
    expect(collection.started).to.equal(0);
    collection.stop();
  });

  it("starts a full collection in a lull after the old space grew, and V8 runs it", async () => {
    const run = await childRun(32, false);
    expect(run.started).to.equal(1);
    expect(run.majorAfterStart).to.be.at.least(1);
  });

  it("starts none while the event loop is busy, nor in a lull after too little growth", async () => {
    expect((await childRun(32, true)).started, "busy").to.equal(0);
    expect((await childRun(1, false)).started, "1 MB").to.equal(0);
  });
});
