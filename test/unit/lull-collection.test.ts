import { expect } from "chai";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { LullPolicy } from "../../src/async/lull-collection.js";

const mb = 1024 * 1024;
/** Runs in flight in the readings of the policy's tests: enough for a burst. */
const burstRuns = 5000;

type Phase = readonly ["busy" | "idle" | "moderate", number] | readonly ["promote" | "promoteSlowly", number];

interface ChildReport {
  readonly active: boolean;
  /** Collections collectInLulls asked for, read at the end of each phase. */
  readonly startedAfter: number[];
  /** Full collections seen to end within 1 s after each of its asks. */
  readonly majorsAfterAsks: number;
}

/**
 * A child process running collectInLulls (50 ms intervals, bursts remembered for 20 of them, 8 MB of
 * growth) through `phases`: `busy` keeps its event loop at full utilization for that many ms,
 * `moderate` at about a third, `idle` near none, `promote` moves that many MB of objects to the old
 * generation at once and lets them go, `promoteSlowly` a MB every 20 ms (a moderate load). With
 * `exposeGc` false it runs without `--expose-gc`. Its runs in flight are `runsInFlight` throughout.
 */
async function runChild(phases: readonly Phase[], exposeGc = true, runsInFlight = burstRuns): Promise<ChildReport> {
  const moduleUrl = new URL("../../src/async/lull-collection.js", import.meta.url).href;
  const script = `
    import { PerformanceObserver, constants } from "node:perf_hooks";
    import { collectInLulls } from ${JSON.stringify(moduleUrl)};
    const majors = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries())
        if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(performance.now());
    }).observe({ entryTypes: ["gc"] });
    const collection = collectInLulls(() => ${runsInFlight}, { intervalMs: 50, burstMemoryIntervals: 20, minSpacingIntervals: 10, minGrowthBytes: 8 * 1024 * 1024 });
    const asks = [];
    let seen = 0;
    const watch = setInterval(() => {
      if (collection.started > seen) { seen = collection.started; asks.push(performance.now()); }
    }, 5);
    const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); };
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const startedAfter = [];
    for (const [kind, amount] of ${JSON.stringify(phases)}) {
      const end = performance.now() + amount;
      if (kind === "busy") while (performance.now() < end) { spin(20); await turn(); }
      if (kind === "moderate") while (performance.now() < end) { spin(5); await sleep(10); }
      if (kind === "idle") await sleep(amount);
      // Objects that live through two young collections move to the old generation; then they go.
      const promote = (megabytes) => {
        let kept = [];
        for (let i = 0; i < megabytes * 1024; i++) kept.push({ bytes: new Array(100).fill(i) });
        if (typeof gc === "function") { gc({ type: "minor" }); gc({ type: "minor" }); }
        kept = undefined;
      };
      if (kind === "promote") promote(amount);
      if (kind === "promoteSlowly") for (let i = 0; i < amount; i++) { promote(1); await sleep(20); }
      startedAfter.push(collection.started);
    }
    clearInterval(watch);
    collection.stop();
    const majorsAfterAsks = asks.filter((at) => majors.some((major) => major >= at - 10 && major <= at + 1000)).length;
    console.log(JSON.stringify({ active: collection.active, startedAfter, majorsAfterAsks }));
  `;
  const flags = exposeGc
    ? // A larger first limit of the old generation, and no memory reducer: V8 starts no full
      // collection of its own meanwhile (it would at about 30 MB of a fresh process's old space).
      ["--expose-gc", "--initial-old-space-size=256", "--no-memory-reducer"]
    : [];
  const { stdout } = await promisify(execFile)(process.execPath, [...flags, "--input-type=module", "-e", script], {
    timeout: 60_000,
  });
  return JSON.parse(stdout) as ChildReport;
}

describe("full collections in lulls", () => {
  it("asks in a lull after a burst once the old generation grew enough, and not again until one ended", () => {
    const policy = new LullPolicy(100 * mb, {
      lullUtilization: 0.5,
      burstUtilization: 0.9,
      minLullIntervals: 1,
      minSpacingIntervals: 0,
      minGrowthBytes: 32 * mb,
    });
    expect(
      policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 140 * mb, runsInFlight: burstRuns }),
      "no burst yet",
    ).to.equal(false);
    expect(
      policy.shouldCollect({ utilization: 0.95, oldSpaceBytes: 140 * mb, runsInFlight: burstRuns }),
      "the burst",
    ).to.equal(false);
    expect(
      policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 120 * mb, runsInFlight: burstRuns }),
      "too little growth",
    ).to.equal(false);
    expect(
      policy.shouldCollect({ utilization: 0.5, oldSpaceBytes: 140 * mb, runsInFlight: burstRuns }),
      "at the lull's threshold",
    ).to.equal(false);
    expect(policy.shouldCollect({ utilization: 0.49, oldSpaceBytes: 132 * mb, runsInFlight: burstRuns })).to.equal(
      true,
    );
    expect(
      policy.shouldCollect({ utilization: 0.6, oldSpaceBytes: 200 * mb, runsInFlight: burstRuns }),
      "asked already",
    ).to.equal(false);
    expect(
      policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 200 * mb, runsInFlight: burstRuns }),
      "asked already",
    ).to.equal(false);
    policy.collected(60 * mb);
    expect(
      policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 100 * mb, runsInFlight: burstRuns }),
      "its burst is over",
    ).to.equal(false);
    expect(policy.shouldCollect({ utilization: 1, oldSpaceBytes: 100 * mb, runsInFlight: burstRuns })).to.equal(false);
    expect(
      policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 80 * mb, runsInFlight: burstRuns }),
      "growth counts from 60 MB",
    ).to.equal(false);
    expect(policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 92 * mb, runsInFlight: burstRuns })).to.equal(true);
  });

  it("remembers a burst for as many intervals as it is told, and leaves a steady moderate load to V8", () => {
    const policy = new LullPolicy(0, { burstMemoryIntervals: 3, minGrowthBytes: mb });
    expect(policy.shouldCollect({ utilization: 0.95, oldSpaceBytes: 0, runsInFlight: burstRuns })).to.equal(false);
    for (let interval = 0; interval < 4; interval++)
      policy.shouldCollect({ utilization: 0.7, oldSpaceBytes: 0, runsInFlight: burstRuns });
    expect(
      policy.shouldCollect({ utilization: 0.1, oldSpaceBytes: 10 * mb, runsInFlight: burstRuns }),
      "four intervals later",
    ).to.equal(false);
    for (let interval = 0; interval < 100; interval++)
      expect(
        policy.shouldCollect({ utilization: 0.4, oldSpaceBytes: (10 + interval) * mb, runsInFlight: burstRuns }),
      ).to.equal(false);
  });

  it("waits for a lull of as many intervals in a row as it is told: a pause of a second between bursts is none", () => {
    const policy = new LullPolicy(0, { minLullIntervals: 4, minSpacingIntervals: 0, minGrowthBytes: mb });
    for (let cycle = 0; cycle < 10; cycle++) {
      for (let interval = 0; interval < 4; interval++)
        expect(policy.shouldCollect({ utilization: 1, oldSpaceBytes: 100 * mb, runsInFlight: burstRuns })).to.equal(
          false,
        );
      for (let interval = 0; interval < 3; interval++)
        expect(
          policy.shouldCollect({ utilization: 0, oldSpaceBytes: 100 * mb, runsInFlight: burstRuns }),
          `cycle ${cycle}`,
        ).to.equal(false);
    }
    expect(
      policy.shouldCollect({ utilization: 0, oldSpaceBytes: 100 * mb, runsInFlight: burstRuns }),
      "the fourth in a row",
    ).to.equal(true);
  });

  it("asks no more often than its spacing allows, however many bursts and lulls come", () => {
    const policy = new LullPolicy(0, { minSpacingIntervals: 10, minGrowthBytes: mb });
    const asks: number[] = [];
    for (let interval = 0; interval < 60; interval++) {
      const burst = interval % 4 < 2;
      if (policy.shouldCollect({ utilization: burst ? 1 : 0, oldSpaceBytes: 100 * mb, runsInFlight: burstRuns })) {
        asks.push(interval);
        policy.collected(0);
      }
    }
    expect(asks).to.deep.equal([2, 14, 26, 38, 50]);
  });

  it("takes saturation with few runs in flight for no burst: a steady stream of calls is left to V8", () => {
    const policy = new LullPolicy(0, { minGrowthBytes: mb, minBurstRuns: 1000 });
    expect(policy.shouldCollect({ utilization: 1, oldSpaceBytes: 100 * mb, runsInFlight: 999 })).to.equal(false);
    expect(
      policy.shouldCollect({ utilization: 0, oldSpaceBytes: 100 * mb, runsInFlight: 0 }),
      "999 in flight",
    ).to.equal(false);
    expect(policy.shouldCollect({ utilization: 1, oldSpaceBytes: 100 * mb, runsInFlight: 1000 })).to.equal(false);
    expect(policy.shouldCollect({ utilization: 0, oldSpaceBytes: 100 * mb, runsInFlight: 0 }), "1,000").to.equal(true);
  });

  it("counts growth from a full collection V8 started itself", () => {
    const policy = new LullPolicy(100 * mb, { minGrowthBytes: 32 * mb });
    policy.collected(140 * mb);
    policy.shouldCollect({ utilization: 1, oldSpaceBytes: 140 * mb, runsInFlight: burstRuns });
    expect(policy.shouldCollect({ utilization: 0, oldSpaceBytes: 150 * mb, runsInFlight: burstRuns })).to.equal(false);
    expect(policy.shouldCollect({ utilization: 0, oldSpaceBytes: 172 * mb, runsInFlight: burstRuns })).to.equal(true);
  });

  it("starts a full collection in the lull after each burst that grew the old generation, and V8 runs it", async () => {
    const report = await runChild([
      ["busy", 300],
      ["promote", 32],
      ["idle", 600],
      ["busy", 300],
      ["promote", 32],
      ["idle", 600],
    ]);
    expect(report.active).to.equal(true);
    expect(report.startedAfter).to.deep.equal([0, 0, 1, 1, 1, 2]);
    expect(report.majorsAfterAsks).to.equal(2);
  });

  it("starts none under a steady moderate load, none while busy, and none after too little growth", async () => {
    // The growth comes a MB at a time: one promotion of 32 MB at once would be a burst of its own.
    const moderate = await runChild([
      ["moderate", 600],
      ["promoteSlowly", 32],
      ["moderate", 800],
    ]);
    expect(moderate.startedAfter, "moderate").to.deep.equal([0, 0, 0]);
    const busy = await runChild([
      ["promote", 32],
      ["busy", 800],
    ]);
    expect(busy.startedAfter, "busy").to.deep.equal([0, 0]);
    const little = await runChild([
      ["busy", 300],
      ["promote", 1],
      ["idle", 600],
    ]);
    expect(little.startedAfter, "1 MB").to.deep.equal([0, 0, 0]);
  });

  it("starts none after saturation with few runs in flight", async () => {
    const report = await runChild(
      [
        ["busy", 300],
        ["promote", 32],
        ["idle", 600],
      ],
      true,
      10,
    );
    expect(report.startedAfter).to.deep.equal([0, 0, 0]);
  });

  it("does nothing without --expose-gc", async () => {
    const report = await runChild(
      [
        ["busy", 300],
        ["promote", 32],
        ["idle", 300],
      ],
      false,
    );
    expect(report).to.deep.equal({ active: false, startedAfter: [0, 0, 0], majorsAfterAsks: 0 });
  });
});
