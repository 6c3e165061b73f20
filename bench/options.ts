import { parseArgs } from "node:util";

/** The case numbers: 1–4 server-bound under h2load, 5–6 in-process, 7 over gRPC with the bench's node:http2 gRPC client, 8 a burst sent by h2load. */
export type CaseNumber = 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8;

/** Every case, in order. */
export const allCases: readonly CaseNumber[] = [1, 2, 3, 4, 5, 6, 7, 8];

/** How much to measure; `--full` for the long run, quick by default. */
export interface BenchOptions {
  readonly mode: "quick" | "full";
  /** Rounds over which the cases are interleaved; figures are medians over rounds. */
  readonly rounds: number;
  /** Seconds of unmeasured load before each server-bound measurement. */
  readonly warmupS: number;
  /** Seconds of measured load per server-bound measurement, over all its slices. */
  readonly measureS: number;
  /**
   * Slices a measurement is cut into: the variants compared with each other take them in turn
   * (see measureGroup), so that a slow patch of the shared machine falls on all of them.
   */
  readonly slices: number;
  /** Tools the registry-scale case registers. */
  readonly registryTools: number;
  /** Registry sizes at which ListTools latency is measured; the first is the baseline. */
  readonly listCheckpoints: readonly number[];
  readonly watchers: number;
  /** Concurrent builtin.sleep runs of the concurrency case, and how long each sleeps. */
  readonly concurrentRuns: number;
  readonly sleepMs: number;
  /** Tools in the server's default registry at the end of the registration case (7), built-in ones included. */
  readonly wireRegistryTools: number;
  /** StartExecution calls in the admission burst (8), and how long each run of builtin.sleep sleeps. */
  readonly burstRuns: number;
  readonly burstSleepMs: number;
  /** The cases to run. */
  readonly cases: ReadonlySet<CaseNumber>;
  /** Instead of the cases: CPU-profile the toolruntime server under case 1's load, or the wire cases chosen. */
  readonly profile: boolean;
  /** Seed of the order of the cases in each round. */
  readonly seed: number;
}

/** Usage text of `npm run bench -- --help`. */
export const usage = `npm run bench [-- options]
  --full          the long run: 5 rounds, 100,000 tools, 10,000 concurrent runs, a burst of 500 ms runs
                  each round (quick: 3 rounds, 20,000 tools in process, 19,500 timed over gRPC in two windows,
                  2,000 runs, two bursts
                  a burst of 100 ms runs each round;
                  case 7 fills the registry to 100,000 tools over gRPC in both modes)
  --rounds N      rounds to interleave the cases over
  --cases LIST    only these cases, e.g. 1,4 (1 gRPC overhead, 2 HTTP overhead, 3 RunTool stream,
                  4 MCP peer, 5 registry scale in process, 6 concurrency in process,
                  7 registrations over gRPC, 8 admission burst over gRPC)
  --profile       CPU-profile the toolruntime server (and its baseline) under the load of case 1, or of the
                  wire cases named by --cases (1–4), and list where the time goes
  --seed N        seed of the order of the cases in each round
`;

/** Reads the bench's command line. Throws on an unknown flag or a bad value. */
export function readOptions(argv: readonly string[]): BenchOptions & { readonly help: boolean } {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      full: { type: "boolean", default: false },
      rounds: { type: "string" },
      cases: { type: "string", default: allCases.join(",") },
      profile: { type: "boolean", default: false },
      seed: { type: "string", default: "1" },
      help: { type: "boolean", default: false },
    },
  });
  const full = values.full;
  const cases = new Set<CaseNumber>();
  for (const text of values.cases.split(",")) {
    const number = Number(text.trim());
    if (!allCases.includes(number as CaseNumber)) throw new Error(`--cases: ${JSON.stringify(text)} is not a case 1–8`);
    cases.add(number as CaseNumber);
  }
  const rounds = Number(values.rounds ?? (full ? 5 : 3));
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: ${values.rounds} is not a positive integer`);
  const registryTools = full ? 100_000 : 20_000;
  return {
    help: values.help,
    mode: full ? "full" : "quick",
    rounds,
    warmupS: full ? 5 : 1.5,
    measureS: full ? 5 : 3,
    slices: full ? 5 : 3,
    registryTools,
    listCheckpoints: [1_000, 10_000, registryTools],
    watchers: 1_000,
    concurrentRuns: full ? 10_000 : 2_000,
    sleepMs: 1_000,
    wireRegistryTools: full ? 100_000 : 20_000,
    burstRuns: 10_000,
    burstSleepMs: full ? 500 : 100,
    cases,
    profile: values.profile,
    seed: Number(values.seed),
  };
}
