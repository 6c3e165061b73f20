import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runH2load, type H2loadRun } from "../lib/h2load.js";
import { readProcessCpuMs } from "../lib/proc-cpu.js";
import { launchServer } from "./launch-server.js";
import type { WireVariant, VariantId } from "./wire-variants.js";

/** How long to load a server. */
export interface LoadSettings {
  /** Seconds of load before the measurement, to warm the JIT (not measured). */
  readonly warmupS: number;
  /** Seconds of measured load. */
  readonly measureS: number;
  /** A scratch directory for body files and h2load logs. */
  readonly workDir: string;
  /** The response of the echo baselines: a real ExecuteToolResponse of builtin.noop. */
  readonly echoResponse: Buffer;
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
}

/**
 * Starts the variant's server, checks one call for correctness, warms it up, then measures h2load's
 * rate and latency and the server's CPU time under load, and stops the server.
 */
export async function measureVariant(variant: WireVariant, settings: LoadSettings): Promise<VariantMeasurement> {
  const server = await launchServer(variant.server, { echoResponse: settings.echoResponse });
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
    if (settings.warmupS > 0) await runH2load(run(settings.warmupS));
    const cpuBefore = readProcessCpuMs(server.process.pid);
    const loaded = await runH2load(run(settings.measureS));
    const cpuAfter = readProcessCpuMs(server.process.pid);
    if (cpuBefore === undefined || cpuAfter === undefined) throw new Error(`${variant.id}: the server died under load`);
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
    };
  } finally {
    await server.process.stop();
  }
}
