import type { VariantMeasurement } from "../cases/measure-group.js";
import { wireVariants, type VariantId } from "../cases/wire-variants.js";
import { median, ratio } from "../lib/stats.js";
import type { RatioDefinition, Target } from "./ratio-definitions.js";
import type { RoundResults } from "./round-results.js";

/** Medians over rounds of one server-bound variant. */
export interface VariantSummary {
  readonly id: VariantId;
  readonly title: string;
  readonly rounds: number;
  readonly callsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuMsPerCall: number;
  readonly serverCores: number;
  readonly loadGeneratorCores: number;
  readonly messagesPerCall: number;
  /** Sum over rounds of failed and non-2xx requests. */
  readonly errors: number;
  readonly succeeded: number;
  /** Sums over rounds of the server's own counts (toolruntime only): OK calls and non-OK calls, all codes. */
  readonly serverOk?: number;
  readonly serverNonOk?: number;
  /** Windows (rounds) verified, of {@link rounds}. */
  readonly verifiedRounds: number;
  /** Medians over rounds of the machine's load during the window. */
  readonly machineBusyPct: number;
  readonly otherCores: number;
  readonly loadAvg1m: number;
}

/** One line of the ratio table, medians over rounds. */
export interface RatioSummary {
  readonly caseNumber: number;
  readonly measure: string;
  readonly unit: string;
  readonly better: "higher" | "lower";
  readonly ours: number;
  readonly baseline: number;
  /** Median of the per-round ratios (each ours ÷ the baseline of the same round). */
  readonly ratio: number;
  readonly perRound: readonly number[];
  readonly target?: Target;
  readonly headline?: string;
  /** Whether the target is met (by the verified rounds); undefined without a target or a verified round. */
  readonly met?: boolean;
  /** Whether the stretch value is reached; undefined without one. */
  readonly stretchMet?: boolean;
  /** Rounds that measured the row, and those of them whose windows were not verified (left out of the figures). */
  readonly rounds: number;
  readonly failedRounds: number;
}

/** Medians over rounds of every variant that was measured. */
export function summarizeVariants(rounds: readonly RoundResults[]): VariantSummary[] {
  const summaries: VariantSummary[] = [];
  for (const variant of wireVariants) {
    const all = rounds.flatMap((round) => round.wire.filter((m) => m.id === variant.id));
    if (all.length === 0) continue;
    const mid = (figure: (m: VariantMeasurement) => number): number => median(all.map(figure));
    summaries.push({
      id: variant.id,
      title: variant.title,
      rounds: all.length,
      callsPerSecond: mid((m) => m.callsPerSecond),
      p50Ms: mid((m) => m.p50Ms),
      p99Ms: mid((m) => m.p99Ms),
      cpuMsPerCall: mid((m) => m.cpuMsPerCall),
      serverCores: mid((m) => m.serverCores),
      loadGeneratorCores: mid((m) => m.loadGeneratorCores),
      messagesPerCall: mid((m) => m.messagesPerCall),
      errors: all.reduce((sum, m) => sum + m.errors, 0),
      succeeded: all.reduce((sum, m) => sum + m.succeeded, 0),
      ...serverCounts(all),
      verifiedRounds: all.filter((m) => m.check.verified).length,
      machineBusyPct: mid((m) => m.machine.busyPct),
      otherCores: mid((m) => m.machine.otherCores),
      loadAvg1m: mid((m) => m.machine.loadAvg1m),
    });
  }
  return summaries;
}

function splitOk(counts: Readonly<Record<string, number>>, okKey: string): { ok: number; notOk: number } {
  let ok = 0;
  let notOk = 0;
  for (const [key, value] of Object.entries(counts)) {
    if (key === okKey) ok += value;
    else notOk += value;
  }
  return { ok, notOk };
}

/** Sums of the server's own counts over the windows; none for a baseline server. */
function serverCounts(all: readonly VariantMeasurement[]): { serverOk?: number; serverNonOk?: number } {
  const readings = all.flatMap((m) => (m.check.server ? [m.check.server] : []));
  if (readings.length === 0) return {};
  // MCP tools/call at /mcp is no RPC: its runs are counted instead.
  const byRpc = readings.some((reading) => Object.keys(reading.rpcByCode).length > 0);
  const splits = readings.map((reading) =>
    byRpc ? splitOk(reading.rpcByCode, "OK") : splitOk(reading.runsByOutcome, "success"),
  );
  return {
    serverOk: splits.reduce((sum, split) => sum + split.ok, 0),
    serverNonOk: splits.reduce((sum, split) => sum + split.notOk, 0),
  };
}

function meets(value: number, op: Target["op"], wanted: number): boolean {
  switch (op) {
    case ">=":
      return value >= wanted;
    case "<=":
      return value <= wanted;
    case "<":
      return value < wanted;
  }
}

/**
 * Each ratio whose figures some round has: medians of ours, of the baseline, and of the per-round
 * ratios, over the rounds whose windows were verified (the others are counted in `failedRounds`).
 */
export function summarizeRatios(
  rounds: readonly RoundResults[],
  definitions: readonly RatioDefinition[],
): RatioSummary[] {
  const summaries: RatioSummary[] = [];
  for (const definition of definitions) {
    const measured = rounds.flatMap((round) => {
      const pair = definition.pick(round);
      return pair ? [pair] : [];
    });
    if (measured.length === 0) continue;
    // A round whose windows were not verified is reported as failed, never averaged in.
    const pairs = measured.filter((pair) => pair.verified);
    const perRound = pairs.map((pair) => ratio(pair.ours, pair.baseline));
    const summary = median(perRound);
    const ours = median(pairs.map((pair) => pair.ours));
    const target = definition.target;
    const judged = target?.on === "ours" ? ours : summary;
    const met = target && pairs.length > 0 ? meets(judged, target.op, target.value) : undefined;
    const stretchMet =
      target?.stretch !== undefined && pairs.length > 0 ? meets(judged, target.op, target.stretch) : undefined;
    summaries.push({
      caseNumber: definition.caseNumber,
      measure: definition.measure,
      unit: definition.unit,
      better: definition.better,
      ours,
      baseline: median(pairs.map((pair) => pair.baseline)),
      ratio: summary,
      perRound,
      ...(target ? { target } : {}),
      ...(definition.headline ? { headline: definition.headline } : {}),
      ...(met === undefined ? {} : { met }),
      ...(stretchMet === undefined ? {} : { stretchMet }),
      rounds: measured.length,
      failedRounds: measured.length - pairs.length,
    });
  }
  return summaries;
}
