import type { VariantMeasurement } from "../cases/measure-variant.js";
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
  /** Whether the target is met; undefined without a target. */
  readonly met?: boolean;
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
    });
  }
  return summaries;
}

function meets(value: number, target: Target): boolean {
  return target.op === ">=" ? value >= target.value : value <= target.value;
}

/** Each ratio whose figures some round has: medians of ours, of the baseline, and of the per-round ratios. */
export function summarizeRatios(
  rounds: readonly RoundResults[],
  definitions: readonly RatioDefinition[],
): RatioSummary[] {
  const summaries: RatioSummary[] = [];
  for (const definition of definitions) {
    const pairs = rounds.flatMap((round) => {
      const pair = definition.pick(round);
      return pair ? [pair] : [];
    });
    if (pairs.length === 0) continue;
    const perRound = pairs.map((pair) => ratio(pair.ours, pair.baseline));
    const summary = median(perRound);
    summaries.push({
      caseNumber: definition.caseNumber,
      measure: definition.measure,
      unit: definition.unit,
      better: definition.better,
      ours: median(pairs.map((pair) => pair.ours)),
      baseline: median(pairs.map((pair) => pair.baseline)),
      ratio: summary,
      perRound,
      ...(definition.target ? { target: definition.target, met: meets(summary, definition.target) } : {}),
    });
  }
  return summaries;
}
