import { stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
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
import type { WireVariant, VariantId } from "./wire-variants.js";

/** How long to load a server. */
export interface LoadSettings {
  /** Seconds of load before the measurement, to warm the JIT (not measured). */
  readonly warmupS: number;
  /** Seconds of measured load. */
  readonly measureS: number;
  /** A scratch directory for body files and h2load logs. */
  readonly workDir: string;
  /** What the echo baselines answer with: real responses of builtin.noop (see probe-response.ts). */
  readonly echo: NoopResponses;
}

/** One measurement of one variant in a fresh server process. */
export interface VariantMeasurement {
  readonly id: VariantId;
  readonly callsPerSecond: number;
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

function checkOf(variant: WireVariant, loaded: H2loadResult, before?: CounterReading, after?: CounterReading) {
  const counts = { claimedOk: loaded.succeeded, cutOff: loaded.cutOff, generatorErrors: loaded.failed + loaded.non2xx };
  return checkWindow(variant.scope ?? {}, counts, before && after ? countsBetween(before, after) : undefined);
}

/**
 * Starts the variant's server, checks one call for correctness, warms it up, then measures h2load's
 * rate and latency, the server's CPU time and the machine's load, reads the server's counters of OK
 * and non-OK calls before and after the warm-up and the window, and stops the server.
 */
export async function measureVariant(variant: WireVariant, settings: LoadSettings): Promise<VariantMeasurement> {
  const server = await launchServer(variant.server, {
    echoResponse: settings.echo.execute,
    echoStream: settings.echo.runTool,
  });
  try {
    const baseUrl = variant.port === "grpc" ? server.grpcUrl : server.httpUrl;
    if (!baseUrl) throw new Error(`${variant.server} has no ${variant.port} port`);
    const bodyFile = join(settings.workDir, `${variant.id}.body`);
    await writeFile(bodyFile, variant.body);
    const url = `${baseUrl}${variant.path}`;
    const checked = await variant.check(baseUrl, { url, headers: variant.headers, body: variant.body });
    const run = (durationS: number): H2loadRun => ({
      url,
      bodyFile,
      headers: variant.headers,
      clients: variant.clients,
      streamsPerClient: variant.streamsPerClient,
      durationS,
      http1: variant.http1,
      logFile: join(settings.workDir, `${variant.id}.log`),
    });
    const beforeWarmup = await countersOf(variant, server);
    const warmup = settings.warmupS > 0 ? await runH2load(run(settings.warmupS)) : undefined;
    const beforeWindow = await countersOf(variant, server);
    const logBefore = await fileSize(server.logFile);
    const window = openLoadWindow();
    const cpuBefore = readProcessCpuMs(server.process.pid);
    const loaded = await runH2load(run(settings.measureS));
    const cpuAfter = readProcessCpuMs(server.process.pid);
    if (cpuBefore === undefined || cpuAfter === undefined) throw new Error(`${variant.id}: the server died under load`);
    const machine = window.close(cpuAfter - cpuBefore + loaded.loadGeneratorCpuMs);
    const afterWindow = await countersOf(variant, server);
    const logAfter = await fileSize(server.logFile);
    const measured = checkOf(variant, loaded, beforeWindow, afterWindow);
    const warmed = warmup ? checkOf(variant, warmup, beforeWarmup, beforeWindow) : undefined;
    const problems = [...measured.problems, ...(warmed?.problems ?? []).map((problem) => `warm-up: ${problem}`)];
    const wallMs = settings.measureS * 1000;
    return {
      id: variant.id,
      callsPerSecond: loaded.requestsPerSecond,
      p50Ms: loaded.p50Ms,
      p99Ms: loaded.p99Ms,
      cpuMsPerCall: loaded.succeeded > 0 ? (cpuAfter - cpuBefore) / loaded.succeeded : Number.NaN,
      serverCores: (cpuAfter - cpuBefore) / wallMs,
      loadGeneratorCores: loaded.loadGeneratorCpuMs / wallMs,
      succeeded: loaded.succeeded,
      errors: loaded.failed + loaded.non2xx,
      messagesPerCall: checked.messagesPerCall,
      check: { ...measured, verified: problems.length === 0, problems },
      machine,
      ...(server.logFile ? { logBytesPerCall: (logAfter - logBefore) / Math.max(1, loaded.succeeded) } : {}),
    };
  } finally {
    await server.stop();
  }
}
