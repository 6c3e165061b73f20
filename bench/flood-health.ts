/**
 * Health under a stream flood: starts `node dist/src/main.js` with the Node flags the server ships
 * with (src/server-node-flags.ts; the defaults unless server flags are given after `--`), floods one port with RunTool calls from another process (20 HTTP/2
 * connections × 1,000 calls by default), and meanwhile probes GET /healthz and grpc.health.v1
 * Check every 50 ms, each probe on a fresh connection as a Kubernetes probe would. Reports worst
 * and p99 probe latency, the server's peak RSS and the flood's outcomes.
 *
 *   npx tsc -b && node dist/bench/flood-health.js [--port http|grpc|both] [--connections 20]
 *     [--calls 1000] [--tool builtin.sleep] [--inputs '{"ms":0}'] [--rounds 1] [--cpu-prof DIR]
 *     [--json] [-- server flags...]
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import { parseArgs } from "node:util";
import type { JsonObject } from "@bufbuild/protobuf";
import { serverNodeFlags } from "../src/server-node-flags.js";
import { startFlood, type FloodReport } from "../test/support/flood-client.js";
import { probeHealthCheck, probeHttpHealth } from "../test/support/health-probes.js";
import { percentileOfSorted } from "./lib/stats.js";

/** Latencies of one kind of probe while the flood was being taken in. */
interface ProbeStats {
  readonly count: number;
  readonly failures: number;
  readonly worstMs: number;
  /** When the worst probe was sent, in ms after the flood's calls were sent. */
  readonly worstAtMs: number;
  readonly p99Ms: number;
  readonly medianMs: number;
}

/** One flood of one port. */
interface FloodResult {
  readonly port: "http" | "grpc";
  readonly healthz: ProbeStats;
  readonly healthCheck: ProbeStats;
  readonly peakRssMb: number;
  /** Longest event-loop delay the server's own metrics saw (prom-client's monitorEventLoopDelay). */
  readonly eventLoopMaxMs: number;
  readonly report: FloodReport;
}

const probeTimeoutMs = 10_000;

const { values: flags, positionals: serverFlags } = parseArgs({
  options: {
    port: { type: "string", default: "both" },
    connections: { type: "string", default: "20" },
    calls: { type: "string", default: "1000" },
    tool: { type: "string", default: "builtin.sleep" },
    inputs: { type: "string", default: "{}" },
    rounds: { type: "string", default: "1" },
    "interval-ms": { type: "string", default: "50" },
    "cpu-prof": { type: "string" },
    json: { type: "boolean", default: false },
  },
  allowPositionals: true,
});

/** A server process started with the given flags on free ports. */
async function startServerProcess(extraFlags: readonly string[], nodeFlags: readonly string[]) {
  const child = spawn(process.execPath, [
    ...nodeFlags,
    "dist/src/main.js",
    "--grpc-port",
    "0",
    "--http-port",
    "0",
    ...extraFlags,
  ]);
  let output = "";
  // Read everything it logs: a full pipe would block the server.
  child.stdout.on("data", (chunk: Buffer) => {
    if (output.length < 10_000) output += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => process.stderr.write(chunk));
  const exited = once(child, "exit");
  const addresses = await new Promise<{ grpcAddress: string; httpUrl: string }>((resolve, reject) => {
    child.stdout.on("data", () => {
      const grpc = /gRPC: +(\S+)/.exec(output)?.[1];
      const httpUrl = /Connect\/gRPC-Web: (http:\/\/\S+)/.exec(output)?.[1];
      if (grpc && httpUrl && output.includes("tools:")) resolve({ grpcAddress: grpc, httpUrl });
    });
    void exited.then(() => reject(new Error(`the server exited: ${output}`)));
  });
  return {
    ...addresses,
    peakRssMb: (): number => {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
    },
    async stop(): Promise<void> {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Probes every `intervalMs` (one probe at a time) until `until` settles. */
async function probeUntil(
  probe: () => Promise<void>,
  intervalMs: number,
  until: Promise<unknown>,
): Promise<ProbeStats> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  const latencies: number[] = [];
  let failures = 0;
  const loopStarted = performance.now();
  let worstAtMs = 0;
  while (!done) {
    const started = performance.now();
    try {
      await probe();
    } catch {
      failures += 1;
    }
    const tookMs = performance.now() - started;
    if (tookMs > Math.max(0, ...latencies)) worstAtMs = started - loopStarted;
    latencies.push(tookMs);
    if (tookMs < intervalMs) await delay(intervalMs - tookMs);
  }
  const sorted = latencies.sort((a, b) => a - b);
  return {
    count: sorted.length,
    failures,
    worstMs: sorted.at(-1) ?? Number.NaN,
    worstAtMs,
    p99Ms: percentileOfSorted(sorted, 99),
    medianMs: percentileOfSorted(sorted, 50),
  };
}

async function eventLoopMaxMs(httpUrl: string): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  return Number(/^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(text)?.[1] ?? Number.NaN) * 1000;
}

async function floodOnce(port: "http" | "grpc"): Promise<FloodResult> {
  const nodeFlags = [
    ...serverNodeFlags,
    ...(flags["cpu-prof"] ? ["--cpu-prof", "--cpu-prof-dir", flags["cpu-prof"]] : []),
  ];
  const server = await startServerProcess(serverFlags, nodeFlags);
  try {
    await probeHttpHealth(`${server.httpUrl}/healthz`, probeTimeoutMs);
    await probeHealthCheck(server.grpcAddress, probeTimeoutMs);
    // Resets the server's event-loop delay histogram (prom-client resets it at each scrape).
    await eventLoopMaxMs(server.httpUrl);
    const url = port === "http" ? server.httpUrl : `http://${server.grpcAddress}`;
    const flood = startFlood(url, Number(flags.connections), Number(flags.calls), flags.tool, 0, {
      inputs: JSON.parse(flags.inputs) as JsonObject,
    });
    try {
      await flood.started;
      const intervalMs = Number(flags["interval-ms"]);
      const [healthz, healthCheck, report] = await Promise.all([
        probeUntil(() => probeHttpHealth(`${server.httpUrl}/healthz`, probeTimeoutMs), intervalMs, flood.report),
        probeUntil(() => probeHealthCheck(server.grpcAddress, probeTimeoutMs), intervalMs, flood.report),
        flood.report,
      ]);
      return {
        port,
        healthz,
        healthCheck,
        peakRssMb: server.peakRssMb(),
        eventLoopMaxMs: await eventLoopMaxMs(server.httpUrl),
        report,
      };
    } finally {
      await flood.release();
    }
  } finally {
    await server.stop();
  }
}

function describe(result: FloodResult): string {
  const codeNames: Record<string, string> = { "0": "OK", "8": "RESOURCE_EXHAUSTED", "14": "UNAVAILABLE" };
  const outcomes = Object.entries(result.report.codes)
    .map(([code, count]) => `${codeNames[code] ?? `code ${code}`} ${count}`)
    .concat(Object.entries(result.report.resets).map(([cause, count]) => `${cause} ${count}`))
    .join(", ");
  const ms = (value: number): string => `${Math.round(value)} ms`;
  const probe = (name: string, stats: ProbeStats): string =>
    `  ${name}: worst ${ms(stats.worstMs)} (sent at ${ms(stats.worstAtMs)}), p99 ${ms(stats.p99Ms)}, median ${ms(stats.medianMs)} ` +
    `(${stats.count} probes, ${stats.failures} failed)`;
  return [
    `${result.port} port flood (${flags.connections} connections × ${flags.calls} RunTool ${flags.tool}), ` +
      `settled in ${ms(result.report.settledMs)}`,
    probe("GET /healthz", result.healthz),
    probe("grpc.health.v1 Check", result.healthCheck),
    `  server peak RSS ${Math.round(result.peakRssMb)} MB, event-loop delay max ${ms(result.eventLoopMaxMs)}`,
    `  outcomes: ${outcomes}`,
  ].join("\n");
}

const ports = flags.port === "both" ? (["grpc", "http"] as const) : [flags.port as "http" | "grpc"];
const results: FloodResult[] = [];
for (let round = 0; round < Number(flags.rounds); round += 1) {
  for (const port of ports) {
    const result = await floodOnce(port);
    results.push(result);
    if (!flags.json) process.stdout.write(`${describe(result)}\n`);
  }
}
if (flags.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
