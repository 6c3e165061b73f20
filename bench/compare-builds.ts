// `npm run bench:compare -- --baseline-main OTHER/dist/src/main.js`: this build against another
// (or against itself with other flags: `--baseline-args "--log-level warn"`, or other flags of
// Node's: `--baseline-node-flags=--max-semi-space-size=32`), both loaded at the
// same time. Each round starts both servers (in the default configuration,
// which of them first alternating), checks one call of each with a real client, and loads both
// at once, each with its own h2load (2 connections × 16 streams), so that the swings of this
// shared machine fall on both alike: alternating windows differ by 10–30% between two copies of
// one build, while the medians of eight rounds here fall within a few percent. Every window is verified on both servers' counters. Reports calls/s and server CPU
// per call, this build ÷ the baseline, per round and as medians.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { serverNodeFlags } from "../src/server-node-flags.js";
import { startMainProcess, type MainProcess } from "../test/support/main-process.js";
import { activateNoop, checkConnectExecute, checkGrpcExecute, checkGrpcRunTool } from "./cases/checks.js";
import { grpcHeaders, connectProtoHeaders, requestBodies, noopToolName } from "./cases/request-bodies.js";
import { checkWindow, countsBetween, readSettledCounters, type CounterScope } from "./cases/server-counters.js";
import { ensureH2load } from "./lib/ensure-h2load.js";
import { runH2load, type H2loadResult } from "./lib/h2load.js";
import { readProcessCpuMs } from "./lib/proc-cpu.js";
import { median } from "./lib/stats.js";

const log = (line: string): void => void process.stdout.write(`${line}\n`);

/** The calls a comparison can load: what is sent, where, and how one is checked first. */
const calls = {
  execute: {
    path: "/toolruntime.v1.RunnerService/ExecuteTool",
    port: "grpc",
    headers: grpcHeaders,
    body: requestBodies.grpcExecute,
    scope: { method: "ExecuteTool", protocol: "grpc" },
  },
  runtool: {
    path: "/toolruntime.v1.RunnerService/RunTool",
    port: "grpc",
    headers: grpcHeaders,
    body: requestBodies.grpcRunTool,
    scope: { method: "RunTool", protocol: "grpc" },
  },
  connect: {
    path: "/toolruntime.v1.RunnerService/ExecuteTool",
    port: "http",
    headers: connectProtoHeaders,
    body: requestBodies.connectProtoExecute,
    scope: { method: "ExecuteTool", protocol: "connect" },
  },
} as const;
type CallName = keyof typeof calls;

const { values: flags } = parseArgs({
  options: {
    "baseline-main": { type: "string" },
    call: { type: "string", default: "execute" },
    rounds: { type: "string", default: "8" },
    "measure-s": { type: "string", default: "4" },
    // Flags for either server, after the shipped defaults (split at spaces).
    args: { type: "string", default: "" },
    "baseline-args": { type: "string", default: "" },
    // Node's own flags for either process (split at spaces); by default the ones the server ships
    // with (src/server-node-flags.ts). `--baseline-node-flags=` runs the baseline without any.
    "node-flags": { type: "string", default: serverNodeFlags.join(" ") },
    "baseline-node-flags": { type: "string", default: serverNodeFlags.join(" ") },
  },
});
const baselineFlag = flags["baseline-main"];
if (!baselineFlag) throw new Error("--baseline-main PATH: the other build's dist/src/main.js is required");
const baselineMain: string = baselineFlag;
if (!(flags.call in calls)) throw new Error(`--call: one of ${Object.keys(calls).join(", ")}`);
const call = calls[flags.call as CallName];
const rounds = Number(flags.rounds);
const measureS = Number(flags["measure-s"]);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error("--rounds: a positive integer");
if (!(measureS > 0)) throw new Error("--measure-s: a positive number of seconds");

const scope: CounterScope = {
  rpc: { service: "toolruntime.v1.RunnerService", ...call.scope },
  tool: noopToolName,
};

/** One server of a round, checked and ready to load. */
interface Loaded {
  readonly server: MainProcess;
  readonly url: string;
}

async function prepare(server: MainProcess): Promise<Loaded> {
  const grpcUrl = `http://${server.grpcAddress}`;
  await activateNoop(grpcUrl, "grpc");
  const base = call.port === "grpc" ? grpcUrl : server.httpUrl;
  const load = { url: `${base}${call.path}`, headers: call.headers, body: call.body };
  if (flags.call === "execute") await checkGrpcExecute(base, load);
  else if (flags.call === "runtool") await checkGrpcRunTool(base, load);
  else await checkConnectExecute(base, "connect-proto", load);
  return { server, url: load.url };
}

/** Loads every server at once for `durationS`; each one's h2load result and server CPU ms. */
async function loadTogether(
  loaded: readonly Loaded[],
  durationS: number,
  bodyFile: string,
  workDir: string,
): Promise<{ result: H2loadResult; cpuMs: number }[]> {
  const pids = loaded.map(({ server }) => server.child.pid ?? 0);
  const before = pids.map((pid) => readProcessCpuMs(pid) ?? Number.NaN);
  const results = await Promise.all(
    loaded.map(({ url }, index) =>
      runH2load({
        url,
        bodyFile,
        headers: call.headers,
        clients: 2,
        streamsPerClient: 16,
        durationS,
        logFile: join(workDir, `h2load-${index}.log`),
      }),
    ),
  );
  return results.map((result, index) => ({
    result,
    cpuMs: (readProcessCpuMs(pids[index] ?? 0) ?? Number.NaN) - (before[index] ?? Number.NaN),
  }));
}

async function main(): Promise<void> {
  log(`h2load ${ensureH2load(log)}`);
  const workDir = await mkdtemp(join(tmpdir(), "toolruntime-bench-compare-"));
  const bodyFile = join(workDir, "request.body");
  await writeFile(bodyFile, call.body);
  const rateRatios: number[] = [];
  const cpuRatios: number[] = [];
  const p99Ratios: number[] = [];
  // The shipped default log level (startMainProcess asks for `warn` unless told otherwise), then
  // the flags given.
  const wordsOf = (flagText: string): string[] => flagText.split(" ").filter(Boolean);
  const args = ["--log-level", "info", ...wordsOf(flags.args)];
  const baselineArgs = ["--log-level", "info", ...wordsOf(flags["baseline-args"])];
  const command: [string, ...string[]] = [process.execPath, ...wordsOf(flags["node-flags"]), "dist/src/main.js"];
  const baselineCommand: [string, ...string[]] = [
    process.execPath,
    ...wordsOf(flags["baseline-node-flags"]),
    baselineMain,
  ];
  try {
    for (let round = 1; round <= rounds; round++) {
      const start = [
        () => startMainProcess(args, { command }),
        () => startMainProcess(baselineArgs, { command: baselineCommand }),
      ];
      // Which starts first alternates: the first of two fresh servers can fare differently.
      const [first, second] = round % 2 === 1 ? [start[0]!, start[1]!] : [start[1]!, start[0]!];
      const firstServer = await first();
      const secondServer = await second().catch((error: unknown) => {
        firstServer.child.kill("SIGTERM");
        throw error;
      });
      const [ours, baseline] = round % 2 === 1 ? [firstServer, secondServer] : [secondServer, firstServer];
      try {
        const loaded = [await prepare(ours), await prepare(baseline)];
        await loadTogether(loaded, 2, bodyFile, workDir);
        const counters = await Promise.all(loaded.map(({ server }) => readSettledCounters(server.httpUrl, scope)));
        const measured = await loadTogether(loaded, measureS, bodyFile, workDir);
        const after = await Promise.all(loaded.map(({ server }) => readSettledCounters(server.httpUrl, scope)));
        measured.forEach(({ result }, index) => {
          const check = checkWindow(
            scope,
            { claimedOk: result.succeeded, cutOff: result.cutOff, generatorErrors: result.failed + result.non2xx },
            countsBetween(counters[index]!, after[index]!),
          );
          if (!check.verified) throw new Error(`round ${round}: ${check.problems.join("; ")}`);
        });
        const [mine, theirs] = measured.map(({ result, cpuMs }) => ({
          rate: result.requestsPerSecond,
          cpuUsPerCall: (cpuMs * 1000) / result.succeeded,
          p99Ms: result.p99Ms,
        }));
        rateRatios.push(mine!.rate / theirs!.rate);
        cpuRatios.push(mine!.cpuUsPerCall / theirs!.cpuUsPerCall);
        p99Ratios.push(mine!.p99Ms / theirs!.p99Ms);
        log(
          `round ${round}: this build ${mine!.rate.toFixed(0)}/s, ${mine!.cpuUsPerCall.toFixed(1)} µs CPU/call, p99 ${mine!.p99Ms.toFixed(1)} ms; ` +
            `baseline ${theirs!.rate.toFixed(0)}/s, ${theirs!.cpuUsPerCall.toFixed(1)} µs, p99 ${theirs!.p99Ms.toFixed(1)} ms; ` +
            `÷ ${rateRatios.at(-1)!.toFixed(3)} calls/s, ${cpuRatios.at(-1)!.toFixed(3)} CPU/call (verified)`,
        );
      } finally {
        for (const server of [ours, baseline]) server.child.kill("SIGTERM");
        await Promise.all([ours.exited, baseline.exited]);
      }
    }
    log(
      `\n${flags.call}, this build ÷ baseline, medians of ${rounds} rounds: ` +
        `${median(rateRatios).toFixed(3)}× the calls/s, ${median(cpuRatios).toFixed(3)}× the server CPU per call, ` +
        `${median(p99Ratios).toFixed(3)}× the p99 latency`,
    );
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
