import { stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { runH2load, type H2loadResult, type H2loadRun } from "../lib/h2load.js";
import { openLoadWindow, type MachineLoad } from "../lib/machine-load.js";
import { readProcessCpuMs } from "../lib/proc-cpu.js";
import { launchServer, type LaunchedServer } from "./launch-server.js";
import {
  checkWindow,
  countsBetween,
  readSettledCounters,
  type CounterReading,
  type WindowCheck,
} from "./server-counters.js";
import type { NoopResponses } from "./probe-response.js";
import { loadRunOf, type VariantId, type WireVariant } from "./wire-variants.js";

/** How long to load a server. */
export interface LoadSettings {
  /** Seconds of load before the measurement, to warm the JIT (not measured). */
  readonly warmupS: number;
  /** Seconds of measured load per variant, over all its slices. */
  readonly measureS: number;
  /** A scratch directory for body files and h2load logs. */
  readonly workDir: string;
  /** What the echo baselines answer with: real responses of builtin.noop (see probe-response.ts). */
  readonly echo: NoopResponses;
  /** Slices the measured seconds are cut into, each variant of a group taking one in turn. */
  readonly slices: number;
}

/** One measurement of one variant in a fresh server process. */
export interface VariantMeasurement {
  readonly id: VariantId;
  readonly callsPerSecond: number;
  /**
   * Each slice's calls/s and server CPU per call (ms), in the order measured: a full collection of
   * V8's, or the re-optimization after it, shows as one slow slice (see docs/design-notes.md, "What
   * a full collection costs a slice").
   */
  readonly slices: readonly { readonly callsPerSecond: number; readonly cpuMsPerCall: number }[];
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Server CPU time (user + system, all threads) per successful call, in milliseconds. */
  readonly cpuMsPerCall: number;
  /** Server CPU time over wall time during the measurement: 1 is one core. */
  readonly serverCores: number;
  /** h2load's CPU time over wall time: near 1 would mean the load generator limits the rate. */
  readonly loadGeneratorCores: number;
  readonly succeeded: number;
  /** Failed, errored, timed-out and non-2xx requests: must be 0. */
  readonly errors: number;
  /** Messages per response (RunTool events per run; 1 for unary calls), from the correctness check. */
  readonly messagesPerCall: number;
  /**
   * The measured window checked against the server's own counters (toolruntime; the baselines keep
   * none, so only h2load's counts), with the warm-up's problems added: a window is verified only
   * when both are clean.
   */
  readonly check: WindowCheck;
  /** How busy the machine was during the measured window. */
  readonly machine: MachineLoad;
  /** Bytes the toolruntime wrote to stdout (its default log) per call in the window. */
  readonly logBytesPerCall?: number;
}

async function fileSize(file: string | undefined): Promise<number> {
  return file === undefined ? Number.NaN : (await stat(file)).size;
}

/** Reads the variant's counters on a toolruntime server; undefined for a baseline server. */
async function countersOf(variant: WireVariant, server: LaunchedServer): Promise<CounterReading | undefined> {
  if (!variant.scope || !server.httpUrl) return undefined;
  return readSettledCounters(server.httpUrl, variant.scope);
}

/** What h2load counted over several runs, for checkWindow. */
interface LoadCounts {
  claimedOk: number;
  cutOff: number;
  generatorErrors: number;
}

function countsOf(runs: readonly H2loadResult[]): LoadCounts {
  const sum = (pick: (run: H2loadResult) => number): number => runs.reduce((total, run) => total + pick(run), 0);
  return {
    claimedOk: sum((run) => run.succeeded),
    cutOff: sum((run) => run.cutOff),
    generatorErrors: sum((run) => run.failed + run.non2xx),
  };
}

/** A variant's server while its group is measured: what it was sent and what it used. */
interface Subject {
  readonly variant: WireVariant;
  readonly server: LaunchedServer;
  readonly run: (durationS: number) => H2loadRun;
  /** Messages per response, from the correctness check. */
  messagesPerCall: number;
  readonly slices: H2loadResult[];
  /** Each slice's calls/s and server CPU per call, for VariantMeasurement.slices. */
  readonly sliceFigures: { callsPerSecond: number; cpuMsPerCall: number }[];
  readonly machine: MachineLoad[];
  cpuMs: number;
  wallMs: number;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

/** The machine's load over a subject's slices: the mean busy share and other cores, the last load average. */
function machineOver(windows: readonly MachineLoad[]): MachineLoad {
  const mean = (pick: (load: MachineLoad) => number): number =>
    windows.reduce((sum, load) => sum + pick(load), 0) / Math.max(1, windows.length);
  const last = windows[windows.length - 1];
  return {
    busyPct: mean((load) => load.busyPct),
    busyCores: mean((load) => load.busyCores),
    otherCores: mean((load) => load.otherCores),
    loadAvg1m: last?.loadAvg1m ?? Number.NaN,
    cpus: last?.cpus ?? Number.NaN,
  };
}

/**
 * Measures the variants of one group (those whose figures are compared with each other) in
 * alternating slices: starts every variant's server, checks one call of each for correctness,
 * warms each up, then loads them in turn, `slices` times (each time in `order`'s shuffled order),
 * for `measureS ÷ slices` seconds each, so that a slow patch of the shared machine falls on
 * every variant of the group rather than on one. A variant's figures cover all of its slices:
 * calls/s and CPU per call from the totals, latencies the medians of the slices'. Its server's
 * counters of OK and non-OK calls are read before and after the warm-up and the slices, and every
 * server is stopped at the end.
 */
export async function measureGroup(
  variants: readonly WireVariant[],
  settings: LoadSettings,
  order: <T>(items: readonly T[]) => T[],
): Promise<VariantMeasurement[]> {
  const subjects: Subject[] = [];
  try {
    for (const variant of variants) {
      const server = await launchServer(variant.server, {
        echoResponse: settings.echo.execute,
        echoStream: settings.echo.runTool,
      });
      const baseUrl = variant.port === "grpc" ? server.grpcUrl : server.httpUrl;
      if (!baseUrl) {
        await server.stop();
        throw new Error(`${variant.server} has no ${variant.port} port`);
      }
      const bodyFile = join(settings.workDir, `${variant.id}.body`);
      const url = `${baseUrl}${variant.path}`;
      const run = loadRunOf(variant, url, { bodyFile, logFile: join(settings.workDir, `${variant.id}.log`) });
      const subject: Subject = {
        variant,
        server,
        run,
        messagesPerCall: 0,
        slices: [],
        sliceFigures: [],
        machine: [],
        cpuMs: 0,
        wallMs: 0,
      };
      subjects.push(subject);
      await writeFile(bodyFile, variant.body);
      const checked = await variant.check(baseUrl, { url, headers: variant.headers, body: variant.body });
      subject.messagesPerCall = checked.messagesPerCall;
    }
    const warmups = new Map<Subject, { before?: CounterReading; warmup?: H2loadResult }>();
    for (const subject of subjects) {
      const before = await countersOf(subject.variant, subject.server);
      const warmup = settings.warmupS > 0 ? await runH2load(subject.run(settings.warmupS)) : undefined;
      warmups.set(subject, { ...(before ? { before } : {}), ...(warmup ? { warmup } : {}) });
    }
    const windowStarts = new Map<Subject, { counters?: CounterReading; log: number }>();
    for (const subject of subjects) {
      const counters = await countersOf(subject.variant, subject.server);
      windowStarts.set(subject, { ...(counters ? { counters } : {}), log: await fileSize(subject.server.logFile) });
    }
    const sliceS = settings.measureS / settings.slices;
    for (let slice = 0; slice < settings.slices; slice++) {
      for (const subject of order(subjects)) {
        const window = openLoadWindow();
        const cpuBefore = readProcessCpuMs(subject.server.process.pid);
        const began = performance.now();
        const loaded = await runH2load(subject.run(sliceS));
        const wallMs = performance.now() - began;
        const cpuAfter = readProcessCpuMs(subject.server.process.pid);
        if (cpuBefore === undefined || cpuAfter === undefined) {
          throw new Error(`${subject.variant.id}: the server died under load`);
        }
        subject.machine.push(window.close(cpuAfter - cpuBefore + loaded.loadGeneratorCpuMs));
        subject.slices.push(loaded);
        subject.sliceFigures.push({
          callsPerSecond: loaded.requestsPerSecond,
          cpuMsPerCall: loaded.succeeded > 0 ? (cpuAfter - cpuBefore) / loaded.succeeded : Number.NaN,
        });
        subject.cpuMs += cpuAfter - cpuBefore;
        subject.wallMs += wallMs;
      }
    }
    return await Promise.all(
      subjects.map(async (subject): Promise<VariantMeasurement> => {
        const { before, warmup } = warmups.get(subject) ?? {};
        const start = windowStarts.get(subject);
        const after = await countersOf(subject.variant, subject.server);
        const scope = subject.variant.scope ?? {};
        const between = (from?: CounterReading, to?: CounterReading) =>
          from && to ? countsBetween(from, to) : undefined;
        const counts = countsOf(subject.slices);
        const measured = checkWindow(scope, counts, between(start?.counters, after));
        const warmed = warmup ? checkWindow(scope, countsOf([warmup]), between(before, start?.counters)) : undefined;
        const problems = [...measured.problems, ...(warmed?.problems ?? []).map((problem) => `warm-up: ${problem}`)];
        const logBytes = (await fileSize(subject.server.logFile)) - (start?.log ?? Number.NaN);
        const generatorCpuMs = subject.slices.reduce((sum, run) => sum + run.loadGeneratorCpuMs, 0);
        return {
          id: subject.variant.id,
          // h2load's own rate of each slice (calls over its measured time, not its start-up), averaged.
          callsPerSecond:
            subject.slices.reduce((sum, run) => sum + run.requestsPerSecond, 0) / Math.max(1, subject.slices.length),
          slices: subject.sliceFigures,
          p50Ms: median(subject.slices.map((run) => run.p50Ms)),
          p99Ms: median(subject.slices.map((run) => run.p99Ms)),
          cpuMsPerCall: counts.claimedOk > 0 ? subject.cpuMs / counts.claimedOk : Number.NaN,
          serverCores: subject.cpuMs / subject.wallMs,
          loadGeneratorCores: generatorCpuMs / subject.wallMs,
          succeeded: counts.claimedOk,
          errors: counts.generatorErrors,
          messagesPerCall: subject.messagesPerCall,
          check: { ...measured, verified: problems.length === 0, problems },
          machine: machineOver(subject.machine),
          ...(subject.server.logFile ? { logBytesPerCall: logBytes / Math.max(1, counts.claimedOk) } : {}),
        };
      }),
    );
  } finally {
    await Promise.all(subjects.map((subject) => subject.server.stop()));
  }
}
