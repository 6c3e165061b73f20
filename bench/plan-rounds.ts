import { wireVariants, type VariantId, type WireVariant } from "./cases/wire-variants.js";
import type { BenchOptions } from "./options.js";
import { seededRandom, shuffled } from "./lib/seeded-random.js";

/** One measurement of a round, each in a fresh process. */
export type Step =
  | { readonly kind: "wire"; readonly variants: readonly WireVariant[] }
  | { readonly kind: "registry" }
  | { readonly kind: "concurrency" }
  | { readonly kind: "registration"; readonly measureMemory: boolean }
  | { readonly kind: "admission" };

/** The server-bound variants each case needs: its subject and its baseline. */
const variantsOfCase: Readonly<Record<1 | 2 | 3 | 4, readonly VariantId[]>> = {
  1: ["toolruntime-grpc", "grpc-echo"],
  2: ["toolruntime-connect-proto", "connect-echo-proto", "toolruntime-connect-json", "connect-echo-json"],
  3: ["toolruntime-runtool", "toolruntime-grpc", "grpc-echo-stream", "grpc-echo"],
  4: ["toolruntime-grpc", "mcp-noop", "toolruntime-mcp"],
};

/** Variants compared with each other, measured back to back so that their ratios share the machine's mood. */
const pairedGroups: readonly (readonly VariantId[])[] = [
  ["toolruntime-grpc", "grpc-echo", "toolruntime-runtool", "grpc-echo-stream", "mcp-noop", "toolruntime-mcp"],
  ["toolruntime-connect-proto", "connect-echo-proto"],
  ["toolruntime-connect-json", "connect-echo-json"],
];

/**
 * The steps of every round. Variants that are compared are measured together, as one step (see
 * measureGroup: their servers up at once, loaded in alternating slices), and the groups and
 * in-process cases run in a shuffled order, different each round: subjects and baselines alternate,
 * so a slow patch of a noisy machine does not fall on one side only. The registry-scale case, whose
 * registrations take most of a quick run's time, runs once, in the middle round; its baselines are
 * measured inside it, interleaved with it. The registration case over gRPC (7) runs in every round,
 * its baseline beside it in the same step, but fills the registry to 100,000 tools and measures the
 * memory (minutes) only in the middle round: its rates swung by half from one run to the next on
 * this machine. The admission burst (8) runs in every round, each on a fresh server with its
 * baseline beside it: one burst swings by a quarter from one fresh server to the next on this
 * machine, so a single one tells little.
 */
export function planRounds(options: BenchOptions): Step[][] {
  const ids = new Set<VariantId>();
  for (const number of [1, 2, 3, 4] as const) {
    if (options.cases.has(number)) for (const id of variantsOfCase[number]) ids.add(id);
  }
  const byId = new Map(wireVariants.map((variant) => [variant.id, variant]));
  const random = seededRandom(options.seed);
  const middle = Math.floor((options.rounds - 1) / 2);
  return Array.from({ length: options.rounds }, (_, round) => {
    const groups: Step[][] = pairedGroups
      .map((group) => group.filter((id) => ids.has(id)))
      .filter((group) => group.length > 0)
      .map((group) => [{ kind: "wire", variants: shuffled(group, random).map((id) => byId.get(id) as WireVariant) }]);
    if (options.cases.has(6)) groups.push([{ kind: "concurrency" }]);
    if (options.cases.has(5) && round === middle) groups.push([{ kind: "registry" }]);
    if (options.cases.has(7)) groups.push([{ kind: "registration", measureMemory: round === middle }]);
    if (options.cases.has(8)) groups.push([{ kind: "admission" }]);
    return shuffled(groups, random).flat();
  });
}
