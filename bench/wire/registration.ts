import { create, toBinary } from "@bufbuild/protobuf";
import { RegisterToolRequestSchema, RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { launchServer, type LaunchedServer } from "../cases/launch-server.js";
import {
  checkWindow,
  countsBetween,
  readSettledCounters,
  type CounterScope,
  type WindowCheck,
} from "../cases/server-counters.js";
import { shuffledIndices, toolSpecFor } from "../inproc/tool-specs.js";
import { pathOf } from "../lib/grpc-bytes-client.js";
import { sendAll } from "../lib/http2-grpc-client.js";
import { openHttp2GrpcConnections, type Http2GrpcClients } from "../lib/http2-grpc-connections.js";
import { openLoadWindow, type MachineLoad } from "../lib/machine-load.js";
import { scrapeMetrics, valueOf } from "../lib/metrics-text.js";
import { readProcessCpuMs } from "../lib/proc-cpu.js";
import { readProcessMemory } from "../lib/proc-memory.js";
import type { FailedCall } from "../lib/send-result.js";
import { waitForSettledMemory } from "../lib/settled-memory.js";

/**
 * The first timed chunks, on a fresh server: from the first chunk (untimed) until the registry held
 * {@link firstWindowTools} tools, interleaved with the baseline as the later chunks are.
 */
export interface FirstRegistrations {
  /** Tools in the registry at the end of these chunks, built-in ones included. */
  readonly tools: number;
  readonly registrations: number;
  readonly registrationsPerSecond: number;
  /** The same bytes to the bare grpc-js server, chunk by chunk in turn. */
  readonly baselinePerSecond: number;
  readonly serverCpuMsPerRegistration: number;
  readonly machine: MachineLoad;
}

/** What the registration case (7) measured: RegisterTool over gRPC and the server's memory. */
export interface RegistrationResult {
  /** Tools in the default registry at the end of the timed chunks (the built-in ones included). */
  readonly tools: number;
  /** Tools this case registered by then: `tools` less the built-in ones. */
  readonly registered: number;
  /** Registrations in the timed chunks after the first window (the figures at the top level). */
  readonly timed: number;
  /** The first window: a fresh server's first 10,000 tools (V8 compiles the server's code meanwhile). */
  readonly first: FirstRegistrations;
  readonly connections: number;
  readonly inFlightPerConnection: number;
  /** Mean size of one RegisterToolRequest, in bytes. */
  readonly requestBytes: number;
  readonly registrationsPerSecond: number;
  /** Baseline: a bare grpc-js server answering the same bytes from the same client, interleaved by chunk. */
  readonly baselinePerSecond: number;
  readonly serverCpuMsPerRegistration: number;
  readonly baselineCpuMsPerRegistration: number;
  /** The load generator's (this process's) CPU time over the timed wall time: 1 is one core. */
  readonly loadGeneratorCores: number;
  /** The load generator's CPU time per call while sending (subject and baseline calls together), in milliseconds. */
  readonly loadGeneratorCpuMsPerCall: number;
  /** Server RSS when it served, before any registration. */
  readonly rssFreshBytes: number;
  /** The registry filled to 100,000 tools and the server's memory then, when the case was asked to. */
  readonly memory?: RegistrationMemory;
  /** Both timed windows against the server's counters; the tool count, and the fill's calls when it ran, are checked too. */
  readonly check: WindowCheck;
  readonly machine: MachineLoad;
}

/** The registry filled to 100,000 tools after the timed chunks, and the server's memory then. */
export interface RegistrationMemory {
  /** Registrations after the timed chunks, from this client alone, until the registry held 100,000 tools. */
  readonly filled: number;
  readonly fillPerSecond: number;
  /** Server RSS just after the last registration (100,000 tools), and its peak so far (VmHWM). */
  readonly rssBytes: number;
  readonly peakRssBytes: number;
  /**
   * Server RSS holding 100,000 tools once settled: the lowest reading over the 150 s after the last
   * registration (see waitForSettledMemory).
   */
  readonly rssAt100kBytes: number;
  /** When that lowest reading was first taken, after the last registration. */
  readonly settleMs: number;
  /** Whether the RSS fell by a tenth while waiting. */
  readonly settled: boolean;
  /** (Settled RSS − fresh RSS) ÷ tools registered. */
  readonly rssBytesPerTool: number;
  /** V8 heap in use (garbage included) when fresh and once settled, from the server's metrics. */
  readonly heapUsedFreshBytes: number;
  readonly heapUsedBytes: number;
}

/** Options of {@link measureRegistration}. */
export interface RegistrationOptions {
  /**
   * Tools in the default registry after the timed chunks, built-in ones included; the case then
   * fills it to 100,000 (its limit) without the baseline, to measure memory.
   */
  readonly tools: number;
  /** Order of the subject and the baseline in the first timed chunk (then they alternate). */
  readonly baselineFirst: boolean;
  /** Whether to fill the registry to 100,000 tools and measure the memory (a few minutes). */
  readonly measureMemory: boolean;
}

const chunkSize = 500;
/**
 * Tools in the registry at the end of the first window (at most half of the case's): during a
 * fresh server's first 10,000 registrations V8 compiled its code on the other core for about 70 µs
 * a registration (`--trace-opt`, December 6), against about 15 after, so the windows before and
 * after are reported apart.
 */
export const firstWindowTools = 10_000;
/** Tools in the default registry when memory is measured: its limit, and the target's figure. */
const fullRegistry = 100_000;
// 64 in flight, as in the h2load cases and the targets. With the node:http2 client, 8 × 16, 4 × 32
// and 8 × 32 gave the bare baseline no more calls per second here: the client and the server
// share two cores, so the baseline is bound by their CPU per call, not by the calls in flight.
const connections = 4;
const inFlightPerConnection = 16;
const registerPath = pathOf(RegistryService.method.registerTool);
const scope: CounterScope = {
  rpc: { service: "toolruntime.v1.RegistryService", method: "RegisterTool", protocol: "grpc" },
};

function encodeChunk(indices: readonly number[]): Buffer[] {
  return indices.map((index) =>
    Buffer.from(toBinary(RegisterToolRequestSchema, create(RegisterToolRequestSchema, { spec: toolSpecFor(index) }))),
  );
}

function hostPort(url: string | undefined): string {
  if (!url) throw new Error("the server has no gRPC port");
  return url.replace(/^http:\/\//, "");
}

function failures(what: string, failed: readonly FailedCall[]): string[] {
  const first = failed[0];
  return first ? [`${what}: ${failed.length} calls failed, e.g. code ${first.code}: ${first.details}`] : [];
}

/**
 * Registers tools over gRPC on a fresh toolruntime (default configuration) until its default
 * registry holds `tools`, each with a ~1 KiB input schema unlike any other, in a shuffled order,
 * 64 calls in flight (4 connections × 16) from the bench's node:http2 gRPC client (a grpc-js
 * client cost about twice its CPU per call and bounded the baseline). After a first chunk that warms
 * up, the same chunks of request bytes go, chunk by chunk and alternately, to the toolruntime and to
 * a bare grpc-js server that answers each with a real RegisterToolResponse: the baseline, what the
 * client and the transport alone can do. They are timed in two windows, reported apart: until the
 * registry holds {@link firstWindowTools} tools (a fresh server, whose code V8 is still compiling on
 * the other core), then up to `tools`. Success is checked on the server's counters (RegisterTool calls
 * by code) and its tool count; memory, when asked, from /proc after filling the registry.
 */
export async function measureRegistration(options: RegistrationOptions): Promise<RegistrationResult> {
  const server = await launchServer("toolruntime");
  let baseline: LaunchedServer | undefined;
  let ours: Http2GrpcClients | undefined;
  let theirs: Http2GrpcClients | undefined;
  try {
    const httpUrl = server.httpUrl as string;
    const fresh = await scrapeMetrics(httpUrl);
    const builtins = valueOf(fresh, "toolruntime_registry_tools", { registry: "default" });
    const rssFresh = readProcessMemory(server.process.pid);
    if (!Number.isFinite(builtins) || !rssFresh)
      throw new Error("registration: the server's metrics or memory are unreadable");
    const registered = options.tools - builtins;
    const order = shuffledIndices(registered);
    // The first chunk warms up; the first window's chunks end where the registry holds firstWindowTools.
    const firstEnd = Math.min(firstWindowTools, Math.floor(options.tools / 2)) - builtins;
    const chunks: number[][] = [];
    for (const [from, to] of [
      [0, Math.min(chunkSize, firstEnd)],
      [Math.min(chunkSize, firstEnd), firstEnd],
      [firstEnd, registered],
    ] as const) {
      for (let start = from; start < to; start += chunkSize)
        chunks.push(order.slice(start, Math.min(start + chunkSize, to)));
    }
    const firstWindowChunks = Math.ceil((firstEnd - Math.min(chunkSize, firstEnd)) / chunkSize);
    ours = await openHttp2GrpcConnections(hostPort(server.grpcUrl), connections);
    const warmupBodies = encodeChunk(chunks[0] ?? []);
    const warmup = await sendAll(ours, registerPath, warmupBodies, inFlightPerConnection);
    const sample = warmup.responses.find((response) => response !== undefined);
    if (!sample)
      throw new Error(`registration: no warm-up call succeeded: ${failures("warm-up", warmup.failed).join("")}`);
    baseline = await launchServer("grpc-echo", { echoPath: registerPath, echoResponse: sample });
    theirs = await openHttp2GrpcConnections(hostPort(baseline.grpcUrl), connections);
    const baselineWarmup = await sendAll(theirs, registerPath, warmupBodies, inFlightPerConnection);
    const bare = baseline;

    const before = await readSettledCounters(httpUrl, scope);
    const failed: FailedCall[] = [];
    const baselineFailed: FailedCall[] = [...baselineWarmup.failed];
    /** Times chunks alternately on both servers (the first of them on the baseline when `baselineFirst`). */
    const timeChunks = async (window: readonly number[][]) => {
      const load = openLoadWindow();
      const baselineCpuStart = readProcessCpuMs(bare.process.pid) ?? Number.NaN;
      const clientCpuStart = process.cpuUsage();
      const totals = { oursMs: 0, theirsMs: 0, oursCpuMs: 0, sendingCpuMs: 0, timed: 0, bytes: 0 };
      const wallStart = performance.now();
      for (const [position, indices] of window.entries()) {
        const bodies = encodeChunk(indices);
        totals.bytes += bodies.reduce((sum, body) => sum + body.length, 0);
        const runOurs = async (): Promise<void> => {
          const cpuBefore = readProcessCpuMs(server.process.pid) ?? Number.NaN;
          const sent = await sendAll(ours as Http2GrpcClients, registerPath, bodies, inFlightPerConnection);
          totals.oursCpuMs += (readProcessCpuMs(server.process.pid) ?? Number.NaN) - cpuBefore;
          totals.oursMs += sent.elapsedMs;
          totals.sendingCpuMs += sent.clientCpuMs;
          failed.push(...sent.failed);
        };
        const runTheirs = async (): Promise<void> => {
          const sent = await sendAll(theirs as Http2GrpcClients, registerPath, bodies, inFlightPerConnection);
          totals.theirsMs += sent.elapsedMs;
          totals.sendingCpuMs += sent.clientCpuMs;
          baselineFailed.push(...sent.failed);
        };
        if ((position % 2 === 0) === options.baselineFirst) {
          await runTheirs();
          await runOurs();
        } else {
          await runOurs();
          await runTheirs();
        }
        totals.timed += bodies.length;
      }
      const wallMs = performance.now() - wallStart;
      const clientCpu = process.cpuUsage(clientCpuStart);
      const clientCpuMs = (clientCpu.user + clientCpu.system) / 1000;
      const baselineCpuMs = (readProcessCpuMs(bare.process.pid) ?? Number.NaN) - baselineCpuStart;
      const machine = load.close(totals.oursCpuMs + baselineCpuMs + clientCpuMs);
      return { ...totals, wallMs, clientCpuMs, baselineCpuMs, machine };
    };
    const firstWindow = await timeChunks(chunks.slice(1, 1 + firstWindowChunks));
    const first: FirstRegistrations = {
      tools: builtins + firstEnd,
      registrations: firstWindow.timed,
      registrationsPerSecond: firstWindow.timed / (firstWindow.oursMs / 1000),
      baselinePerSecond: firstWindow.timed / (firstWindow.theirsMs / 1000),
      serverCpuMsPerRegistration: firstWindow.oursCpuMs / firstWindow.timed,
      machine: firstWindow.machine,
    };
    const totals = await timeChunks(chunks.slice(1 + firstWindowChunks));
    const { wallMs, clientCpuMs, baselineCpuMs, machine } = totals;
    const after = await readSettledCounters(httpUrl, scope);
    const timedTools = valueOf(await scrapeMetrics(httpUrl), "toolruntime_registry_tools", { registry: "default" });

    // The rest, up to 100,000 tools, from this client alone; then the memory, settled.
    const fillAndMeasure = async (): Promise<{ memory: RegistrationMemory; problems: string[] }> => {
      const fillOrder = shuffledIndices(fullRegistry - builtins - registered).map((index) => registered + index);
      const fillFailed: FailedCall[] = [];
      const fillStart = performance.now();
      for (let start = 0; start < fillOrder.length; start += chunkSize * 10) {
        const bodies = encodeChunk(fillOrder.slice(start, start + chunkSize * 10));
        fillFailed.push(
          ...(await sendAll(ours as Http2GrpcClients, registerPath, bodies, inFlightPerConnection)).failed,
        );
      }
      const fillMs = performance.now() - fillStart;
      const memory = readProcessMemory(server.process.pid);
      if (!memory) throw new Error("registration: the server died");
      const settledMemory = await waitForSettledMemory(server.process.pid);
      const final = await scrapeMetrics(httpUrl);
      const finalTools = valueOf(final, "toolruntime_registry_tools", { registry: "default" });
      return {
        memory: {
          filled: fillOrder.length,
          fillPerSecond: fillOrder.length / (fillMs / 1000),
          rssBytes: memory.rssBytes,
          peakRssBytes: memory.peakRssBytes,
          rssAt100kBytes: settledMemory.rssBytes,
          settleMs: settledMemory.waitedMs,
          settled: settledMemory.fell,
          rssBytesPerTool: (settledMemory.rssBytes - rssFresh.rssBytes) / (fullRegistry - builtins),
          heapUsedFreshBytes: valueOf(fresh, "nodejs_heap_size_used_bytes"),
          heapUsedBytes: valueOf(final, "nodejs_heap_size_used_bytes"),
        },
        problems: [
          ...failures("fill", fillFailed),
          ...(finalTools === fullRegistry ? [] : [`the registry holds ${finalTools} tools, not ${fullRegistry}`]),
        ],
      };
    };
    const filling = options.measureMemory ? await fillAndMeasure() : undefined;
    // Both windows' calls, against the server's counters from before the first to after the second.
    const timedCalls = first.registrations + totals.timed;
    const counted = checkWindow(
      scope,
      { claimedOk: timedCalls - failed.length, cutOff: 0, generatorErrors: failed.length },
      countsBetween(before, after),
    );
    const problems = [
      ...counted.problems,
      ...failures("warm-up", warmup.failed),
      ...failures("baseline", baselineFailed),
      ...(filling?.problems ?? []),
      ...(timedTools === options.tools ? [] : [`the registry held ${timedTools} tools, not ${options.tools}`]),
    ];
    return {
      tools: options.tools,
      registered,
      timed: totals.timed,
      first,
      connections,
      inFlightPerConnection,
      requestBytes: totals.bytes / Math.max(1, totals.timed),
      registrationsPerSecond: totals.timed / (totals.oursMs / 1000),
      baselinePerSecond: totals.timed / (totals.theirsMs / 1000),
      serverCpuMsPerRegistration: totals.oursCpuMs / totals.timed,
      baselineCpuMsPerRegistration: baselineCpuMs / totals.timed,
      loadGeneratorCores: clientCpuMs / wallMs,
      loadGeneratorCpuMsPerCall: totals.sendingCpuMs / (2 * totals.timed),
      rssFreshBytes: rssFresh.rssBytes,
      ...(filling ? { memory: filling.memory } : {}),
      check: { ...counted, verified: problems.length === 0, problems },
      machine,
    };
  } finally {
    ours?.close();
    theirs?.close();
    await baseline?.stop();
    await server.stop();
  }
}
