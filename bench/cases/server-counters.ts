import { scrapeMetrics, samplesOf, type MetricSample } from "../lib/metrics-text.js";

/** The counters of the server that one load window is checked against. */
export interface CounterScope {
  /** The RPC the load calls; absent when the load is not an RPC (MCP `tools/call` at /mcp). */
  readonly rpc?: { readonly service: string; readonly method: string; readonly protocol: string };
  /** The tool the load runs: its `toolruntime_executions_total` are checked. */
  readonly tool?: string;
}

/** Counts from the server's own counters: calls by final status code, runs by outcome. */
export interface CounterReading {
  /** `toolruntime_rpc_requests_total` of the scope's RPC, by code ("OK", "CANCELLED"…). */
  readonly rpcByCode: Readonly<Record<string, number>>;
  /** `toolruntime_executions_total` of the scope's tool, by outcome ("success" or an error type). */
  readonly runsByOutcome: Readonly<Record<string, number>>;
}

const cancelledCode = "CANCELLED";
const cancelledOutcome = "CancelledError";

function byLabel(samples: readonly MetricSample[], label: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const sample of samples) {
    const key = sample.labels[label] ?? "";
    counts[key] = (counts[key] ?? 0) + sample.value;
  }
  return counts;
}

/** Reads the scope's counters from a scrape. */
export function readCounters(samples: readonly MetricSample[], scope: CounterScope): CounterReading {
  return {
    rpcByCode: scope.rpc ? byLabel(samplesOf(samples, "toolruntime_rpc_requests_total", scope.rpc), "code") : {},
    runsByOutcome: scope.tool
      ? byLabel(samplesOf(samples, "toolruntime_executions_total", { tool: scope.tool }), "outcome")
      : {},
  };
}

function subtract(after: Readonly<Record<string, number>>, before: Readonly<Record<string, number>>) {
  const delta: Record<string, number> = {};
  for (const [key, value] of Object.entries(after)) {
    const change = value - (before[key] ?? 0);
    if (change !== 0) delta[key] = change;
  }
  return delta;
}

/** What the counters gained between two readings. */
export function countsBetween(before: CounterReading, after: CounterReading): CounterReading {
  return {
    rpcByCode: subtract(after.rpcByCode, before.rpcByCode),
    runsByOutcome: subtract(after.runsByOutcome, before.runsByOutcome),
  };
}

/** The sum of a reading's counts (every code, or every outcome). */
export const totalOf = (counts: Readonly<Record<string, number>>): number =>
  Object.values(counts).reduce((sum, value) => sum + value, 0);

/**
 * Scrapes the server until the scope's counters stop moving (two scrapes `settleMs` apart agree, at
 * most `maxWaitMs`): calls the load generator gave up on at the end of its window may still be
 * finishing on the server, and a reading taken then would leave them out.
 */
export async function readSettledCounters(
  httpUrl: string,
  scope: CounterScope,
  settleMs = 100,
  maxWaitMs = 3000,
): Promise<CounterReading> {
  const began = Date.now();
  let reading = readCounters(await scrapeMetrics(httpUrl), scope);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    const next = readCounters(await scrapeMetrics(httpUrl), scope);
    const same =
      totalOf(next.rpcByCode) === totalOf(reading.rpcByCode) &&
      totalOf(next.runsByOutcome) === totalOf(reading.runsByOutcome);
    reading = next;
    if (same || Date.now() - began > maxWaitMs) return reading;
  }
}

/** Whether the calls of one load window succeeded, as the server counted them. */
export interface WindowCheck {
  /** Calls the load generator counted as successful. */
  readonly claimedOk: number;
  /** Calls the load generator left in flight when its time was up (the server may count them CANCELLED). */
  readonly cutOff: number;
  /** Calls the load generator counted as failed, errored, timed out or non-2xx. */
  readonly generatorErrors: number;
  /** The server's counts for the window; absent for a baseline server, which keeps none. */
  readonly server?: CounterReading;
  /** No error anywhere, and the server counted at least as many successes as the load generator. */
  readonly verified: boolean;
  /** Why the window is not verified; empty when it is. */
  readonly problems: readonly string[];
}

function describe(counts: Readonly<Record<string, number>>): string {
  return Object.entries(counts)
    .map(([key, value]) => `${value} ${key}`)
    .join(", ");
}

/**
 * Checks one window: the load generator saw no error, and, when the server's counts are given, the
 * server counted no non-OK call and no unsuccessful run (except at most `cutOff` cancellations of
 * calls the generator abandoned at the end of its window) and at least `claimedOk` OK calls and
 * successful runs.
 */
export function checkWindow(
  scope: CounterScope,
  counts: { readonly claimedOk: number; readonly cutOff: number; readonly generatorErrors: number },
  server?: CounterReading,
): WindowCheck {
  const problems: string[] = [];
  if (counts.generatorErrors > 0) problems.push(`the load generator saw ${counts.generatorErrors} errors`);
  if (server && scope.rpc) {
    const { OK: ok = 0, [cancelledCode]: cancelled = 0, ...others } = server.rpcByCode;
    if (totalOf(others) > 0) problems.push(`the server counted non-OK calls: ${describe(others)}`);
    if (cancelled > counts.cutOff)
      problems.push(`the server counted ${cancelled} CANCELLED calls, ${counts.cutOff} cut off`);
    if (ok < counts.claimedOk)
      problems.push(`the server counted ${ok} OK calls, fewer than the ${counts.claimedOk} claimed`);
  }
  if (server && scope.tool) {
    const { success = 0, [cancelledOutcome]: cancelled = 0, ...others } = server.runsByOutcome;
    if (totalOf(others) > 0) problems.push(`the server counted failed runs: ${describe(others)}`);
    if (cancelled > counts.cutOff)
      problems.push(`the server counted ${cancelled} cancelled runs, ${counts.cutOff} cut off`);
    if (success < counts.claimedOk) {
      problems.push(`the server counted ${success} successful runs, fewer than the ${counts.claimedOk} claimed`);
    }
  }
  return { ...counts, ...(server ? { server } : {}), verified: problems.length === 0, problems };
}
