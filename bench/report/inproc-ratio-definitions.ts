import type { ListLatency } from "../inproc/registry-scale.js";
import type { BenchOptions } from "../options.js";
import type { RatioDefinition } from "./ratio-definitions.js";
import type { RoundResults } from "./round-results.js";

function listAt(round: RoundResults, tools: number): ListLatency | undefined {
  return round.registry?.list.find((entry) => entry.tools === tools);
}

/** Every run of the concurrency case succeeded, ours and the bare sleeps alike. */
function concurrencyClean(round: RoundResults): boolean {
  return round.concurrency !== undefined && round.concurrency.toolruntime.errors + round.concurrency.bare.errors === 0;
}

/** "20k" for 20,000. */
export function thousands(count: number): string {
  return count >= 1000 ? `${count / 1000}k` : String(count);
}

/**
 * The ratios of the in-process cases (registry scale, concurrency) for these options. They run in
 * one process with no wire, so a round is verified when every run succeeded (a failed registration
 * ends the child with an error).
 */
export function inprocessRatioDefinitions(options: BenchOptions): RatioDefinition[] {
  const rows: RatioDefinition[] = [
    {
      caseNumber: 5,
      measure: `registrations/s (${thousands(options.registryTools)} tools, ~1 KiB schemas) ÷ plain Map inserts/s`,
      unit: "regs/s",
      better: "higher",
      pick: (r) =>
        r.registry && {
          ours: r.registry.registrationsPerSecond,
          baseline: r.registry.mapInsertsPerSecond,
          verified: true,
        },
    },
    {
      caseNumber: 5,
      measure: "heap bytes per tool ÷ plain Map of the same specs",
      unit: "bytes",
      better: "lower",
      pick: (r) =>
        r.registry && { ours: r.registry.heapBytesPerTool, baseline: r.registry.mapHeapBytesPerTool, verified: true },
    },
  ];
  for (const size of options.listCheckpoints) {
    for (const quantile of ["p50", "p99"] as const) {
      rows.push({
        caseNumber: 5,
        measure: `ListTools page of 100 (token from mid-listing) ${quantile} at ${thousands(size)} tools ÷ a 1k-tool registry, interleaved`,
        unit: "µs",
        better: "lower",
        ...(quantile === "p50" ? { target: { op: "<=", value: 1.5 } as const } : {}),
        pick: (r) => {
          const at = listAt(r, size);
          if (!at) return undefined;
          return quantile === "p50"
            ? { ours: at.p50Us, baseline: at.baselineP50Us, verified: true }
            : { ours: at.p99Us, baseline: at.baselineP99Us, verified: true };
        },
      });
    }
  }
  rows.push(
    {
      caseNumber: 5,
      measure: `watch fan-out: one change to ${options.watchers} watchRegistry watchers ÷ bare fan-out`,
      unit: "ms",
      better: "lower",
      pick: (r) =>
        r.registry && { ours: r.registry.fanout.allReceivedMs, baseline: r.registry.fanout.bareMs, verified: true },
    },
    {
      caseNumber: 6,
      measure: `heap per in-flight run (${thousands(options.concurrentRuns)} × builtin.sleep) ÷ bare cancellable sleep`,
      unit: "bytes",
      better: "lower",
      pick: (r) =>
        r.concurrency && {
          ours: r.concurrency.toolruntime.heapBytesPerRun,
          baseline: r.concurrency.bare.heapBytesPerRun,
          verified: concurrencyClean(r),
        },
    },
    {
      caseNumber: 6,
      measure: "event-loop delay p99 ÷ bare cancellable sleeps",
      unit: "ms",
      better: "lower",
      pick: (r) =>
        r.concurrency && {
          ours: r.concurrency.toolruntime.eventLoopDelayP99Ms,
          baseline: r.concurrency.bare.eventLoopDelayP99Ms,
          verified: concurrencyClean(r),
        },
    },
    {
      caseNumber: 6,
      measure: `batch wall time ÷ the ${options.sleepMs} ms each run sleeps`,
      unit: "ms",
      better: "lower",
      target: { op: "<=", value: 1.5 },
      pick: (r) =>
        r.concurrency && {
          ours: r.concurrency.toolruntime.wallMs,
          baseline: r.concurrency.sleepMs,
          verified: concurrencyClean(r),
        },
    },
  );
  return rows;
}
