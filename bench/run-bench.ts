import { mkdtemp, rm } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { toolruntimeArgs } from "./cases/launch-server.js";
import { serverNodeFlags } from "../src/server-node-flags.js";
import { measureGroup } from "./cases/measure-group.js";
import { probeNoopResponses, type NoopResponses } from "./cases/probe-response.js";
import { runConcurrency, runRegistryScale } from "./cases/run-inproc.js";
import { wireVariants } from "./cases/wire-variants.js";
import type { WindowCheck } from "./cases/server-counters.js";
import { ensureH2load } from "./lib/ensure-h2load.js";
import { seededRandom, shuffled } from "./lib/seeded-random.js";
import type { MachineLoad } from "./lib/machine-load.js";
import { allCases, readOptions, usage, type BenchOptions } from "./options.js";
import { planRounds, type Step } from "./plan-rounds.js";
import { renderProfile } from "./profile/profile-markdown.js";
import { profileVariant } from "./profile/profile-server.js";
import { formatFigure } from "./report/format-number.js";
import { inprocessRatioDefinitions } from "./report/inproc-ratio-definitions.js";
import { renderMarkdown } from "./report/markdown.js";
import { ratioDefinitions } from "./report/ratio-definitions.js";
import type { RoundResults, WindowRecord } from "./report/round-results.js";
import { summarizeRatios, summarizeVariants } from "./report/summarize.js";
import { wireRatioDefinitions } from "./report/wire-ratio-definitions.js";
import { writeResults } from "./report/write-results.js";
import { measureAdmission } from "./wire/admission-burst.js";
import { measureRegistration } from "./wire/registration.js";

const log = (line: string): void => void process.stdout.write(`${line}\n`);
const describeLoad = (load: MachineLoad): string =>
  `machine ${load.busyPct.toFixed(0)}% busy (others ${load.otherCores.toFixed(2)} cores), load ${load.loadAvg1m.toFixed(2)}`;
const describeCheck = (check: WindowCheck): string => {
  const server = check.server
    ? `server OK ${check.server.rpcByCode["OK"] ?? "–"} calls / ${check.server.runsByOutcome["success"] ?? "–"} runs`
    : "no server counters";
  return check.verified ? `verified (${server})` : `NOT VERIFIED: ${check.problems.join("; ")}`;
};
const stamp = (date: Date): string => date.toISOString().replace(/[:.]/g, "-").slice(0, 19);

async function runStep(
  step: Step,
  round: RoundResults,
  windows: WindowRecord[],
  options: BenchOptions,
  workDir: string,
  echo: NoopResponses,
  random: () => number,
) {
  const record = (name: string, figure: string, check: WindowCheck, machine: MachineLoad): void =>
    void windows.push({ round: round.round, name, figure, check, machine });
  switch (step.kind) {
    case "wire": {
      const measured = await measureGroup(step.variants, { ...options, workDir, echo }, (items) =>
        shuffled(items, random),
      );
      const lines = measured.map((m) => {
        round.wire.push(m);
        record(m.id, `${formatFigure(m.callsPerSecond)} calls/s`, m.check, m.machine);
        const slices = m.slices.map((slice) => formatFigure(slice.callsPerSecond)).join(" / ");
        return `${m.id}: ${formatFigure(m.callsPerSecond)} calls/s (slices ${slices}), p50 ${formatFigure(m.p50Ms)} ms, p99 ${formatFigure(m.p99Ms)} ms, ${formatFigure(m.cpuMsPerCall)} CPU ms/call, ${describeCheck(m.check)}, ${describeLoad(m.machine)}`;
      });
      return lines.join("\n  ");
    }
    case "concurrency": {
      const c = (round.concurrency = await runConcurrency(options));
      return `concurrency: ${c.runs} runs, ${formatFigure(c.toolruntime.heapBytesPerRun)} B/run (bare ${formatFigure(c.bare.heapBytesPerRun)}), ELD p99 ${formatFigure(c.toolruntime.eventLoopDelayP99Ms)} ms, ${c.toolruntime.errors} errors`;
    }
    case "registry": {
      const r = (round.registry = await runRegistryScale(options));
      return `registry: ${formatFigure(r.registrationsPerSecond)} registrations/s, ${formatFigure(r.heapBytesPerTool)} B/tool, fan-out ${formatFigure(r.fanout.allReceivedMs)} ms`;
    }
    case "registration": {
      const r = (round.registration = await measureRegistration({
        tools: options.wireRegistryTools,
        baselineFirst: round.round % 2 === 0,
        measureMemory: step.measureMemory,
      }));
      const figure = `${formatFigure(r.registrationsPerSecond)} registrations/s`;
      const firstFigure = `${formatFigure(r.first.registrationsPerSecond)} registrations/s`;
      record("RegisterTool over gRPC (case 7), a fresh server's first window", firstFigure, r.check, r.first.machine);
      record("RegisterTool over gRPC (case 7), the second window", figure, r.check, r.machine);
      return `registration over gRPC: first window ${firstFigure} (bare ${formatFigure(r.first.baselinePerSecond)}), second ${figure} (bare ${formatFigure(r.baselinePerSecond)}), ${r.memory ? `RSS at 100,000 tools ${formatFigure(r.memory.rssBytes / 1e6)} MB, settled ${formatFigure(r.memory.rssAt100kBytes / 1e6)} MB after ${formatFigure(r.memory.settleMs / 1000)} s, ` : ""}${describeCheck(r.check)}, ${describeLoad(r.machine)}`;
    }
    case "admission": {
      const a = (round.admission = await measureAdmission({
        runs: options.burstRuns,
        sleepMs: options.burstSleepMs,
        baselineFirst: round.round % 2 === 0,
      }));
      const figure = `${formatFigure(a.admissionsPerSecond)} admissions/s`;
      const firstFigure = `${formatFigure(a.first.admissionsPerSecond)} admissions/s`;
      record("StartExecution bursts over gRPC (case 8), a fresh server's first", firstFigure, a.check, a.first.machine);
      record("StartExecution bursts over gRPC (case 8), the second", figure, a.check, a.machine);
      return `admission bursts: first ${firstFigure} (bare ${formatFigure(a.first.baselinePerSecond)}), event-loop p99 ${formatFigure(a.first.eventLoopP99Ms)} ms; second ${figure} (bare ${formatFigure(a.baselinePerSecond)}), event-loop p99 ${formatFigure(a.eventLoopP99Ms)} ms, GetTool p99 ${formatFigure(a.getToolBurstP99Ms)} ms, all ended in ${formatFigure(a.drainMs)} ms, ${describeCheck(a.check)}, ${describeLoad(a.machine)}`;
    }
  }
}

async function runCases(options: BenchOptions, h2load: string): Promise<void> {
  const startedAt = new Date();
  const began = performance.now();
  const workDir = await mkdtemp(join(tmpdir(), "toolruntime-bench-"));
  try {
    const needsEcho = [1, 2, 3].some((n) => options.cases.has(n as 1 | 2 | 3));
    const echo = needsEcho ? await probeNoopResponses() : { execute: Buffer.alloc(0), runTool: [] };
    if (needsEcho) {
      const streamBytes = echo.runTool.reduce((sum, message) => sum + message.length, 0);
      log(
        `ExecuteToolResponse of builtin.noop: ${echo.execute.length} bytes; RunTool: ${echo.runTool.length} events, ${streamBytes} bytes; the echo baselines answer with them`,
      );
    }
    const plan = planRounds(options);
    // The order of the slices within a group (planRounds draws its own, from the same seed).
    const random = seededRandom(options.seed + 1);
    const rounds: RoundResults[] = [];
    const windows: WindowRecord[] = [];
    for (const [index, steps] of plan.entries()) {
      const round: RoundResults = { round: index + 1, wire: [] };
      rounds.push(round);
      for (const [position, step] of steps.entries()) {
        const stepBegan = performance.now();
        const line = await runStep(step, round, windows, options, workDir, echo, random);
        const seconds = ((performance.now() - stepBegan) / 1000).toFixed(1);
        log(`[round ${index + 1}/${plan.length}, ${position + 1}/${steps.length}] ${line} (${seconds} s)`);
      }
    }
    const variants = summarizeVariants(rounds);
    const definitions = [...ratioDefinitions, ...inprocessRatioDefinitions(options), ...wireRatioDefinitions(options)];
    const ratios = summarizeRatios(rounds, definitions);
    const elapsedS = (performance.now() - began) / 1000;
    const facts = {
      mode: options.mode,
      rounds: options.rounds,
      startedAt: startedAt.toISOString(),
      elapsedS,
      node: process.version,
      h2load,
      cpus: `${cpus().length} × ${cpus()[0]?.model.trim() ?? "CPU"}`,
      warmupS: options.warmupS,
      measureS: options.measureS,
      slices: options.slices,
      serverCommand: ["node", ...serverNodeFlags, "dist/src/main.js", ...toolruntimeArgs].join(" "),
      concurrencyErrors: rounds.reduce(
        (sum, r) => sum + (r.concurrency ? r.concurrency.toolruntime.errors + r.concurrency.bare.errors : 0),
        0,
      ),
    };
    const markdown = renderMarkdown({ facts, variants, ratios, definitions, rounds, windows });
    const data = { facts, options: { ...options, cases: [...options.cases] }, ratios, variants, rounds, windows };
    const paths = await writeResults(`${options.mode}-${stamp(startedAt)}`, options.mode, markdown, data);
    log(`\n${markdown}`);
    log(`Written: ${paths.markdown} and ${paths.json}`);
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/** The variants profiled for each wire case: the toolruntime's, then its baseline's. */
const profiledVariants = {
  1: ["toolruntime-grpc", "grpc-echo"],
  2: ["toolruntime-connect-proto", "connect-echo-proto"],
  3: ["toolruntime-runtool", "grpc-echo-stream"],
  4: ["toolruntime-mcp", "mcp-noop"],
} as const;

async function runProfile(options: BenchOptions): Promise<void> {
  const echo = await probeNoopResponses();
  const settings = { warmupS: options.warmupS, measureS: Math.max(options.measureS, 5), echo };
  // Case 1 unless --cases names wire cases: each profiled beside its baseline.
  const chosen = [...options.cases].filter((n) => n in profiledVariants);
  const cases = options.cases.size === allCases.length || chosen.length === 0 ? [1] : chosen;
  const sections = [
    `# Where the time goes: CPU profiles under the load of case ${cases.join(", ")}`,
    "",
    "Self time of the server's main thread (`node --cpu-prof`) while under load (warm-up and measurement; start-up left out), idle time left out; µs/call divides by the calls served in that time.",
    "",
  ];
  for (const id of cases.flatMap((n) => profiledVariants[n as keyof typeof profiledVariants])) {
    const variant = wireVariants.find((v) => v.id === id);
    if (variant) sections.push(renderProfile(await profileVariant(variant, settings)));
  }
  const markdown = sections.join("\n");
  const startedAt = new Date();
  const paths = await writeResults(`profile-${stamp(startedAt)}`, "profile", markdown, { markdown });
  log(markdown);
  log(`Written: ${paths.markdown}`);
}

async function main(): Promise<void> {
  const options = readOptions(process.argv.slice(2));
  if (options.help) {
    process.stdout.write(usage);
    return;
  }
  const needsH2load = options.profile || [1, 2, 3, 4].some((n) => options.cases.has(n as 1 | 2 | 3 | 4));
  const h2load = needsH2load ? ensureH2load(log) : "h2load not used";
  if (options.profile) await runProfile(options);
  else await runCases(options, h2load);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
