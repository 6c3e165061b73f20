import { fork } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  ExecutionService,
  ExecutionState,
  StartExecutionRequestSchema,
} from "../../gen/toolruntime/v1/execution_pb.js";
import { grpcHeaders } from "../cases/request-bodies.js";
import { launchServer, type LaunchedServer } from "../cases/launch-server.js";
import {
  checkWindow,
  countsBetween,
  readCounters,
  readSettledCounters,
  type CounterScope,
  type WindowCheck,
} from "../cases/server-counters.js";
import { callMethod, openBytesClients, pathOf, sendAll, type BytesClients } from "../lib/grpc-bytes-client.js";
import { frameMessage } from "../lib/grpc-frame.js";
import { runH2load, type H2loadResult } from "../lib/h2load.js";
import { openLoadWindow, type MachineLoad } from "../lib/machine-load.js";
import { scrapeMetrics, valueOf } from "../lib/metrics-text.js";
import { readProcessCpuMs } from "../lib/proc-cpu.js";
import type { FailedCall } from "../lib/send-result.js";
import { percentileOfSorted } from "../lib/stats.js";

/** What the admission case (8) measured: a burst of StartExecution over gRPC and its runs' fates. */
export interface AdmissionResult {
  readonly runs: number;
  readonly sleepMs: number;
  readonly connections: number;
  readonly inFlightPerConnection: number;
  /** Runs admitted (StartExecution answered) per second of the burst. */
  readonly admissionsPerSecond: number;
  /** Baseline: a bare grpc-js server answering the same bytes to the same h2load burst. */
  readonly baselinePerSecond: number;
  readonly serverCpuMsPerAdmission: number;
  /** The load generator's (h2load's) CPU time over the burst's wall time. */
  readonly loadGeneratorCores: number;
  /** The server's event-loop delay during the burst (prom-client's gauges, reset at each scrape). */
  readonly eventLoopP99Ms: number;
  readonly eventLoopMaxMs: number;
  /** GetTool latency seen by a separate process, one call at a time: in the second before, and during the burst. */
  readonly getToolIdleP99Ms: number;
  readonly getToolBurstP99Ms: number;
  readonly getToolBurstCalls: number;
  /** From the burst's first call until the server counted every run ended. */
  readonly drainMs: number;
  /** runs × sleepMs ÷ the server's max_concurrent_runs: the least time the runs can take. */
  readonly idealDrainMs: number;
  readonly maxConcurrentRuns: number;
  /** The runs' outcomes by the server's counters (`toolruntime_executions_total` of the tool). */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Runs of the burst that ListExecutions lists as SUCCEEDED (every one must be). */
  readonly listedSucceeded: number;
  /** The burst's StartExecution calls and every run's outcome against the server's counters. */
  readonly check: WindowCheck;
  readonly machine: MachineLoad;
}

/** Options of {@link measureAdmission}. */
export interface AdmissionOptions {
  /** StartExecution calls in the burst, each a run of builtin.sleep. */
  readonly runs: number;
  /** How long each run sleeps, in milliseconds. */
  readonly sleepMs: number;
  /** Whether the baseline's burst goes before the subject's (alternate it over rounds). */
  readonly baselineFirst: boolean;
}

const connections = 8;
const inFlightPerConnection = 64;
const sleepTool = "builtin.sleep";
const startPath = pathOf(ExecutionService.method.startExecution);
const scope: CounterScope = {
  rpc: { service: "toolruntime.v1.ExecutionService", method: "StartExecution", protocol: "grpc" },
  tool: sleepTool,
};
const proberScript = fileURLToPath(new URL("./get-tool-prober.js", import.meta.url));

function startBody(toolName: string, inputs: Record<string, number>): Buffer {
  return Buffer.from(toBinary(StartExecutionRequestSchema, create(StartExecutionRequestSchema, { toolName, inputs })));
}

/** A body file holding one framed StartExecution request, as h2load sends it. */
async function bodyFile(workDir: string, name: string, toolName: string, inputs: Record<string, number>) {
  const path = join(workDir, name);
  await writeFile(path, frameMessage(startBody(toolName, inputs)));
  return path;
}

function hostPort(url: string | undefined): string {
  if (!url) throw new Error("the server has no gRPC port");
  return url.replace(/^http:\/\//, "");
}

function p99(values: readonly number[]): number {
  return percentileOfSorted(Float64Array.from(values).sort(), 99);
}

function failures(what: string, failed: readonly FailedCall[]): string[] {
  const first = failed[0];
  return first ? [`${what}: ${failed.length} calls failed, e.g. code ${first.code}: ${first.details}`] : [];
}

/** A GetTool prober in its own process (see get-tool-prober.ts). */
async function startProber(address: string) {
  const child = fork(proberScript, [address, sleepTool], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const [ready] = (await once(child, "message")) as [{ ready?: boolean }];
  if (!ready.ready) throw new Error("the GetTool prober did not start");
  return {
    /** CPU time the prober has used so far, in milliseconds. */
    cpuMs: () => (child.pid === undefined ? Number.NaN : (readProcessCpuMs(child.pid) ?? Number.NaN)),
    phase: (phase: "idle" | "burst") => child.send({ phase }),
    stop: async () => {
      const answer = once(child, "message") as Promise<[{ idle: number[]; burst: number[]; failures: number }]>;
      child.send({ phase: "stop" });
      const [result] = await answer;
      return result;
    },
    kill: () => child.kill(),
  };
}

/** Waits until the server counted `runs` more ended runs of the tool than `before`; the time it took. */
async function awaitRunsEnded(httpUrl: string, runs: number, before: number, timeoutMs: number): Promise<number> {
  const began = performance.now();
  for (;;) {
    const ended = Object.values(readCounters(await scrapeMetrics(httpUrl), scope).runsByOutcome).reduce(
      (sum, value) => sum + value,
      0,
    );
    if (ended - before >= runs) return performance.now() - began;
    if (performance.now() - began > timeoutMs) {
      throw new Error(`admission: ${ended - before} of ${runs} runs ended within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The ids of the tool's runs ListExecutions lists as SUCCEEDED, every page. */
async function listSucceeded(clients: BytesClients): Promise<Set<string>> {
  const client = clients.connections[0];
  if (!client) throw new Error("no connection");
  const ids = new Set<string>();
  let pageToken = "";
  do {
    const page = await callMethod(client, ExecutionService.method.listExecutions, {
      toolName: sleepTool,
      state: ExecutionState.SUCCEEDED,
      pageSize: 1000,
      pageToken,
    });
    for (const execution of page.executions) ids.add(execution.executionId);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return ids;
}

/** The burst's requests, as h2load sends them: `requests` StartExecution calls of `bodyFile`. */
function burst(
  grpcUrl: string | undefined,
  bodyFile: string,
  requests: number,
  workDir: string,
): Promise<H2loadResult> {
  if (!grpcUrl) throw new Error("the server has no gRPC port");
  return runH2load({
    url: `${grpcUrl}${startPath}`,
    bodyFile,
    headers: grpcHeaders,
    clients: connections,
    streamsPerClient: inFlightPerConnection,
    durationS: 0,
    requests,
    logFile: join(workDir, "h2load.log"),
  });
}

/** What h2load itself saw go wrong (gRPC statuses are checked on the server's counters). */
function h2loadProblems(what: string, result: H2loadResult, requests: number): string[] {
  const bad = result.failed + result.non2xx + (requests - result.succeeded - result.failed);
  return bad > 0 ? [`${what}: ${bad} of ${requests} requests failed or got no 2xx (${result.summary})`] : [];
}

async function burstBaseline(
  sample: Buffer,
  bodyFile: string,
  runs: number,
  workDir: string,
): Promise<{ perSecond: number; problems: string[] }> {
  const baseline: LaunchedServer = await launchServer("grpc-echo", { echoPath: startPath, echoResponse: sample });
  try {
    const warm = await burst(baseline.grpcUrl, bodyFile, 1000, workDir);
    const sent = await burst(baseline.grpcUrl, bodyFile, runs, workDir);
    return {
      perSecond: sent.requestsPerSecond,
      problems: [...h2loadProblems("baseline warm-up", warm, 1000), ...h2loadProblems("baseline", sent, runs)],
    };
  } finally {
    await baseline.stop();
  }
}

/**
 * A burst of `runs` StartExecution calls of builtin.sleep over gRPC (512 in flight: 8 connections ×
 * 64), sent by h2load (a grpc-js client in Node tops out near 3,000 calls/s here even against a
 * bare server, so it measured itself), on a fresh toolruntime in its default configuration:
 * admissions per second, the server's event-loop delay during the burst (from its /metrics), and
 * GetTool latency measured meanwhile by another process. Then every run must end SUCCEEDED:
 * checked on the server's counters (StartExecution calls by code, the tool's runs by outcome) and
 * by listing the runs. The baseline is a bare grpc-js server answering the same request bytes
 * with a real StartExecutionResponse, under the same h2load burst.
 */
export async function measureAdmission(options: AdmissionOptions): Promise<AdmissionResult> {
  const server = await launchServer("toolruntime");
  const workDir = await mkdtemp(join(tmpdir(), "toolruntime-burst-"));
  let clients: BytesClients | undefined;
  let prober: Awaited<ReturnType<typeof startProber>> | undefined;
  try {
    const httpUrl = server.httpUrl as string;
    const address = hostPort(server.grpcUrl);
    clients = await openBytesClients(address, connections);
    const first = clients.connections[0];
    if (!first) throw new Error("no connection");
    const capabilities = await callMethod(first, ExecutionService.method.getCapabilities, {});
    // Warm the path up with runs of another tool, so the burst's tool counts only the burst.
    const warmupFile = await bodyFile(workDir, "warm-up", "builtin.noop", {});
    const warmup = await burst(server.grpcUrl, warmupFile, 1000, workDir);
    const burstFile = await bodyFile(workDir, "burst", sleepTool, { ms: options.sleepMs });
    const sampleCall = await sendAll(clients, startPath, [startBody(sleepTool, { ms: 0 })], 1);
    const sample = sampleCall.responses[0];
    if (!sample)
      throw new Error(`admission: the sample call failed: ${failures("sample", sampleCall.failed).join("")}`);
    await awaitRunsEnded(httpUrl, 1, 0, 10_000); // the sample run, before the counters are read
    const baseline = options.baselineFirst ? await burstBaseline(sample, burstFile, options.runs, workDir) : undefined;
    const listedBefore = await listSucceeded(clients);

    prober = await startProber(address);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = await readSettledCounters(httpUrl, scope); // its scrapes also reset the event-loop gauges
    const endedBefore = Object.values(before.runsByOutcome).reduce((sum, value) => sum + value, 0);
    prober.phase("burst");
    const window = openLoadWindow();
    const cpuBefore = readProcessCpuMs(server.process.pid) ?? Number.NaN;
    const proberCpuBefore = prober.cpuMs();
    const burstStarted = performance.now();
    const sent = await burst(server.grpcUrl, burstFile, options.runs, workDir);
    const burstMs = performance.now() - burstStarted;
    const duringBurst = await scrapeMetrics(httpUrl);
    const cpuAfter = readProcessCpuMs(server.process.pid) ?? Number.NaN;
    const proberCpuMs = prober.cpuMs() - proberCpuBefore;
    const machine = window.close(cpuAfter - cpuBefore + sent.loadGeneratorCpuMs + proberCpuMs);
    const probes = await prober.stop();
    prober = undefined;

    const idealDrainMs = (options.runs * options.sleepMs) / capabilities.maxConcurrentRuns;
    await awaitRunsEnded(httpUrl, options.runs, endedBefore, idealDrainMs * 5 + 60_000);
    const drainMs = performance.now() - burstStarted;
    const after = await readSettledCounters(httpUrl, scope);
    // h2load does not read the responses: the runs the burst made are the ones listed now and not before.
    const listed = await listSucceeded(clients);
    const listedSucceeded = [...listed].filter((id) => !listedBefore.has(id)).length;
    const theirs = baseline ?? (await burstBaseline(sample, burstFile, options.runs, workDir));

    const delta = countsBetween(before, after);
    const h2loadFailed = options.runs - sent.succeeded;
    const counted = checkWindow(scope, { claimedOk: sent.succeeded, cutOff: 0, generatorErrors: h2loadFailed }, delta);
    const problems = [
      ...counted.problems,
      ...h2loadProblems("warm-up", warmup, 1000),
      ...h2loadProblems("burst", sent, options.runs),
      ...theirs.problems,
      ...(listedSucceeded === options.runs
        ? []
        : [`ListExecutions lists ${listedSucceeded} of the burst's ${options.runs} runs as SUCCEEDED`]),
      ...(probes.failures > 0 ? [`${probes.failures} GetTool probes failed`] : []),
    ];
    return {
      runs: options.runs,
      sleepMs: options.sleepMs,
      connections,
      inFlightPerConnection,
      admissionsPerSecond: sent.requestsPerSecond,
      baselinePerSecond: theirs.perSecond,
      serverCpuMsPerAdmission: (cpuAfter - cpuBefore) / options.runs,
      loadGeneratorCores: sent.loadGeneratorCpuMs / burstMs,
      eventLoopP99Ms: valueOf(duringBurst, "nodejs_eventloop_lag_p99_seconds") * 1000,
      eventLoopMaxMs: valueOf(duringBurst, "nodejs_eventloop_lag_max_seconds") * 1000,
      getToolIdleP99Ms: p99(probes.idle),
      getToolBurstP99Ms: p99(probes.burst),
      getToolBurstCalls: probes.burst.length,
      drainMs,
      idealDrainMs,
      maxConcurrentRuns: capabilities.maxConcurrentRuns,
      outcomes: delta.runsByOutcome,
      listedSucceeded,
      check: { ...counted, verified: problems.length === 0, problems },
      machine,
    };
  } finally {
    prober?.kill();
    clients?.close();
    await server.stop();
    await rm(workDir, { recursive: true, force: true });
  }
}
