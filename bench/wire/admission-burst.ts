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
  totalOf,
  type CounterReading,
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

/** The first of a server's two bursts: a fresh server, whose code V8 is still compiling. */
export interface FirstBurst {
  readonly admissionsPerSecond: number;
  /** The bare grpc-js server's first burst (after its own 1,000-call warm-up). */
  readonly baselinePerSecond: number;
  readonly serverCpuMsPerAdmission: number;
  readonly eventLoopP99Ms: number;
  readonly eventLoopMaxMs: number;
  readonly getToolIdleP99Ms: number;
  readonly getToolBurstP99Ms: number;
  readonly drainMs: number;
  readonly machine: MachineLoad;
}

/**
 * What the admission case (8) measured: two bursts of StartExecution over gRPC and their runs'
 * fates. The top-level figures are the second burst's, sent once every run of the first ended: a
 * server under way, as the other cases measure one after their warm-up. The first burst, on a
 * fresh server, is in `first`.
 */
export interface AdmissionResult {
  readonly runs: number;
  readonly sleepMs: number;
  readonly connections: number;
  readonly inFlightPerConnection: number;
  /** Runs admitted (StartExecution answered) per second of the second burst. */
  readonly admissionsPerSecond: number;
  /** Baseline: a bare grpc-js server answering the same bytes to the same h2load bursts (its second). */
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
  /** Both bursts' runs' outcomes by the server's counters (`toolruntime_executions_total` of the tool). */
  readonly outcomes: Readonly<Record<string, number>>;
  /** Runs of the second burst that ListExecutions lists as SUCCEEDED (every one must be; the first's are checked too). */
  readonly listedSucceeded: number;
  /** Both bursts' StartExecution calls and every run's outcome against the server's counters. */
  readonly check: WindowCheck;
  /** The machine during the second burst. */
  readonly machine: MachineLoad;
  readonly first: FirstBurst;
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

/** A GetTool prober in its own process (see get-tool-prober.ts); refused if it is not ready within 10 s. */
async function startProber(address: string) {
  const child = fork(proberScript, [address, sleepTool], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  try {
    const ready = await new Promise<{ ready?: boolean }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the GetTool prober was not ready within 10 s")), 10_000);
      child.once("message", (message: { ready?: boolean }) => {
        clearTimeout(timer);
        resolve(message);
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`the GetTool prober exited (code ${String(code)}) before it was ready`));
      });
    });
    if (!ready.ready) throw new Error("the GetTool prober did not start");
  } catch (error) {
    child.kill();
    throw error;
  }
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
    const ended = totalOf(readCounters(await scrapeMetrics(httpUrl), scope).runsByOutcome);
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

/** The bare baseline's bursts: after the same 1,000-call warm-up, a first and a second burst of the same bytes. */
async function burstBaseline(
  sample: Buffer,
  bodyFile: string,
  runs: number,
  workDir: string,
): Promise<{ firstPerSecond: number; perSecond: number; problems: string[] }> {
  const baseline: LaunchedServer = await launchServer("grpc-echo", { echoPath: startPath, echoResponse: sample });
  try {
    const warm = await burst(baseline.grpcUrl, bodyFile, 1000, workDir);
    const first = await burst(baseline.grpcUrl, bodyFile, runs, workDir);
    // Ours waits for its runs to end and for a prober to start (about 2 s) between its bursts.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const second = await burst(baseline.grpcUrl, bodyFile, runs, workDir);
    return {
      firstPerSecond: first.requestsPerSecond,
      perSecond: second.requestsPerSecond,
      problems: [
        ...h2loadProblems("baseline warm-up", warm, 1000),
        ...h2loadProblems("baseline's first burst", first, runs),
        ...h2loadProblems("baseline's second burst", second, runs),
      ],
    };
  } finally {
    await baseline.stop();
  }
}

/** One burst on the server under test, and what it measured until every one of its runs ended. */
interface BurstWindow {
  readonly sent: H2loadResult;
  /** The server's counters just before the burst (settled). */
  readonly before: CounterReading;
  readonly serverCpuMs: number;
  readonly loadGeneratorCores: number;
  readonly eventLoopP99Ms: number;
  readonly eventLoopMaxMs: number;
  readonly probes: { idle: number[]; burst: number[]; failures: number };
  readonly drainMs: number;
  readonly machine: MachineLoad;
}

/**
 * Sends one burst of `runs` calls of `burstFile` to the server while a GetTool prober times calls,
 * reads the event-loop delay the server saw during it, and waits until every run it started ended.
 */
async function burstWindow(
  server: LaunchedServer,
  burstFile: string,
  runs: number,
  idealDrainMs: number,
  workDir: string,
): Promise<BurstWindow> {
  const httpUrl = server.httpUrl as string;
  let prober: Awaited<ReturnType<typeof startProber>> | undefined;
  try {
    prober = await startProber(hostPort(server.grpcUrl));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = await readSettledCounters(httpUrl, scope); // its scrapes also reset the event-loop gauges
    prober.phase("burst");
    const window = openLoadWindow();
    const cpuBefore = readProcessCpuMs(server.process.pid) ?? Number.NaN;
    const proberCpuBefore = prober.cpuMs();
    const burstStarted = performance.now();
    const sent = await burst(server.grpcUrl, burstFile, runs, workDir);
    const burstMs = performance.now() - burstStarted;
    const duringBurst = await scrapeMetrics(httpUrl);
    const cpuAfter = readProcessCpuMs(server.process.pid) ?? Number.NaN;
    const proberCpuMs = prober.cpuMs() - proberCpuBefore;
    const machine = window.close(cpuAfter - cpuBefore + sent.loadGeneratorCpuMs + proberCpuMs);
    const probes = await prober.stop();
    await awaitRunsEnded(httpUrl, runs, totalOf(before.runsByOutcome), idealDrainMs * 5 + 60_000);
    return {
      sent,
      before,
      serverCpuMs: cpuAfter - cpuBefore,
      loadGeneratorCores: sent.loadGeneratorCpuMs / burstMs,
      eventLoopP99Ms: valueOf(duringBurst, "nodejs_eventloop_lag_p99_seconds") * 1000,
      eventLoopMaxMs: valueOf(duringBurst, "nodejs_eventloop_lag_max_seconds") * 1000,
      probes,
      drainMs: performance.now() - burstStarted,
      machine,
    };
  } finally {
    prober?.kill();
  }
}

/** How many of `listed` were not in `before`. */
function newlyListed(listed: ReadonlySet<string>, before: ReadonlySet<string>): number {
  return [...listed].filter((id) => !before.has(id)).length;
}

/**
 * Two bursts of `runs` StartExecution calls of builtin.sleep over gRPC (512 in flight: 8
 * connections × 64), sent by h2load (a grpc-js client in Node tops out near 3,000 calls/s here even
 * against a bare server, so it measured itself), on a toolruntime in its default configuration:
 * a first on a fresh server (after 1,000 no-op runs), then a second once every run of the first
 * ended. Both are reported and held against the targets: on this two-core machine V8 spends about
 * a second of the other core compiling the server's code during the first (`--trace-opt`), so the
 * first shows a server starting and the second one under way. For each: admissions per second, the
 * server's event-loop delay during the burst (from its /metrics), and GetTool latency measured
 * meanwhile by another process. Every run of both must end SUCCEEDED: checked on the server's
 * counters (StartExecution calls by code, the tool's runs by outcome) and by listing each burst's
 * runs. The baseline is a bare grpc-js server answering the same request bytes with a real
 * StartExecutionResponse, under the same h2load bursts (its first and second).
 */
export async function measureAdmission(options: AdmissionOptions): Promise<AdmissionResult> {
  const server = await launchServer("toolruntime");
  const workDir = await mkdtemp(join(tmpdir(), "toolruntime-burst-"));
  let clients: BytesClients | undefined;
  try {
    const httpUrl = server.httpUrl as string;
    clients = await openBytesClients(hostPort(server.grpcUrl), connections);
    const first = clients.connections[0];
    if (!first) throw new Error("no connection");
    const capabilities = await callMethod(first, ExecutionService.method.getCapabilities, {});
    // Warm the path up with runs of another tool, so the burst's tool counts only the bursts.
    const warmupFile = await bodyFile(workDir, "warm-up", "builtin.noop", {});
    const warmup = await burst(server.grpcUrl, warmupFile, 1000, workDir);
    const burstFile = await bodyFile(workDir, "burst", sleepTool, { ms: options.sleepMs });
    const sampleCall = await sendAll(clients, startPath, [startBody(sleepTool, { ms: 0 })], 1);
    const sample = sampleCall.responses[0];
    if (!sample)
      throw new Error(`admission: the sample call failed: ${failures("sample", sampleCall.failed).join("")}`);
    await awaitRunsEnded(httpUrl, 1, 0, 10_000); // the sample run, before the counters are read
    const baseline = options.baselineFirst ? await burstBaseline(sample, burstFile, options.runs, workDir) : undefined;

    const idealDrainMs = (options.runs * options.sleepMs) / capabilities.maxConcurrentRuns;
    if (capabilities.retainedExecutions < options.runs) {
      throw new Error(
        `admission: the server retains ${capabilities.retainedExecutions} finished runs, fewer than a burst's ${options.runs}: their listing cannot be checked`,
      );
    }
    const listedBefore = await listSucceeded(clients);
    const firstBurst = await burstWindow(server, burstFile, options.runs, idealDrainMs, workDir);
    // Retention keeps the latest 10,000 finished runs: each burst's are checked right after it.
    const listedAfterFirst = await listSucceeded(clients);
    const second = await burstWindow(server, burstFile, options.runs, idealDrainMs, workDir);
    const after = await readSettledCounters(httpUrl, scope);
    const listed = await listSucceeded(clients);
    const firstListed = newlyListed(listedAfterFirst, listedBefore);
    const listedSucceeded = newlyListed(listed, listedAfterFirst);
    const theirs = baseline ?? (await burstBaseline(sample, burstFile, options.runs, workDir));

    const delta = countsBetween(firstBurst.before, after);
    const sentOk = firstBurst.sent.succeeded + second.sent.succeeded;
    const counted = checkWindow(
      scope,
      { claimedOk: sentOk, cutOff: 0, generatorErrors: 2 * options.runs - sentOk },
      delta,
    );
    const problems = [
      ...counted.problems,
      ...h2loadProblems("warm-up", warmup, 1000),
      ...h2loadProblems("first burst", firstBurst.sent, options.runs),
      ...h2loadProblems("second burst", second.sent, options.runs),
      ...theirs.problems,
      ...[
        ["first", firstListed],
        ["second", listedSucceeded],
      ].flatMap(([which, count]) =>
        count === options.runs
          ? []
          : [`ListExecutions lists ${count} of the ${which} burst's ${options.runs} runs as SUCCEEDED`],
      ),
      ...[firstBurst, second].flatMap((window) =>
        window.probes.failures > 0 ? [`${window.probes.failures} GetTool probes failed`] : [],
      ),
    ];
    return {
      runs: options.runs,
      sleepMs: options.sleepMs,
      connections,
      inFlightPerConnection,
      admissionsPerSecond: second.sent.requestsPerSecond,
      baselinePerSecond: theirs.perSecond,
      serverCpuMsPerAdmission: second.serverCpuMs / options.runs,
      loadGeneratorCores: second.loadGeneratorCores,
      eventLoopP99Ms: second.eventLoopP99Ms,
      eventLoopMaxMs: second.eventLoopMaxMs,
      getToolIdleP99Ms: p99(second.probes.idle),
      getToolBurstP99Ms: p99(second.probes.burst),
      getToolBurstCalls: second.probes.burst.length,
      drainMs: second.drainMs,
      idealDrainMs,
      maxConcurrentRuns: capabilities.maxConcurrentRuns,
      outcomes: delta.runsByOutcome,
      listedSucceeded,
      check: { ...counted, verified: problems.length === 0, problems },
      machine: second.machine,
      first: {
        admissionsPerSecond: firstBurst.sent.requestsPerSecond,
        baselinePerSecond: theirs.firstPerSecond,
        serverCpuMsPerAdmission: firstBurst.serverCpuMs / options.runs,
        eventLoopP99Ms: firstBurst.eventLoopP99Ms,
        eventLoopMaxMs: firstBurst.eventLoopMaxMs,
        getToolIdleP99Ms: p99(firstBurst.probes.idle),
        getToolBurstP99Ms: p99(firstBurst.probes.burst),
        drainMs: firstBurst.drainMs,
        machine: firstBurst.machine,
      },
    };
  } finally {
    clients?.close();
    await server.stop();
    await rm(workDir, { recursive: true, force: true });
  }
}
