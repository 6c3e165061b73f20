// `npm run bench:stores`: what durable runs cost, on this machine's private PostgreSQL started with
// durability on (fsync, synchronous_commit), measured in the same run against the in-memory server
// and against two job queues on the same database (pg-boss and graphile-worker doing the
// equivalent no-op job: submit → run → completion known to the caller). Rounds interleave every
// variant; figures are medians over rounds.
// - ExecuteTool of builtin.noop (read_only) under h2load at 1, 8 and 64 in flight, of a `writes`
//   tool at 64, and StartExecution + WatchExecution to the end at 64: runs/s, p50/p99, the server's
//   CPU per call, and per run the database's commits (WAL commit records), WAL syncs and CPU;
// - 1, 2 and 3 replicas sharing 64 in flight;
// - the in-memory server at 64 in flight (and an older build's with --baseline-main);
// - with --providers: a provider's run started on replica A and served by B, and claims per second.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { ExecutionService, ExecutionState } from "../gen/toolruntime/v1/execution_pb.js";
import { ToolErrorSchema } from "../gen/toolruntime/v1/tool_pb.js";
import { RunnerService } from "../gen/toolruntime/v1/runner_pb.js";
import { createGrpcJsClient } from "../test/support/grpc-js-client.js";
import { startMainProcess, type MainProcess } from "../test/support/main-process.js";
import { startPostgres, type PostgresServer } from "../test/support/postgres-server.js";
import { spawnUntil, type ReadyChild } from "../test/support/spawn-until.js";
import {
  countersPerJob,
  ensureNode22,
  readDatabaseCounters,
  readWalBetween,
  runAnchor,
  type DatabaseCounters,
} from "./anchors/run-anchor.js";
import { activate, loadExecute, type ExecuteLoad } from "./durable/execute-load.js";
import { startAndWatch } from "./durable/start-watch-loop.js";
import { ensureH2load } from "./lib/ensure-h2load.js";

const log = (line: string): void => void process.stdout.write(`${line}\n`);
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const fixed = (value: number, digits = 2): string => value.toFixed(digits);

const { values: flags } = parseArgs({
  options: {
    rounds: { type: "string", default: "2" },
    "measure-s": { type: "string", default: "4" },
    // Also a provider's runs across replicas and claims per second (about a minute more).
    providers: { type: "boolean", default: false },
    "baseline-main": { type: "string" },
    // Only the in-memory store against the baseline build: what the ports cost, with more rounds.
    "memory-only": { type: "boolean", default: false },
  },
});
const memoryOnly = flags["memory-only"] ?? false;
const rounds = Number(flags.rounds);
const measureS = Number(flags["measure-s"]);

async function stopAll(processes: MainProcess[]): Promise<void> {
  await Promise.all(
    processes.map((each) => {
      each.child.kill("SIGTERM");
      return each.exited;
    }),
  );
}

/** p50 latency of RunTool of the provider's tool through `address`, sequential calls. */
async function providerLatencyMs(address: string, calls: number): Promise<number> {
  const runner = createGrpcJsClient(RunnerService, address);
  const times: number[] = [];
  try {
    for (let index = 0; index < calls + 10; index++) {
      const began = performance.now();
      let success = false;
      for await (const message of runner.client.runTool({ toolName: "remote.steps", inputs: { steps: 0 } })) {
        if (message.event?.event.case === "completed") success = message.event.event.value.result?.success ?? false;
      }
      if (!success) throw new Error("a provider run failed");
      if (index >= 10) times.push(performance.now() - began);
    }
  } finally {
    runner.close();
  }
  return median(times);
}

/** Runs per second that `servers` claim and finish, for runs started through `starter`. */
async function claimsPerSecond(starter: MainProcess, runs: number): Promise<number> {
  const executions = createGrpcJsClient(ExecutionService, starter.grpcAddress);
  try {
    const began = performance.now();
    // All at once, as a client with a burst of work would; one that is refused for now
    // (RESOURCE_EXHAUSTED) tries again after the delay the answer gives, as such a client should.
    const ids = await Promise.all(
      Array.from({ length: runs }, async () => {
        for (;;) {
          try {
            const started = await executions.client.startExecution({ toolName: "remote.steps", inputs: { steps: 0 } });
            return started.execution!.executionId;
          } catch (error) {
            if (!(error instanceof ConnectError) || error.code !== Code.ResourceExhausted) throw error;
            const retryAfterMs = error.findDetails(ToolErrorSchema)[0]?.retryAfterMs ?? 100;
            await new Promise((resolve) => setTimeout(resolve, retryAfterMs));
          }
        }
      }),
    );
    for (const id of ids) {
      for await (const message of executions.client.watchExecution({ executionId: id })) {
        if (message.event?.event.case === "completed") break;
      }
      const state = (await executions.client.getExecution({ executionId: id })).execution?.state;
      if (state !== ExecutionState.SUCCEEDED) throw new Error(`run ${id} ended ${state}`);
    }
    return runs / ((performance.now() - began) / 1000);
  } finally {
    executions.close();
  }
}

const provider = (address: string): Promise<ReadyChild> =>
  spawnUntil(process.execPath, ["dist/test/support/replica-provider.js", address], process.cwd(), "connected");

/** The median of each named figure over the rounds. */
class Figures {
  readonly #values = new Map<string, number[]>();
  add(name: string, value: number): void {
    const list = this.#values.get(name) ?? [];
    list.push(value);
    this.#values.set(name, list);
  }
  median(name: string): number {
    return median(this.#values.get(name) ?? []);
  }
  latest(name: string): number {
    return this.#values.get(name)?.at(-1) ?? Number.NaN;
  }
}

const noop = { name: "builtin.noop", inputs: {} };
const writes = { name: "replica.writes", inputs: { ms: 0 } };
/** The servers load the multi-replica suite's tools, for a `writes` tool. */
const toolArgs = ["--tools", "dist/test/support/replica-tools.js"];
const inFlights = [1, 8, 64];
/** Warm-up of fresh replicas before their window, in seconds. */
const replicaWarmS = 5;

/** Records one ExecuteTool window under `prefix`. */
function recordLoad(figures: Figures, prefix: string, load: ExecuteLoad): void {
  figures.add(`${prefix} runs/s`, load.callsPerSecond);
  figures.add(`${prefix} p50`, load.p50Ms);
  figures.add(`${prefix} p99`, load.p99Ms);
  figures.add(`${prefix} server CPU`, load.serverCpuMsPerCall);
  figures.add(`${prefix} stored`, load.storedPerCall);
  figures.add(`${prefix} commits`, load.commitsPerCall);
  figures.add(`${prefix} WAL syncs`, load.database?.walSync ?? Number.NaN);
  figures.add(`${prefix} PG CPU`, load.database?.postgresCpuMs ?? Number.NaN);
  figures.add(`${prefix} lock waits`, load.lockWaitShare);
  figures.add(`${prefix} lwlock waits`, load.lightweightLockWaitShare);
}

async function durableRound(postgres: PostgresServer, figures: Figures, round: number, workDir: string): Promise<void> {
  const url = await postgres.createDatabase(`durable${round}`);
  const store = { url, dataDirectory: postgres.directory };
  const server = await startMainProcess(["--store", url, ...toolArgs]);
  try {
    await activate(server, noop.name);
    await activate(server, writes.name);
    for (const inFlight of inFlights) {
      recordLoad(figures, `durable ${inFlight}`, await loadExecute([server], noop, inFlight, measureS, workDir, store));
    }
    recordLoad(figures, "durable writes 64", await loadExecute([server], writes, 64, measureS, workDir, store));
    const watched = await startAndWatch(server.grpcAddress, noop, 64, measureS);
    figures.add("start+watch 64 runs/s", watched.runsPerSecond);
    figures.add("start+watch 64 p50", watched.p50Ms);
    figures.add("start+watch 64 p99", watched.p99Ms);
  } finally {
    await stopAll([server]);
  }
  // Fresh replicas each time, warmed up alike: a fresh process spends its first seconds of load
  // compiling (see the README's benchmarks), which a lone long-lived server would be spared.
  for (const replicas of [1, 2, 3]) {
    const shared = await postgres.createDatabase(`replicas${replicas}x${round}`);
    const servers = await Promise.all(
      Array.from({ length: replicas }, () => startMainProcess(["--store", shared, ...toolArgs])),
    );
    try {
      await activate(servers[0] as MainProcess, noop.name);
      const load = await loadExecute(
        servers,
        noop,
        64,
        measureS,
        workDir,
        { url: shared, dataDirectory: postgres.directory },
        replicaWarmS,
      );
      recordLoad(figures, `replicas ${replicas}`, load);
    } finally {
      await stopAll(servers);
    }
  }
}

async function anchorRound(postgres: PostgresServer, figures: Figures, round: number): Promise<void> {
  for (const engine of ["pg-boss", "graphile-worker"] as const) {
    for (const inFlight of inFlights) {
      const url = await postgres.createDatabase(`${engine.replace("-", "_")}${inFlight}x${round}`);
      let before: DatabaseCounters | undefined;
      let after: DatabaseCounters | undefined;
      const result = await runAnchor(engine, url, inFlight, measureS, {
        onMeasureStart: async () => void (before = await readDatabaseCounters(url, postgres.directory)),
        onMeasureEnd: async () => void (after = await readDatabaseCounters(url, postgres.directory)),
      });
      if (!before || !after) throw new Error(`the ${engine} anchor's counters were not read`);
      const per = countersPerJob(before, after, result.jobs);
      const wal = await readWalBetween(url, before.walLsn, after.walLsn);
      figures.add(`${engine} ${inFlight} runs/s`, result.jobsPerSecond);
      figures.add(`${engine} ${inFlight} p50`, result.p50Ms);
      figures.add(`${engine} ${inFlight} p99`, result.p99Ms);
      figures.add(`${engine} ${inFlight} commits`, wal.commits / result.jobs);
      figures.add(`${engine} ${inFlight} WAL syncs`, per.walSync);
      figures.add(`${engine} ${inFlight} PG CPU`, per.postgresCpuMs);
    }
  }
}

async function memoryRound(figures: Figures, workDir: string): Promise<void> {
  const memory = await startMainProcess(toolArgs);
  try {
    await activate(memory, noop.name);
    const load = await loadExecute([memory], noop, 64, measureS, workDir);
    figures.add("memory runs/s", load.callsPerSecond);
    figures.add("memory server CPU", load.serverCpuMsPerCall);
  } finally {
    await stopAll([memory]);
  }
  if (flags["baseline-main"]) {
    const baseline = await startMainProcess([], { command: [process.execPath, flags["baseline-main"]] });
    try {
      await activate(baseline, noop.name);
      const load = await loadExecute([baseline], noop, 64, measureS, workDir);
      figures.add("baseline runs/s", load.callsPerSecond);
      figures.add("baseline server CPU", load.serverCpuMsPerCall);
    } finally {
      await stopAll([baseline]);
    }
  }
}

/** The table adopters compare: one row per variant. */
function report(figures: Figures): void {
  const m = (name: string): number => figures.median(name);
  const row = (label: string, prefix: string, serverCpu: boolean): string =>
    `| ${label} | ${fixed(m(`${prefix} runs/s`), 0)} | ${fixed(m(`${prefix} p50`))} | ${fixed(m(`${prefix} p99`))} | ${fixed(m(`${prefix} commits`))} | ${fixed(m(`${prefix} WAL syncs`))} | ${fixed(m(`${prefix} PG CPU`), 3)} | ${serverCpu ? fixed(m(`${prefix} server CPU`), 3) : "–"} |`;
  log(
    "\n| what (no-op work, fsync on) | runs/s | p50 ms | p99 ms | commits/run | WAL syncs/run | PostgreSQL CPU ms/run | server CPU ms/run |",
  );
  log("|---|---|---|---|---|---|---|---|");
  for (const inFlight of inFlights)
    log(row(`durable ExecuteTool (read_only), ${inFlight} in flight`, `durable ${inFlight}`, true));
  log(row("durable ExecuteTool (writes), 64 in flight", "durable writes 64", true));
  log(
    `| durable StartExecution + watch to the end, 64 in flight | ${fixed(m("start+watch 64 runs/s"), 0)} | ${fixed(m("start+watch 64 p50"))} | ${fixed(m("start+watch 64 p99"))} | | | | |`,
  );
  for (const replicas of [1, 2, 3]) {
    log(row(`${replicas} fresh replica(s) sharing 64 in flight`, `replicas ${replicas}`, true));
  }
  for (const engine of ["pg-boss", "graphile-worker"]) {
    for (const inFlight of inFlights) log(row(`${engine}, ${inFlight} in flight`, `${engine} ${inFlight}`, false));
  }
  log(
    `| in-memory ExecuteTool, 64 in flight | ${fixed(m("memory runs/s"), 0)} | | | | | | ${fixed(m("memory server CPU"), 3)} |`,
  );

  const durable = m("durable 64 runs/s");
  const ratios: [string, number, string][] = [
    ["durable ExecuteTool ÷ pg-boss (64 in flight)", durable / m("pg-boss 64 runs/s"), "≥ 1.5"],
    ["durable ExecuteTool ÷ graphile-worker (64 in flight)", durable / m("graphile-worker 64 runs/s"), "≥ 1.5"],
    ["durable ExecuteTool ÷ in-memory", durable / m("memory runs/s"), "≥ 0.25"],
    ["durable StartExecution + watch ÷ durable ExecuteTool", m("start+watch 64 runs/s") / durable, "≥ 0.8"],
    ["server CPU per durable call ÷ per in-memory call", m("durable 64 server CPU") / m("memory server CPU"), "≤ 4"],
    ["runs/s at 8 in flight ÷ at 1", m("durable 8 runs/s") / m("durable 1 runs/s"), "≥ 1"],
    ["runs/s at 64 in flight ÷ at 8", durable / m("durable 8 runs/s"), "≥ 1"],
    ["2 replicas ÷ 1 replica (fresh, 64 in flight in all)", m("replicas 2 runs/s") / m("replicas 1 runs/s"), "≥ 1.0"],
    ["3 replicas ÷ 1 replica (fresh, 64 in flight in all)", m("replicas 3 runs/s") / m("replicas 1 runs/s"), "≥ 1.0"],
    ["runs stored as succeeded per call answered (read_only, 64)", m("durable 64 stored"), "1"],
    ["busy backend samples waiting on a lock (read_only, 64)", m("durable 64 lock waits"), "≤ 0.05"],
    ["busy backend samples waiting on a lock (writes, 64)", m("durable writes 64 lock waits"), "≤ 0.05"],
    ["busy backend samples waiting on a lightweight lock (read_only, 64)", m("durable 64 lwlock waits"), ""],
    ["busy backend samples waiting on a lock (3 replicas)", m("replicas 3 lock waits"), "≤ 0.05"],
  ];
  if (flags["baseline-main"])
    ratios.push(["in-memory ÷ the baseline build", m("memory runs/s") / m("baseline runs/s"), "≥ 0.95"]);
  log("\n| ratio | this run | target |\n|---|---|---|");
  for (const [label, value, target] of ratios) log(`| ${label} | ${fixed(value)} | ${target} |`);
}

async function providersSection(postgres: PostgresServer, figures: Figures): Promise<void> {
  const clusterStore = await postgres.createDatabase("benchcluster");
  const replicas = await Promise.all(Array.from({ length: 4 }, () => startMainProcess(["--store", clusterStore])));
  const providers: ReadyChild[] = [];
  try {
    providers.push(await provider(replicas[1]!.grpcAddress));
    figures.add("provider same-replica p50 ms", await providerLatencyMs(replicas[1]!.grpcAddress, 200));
    figures.add("provider cross-replica p50 ms", await providerLatencyMs(replicas[0]!.grpcAddress, 200));
    for (let holders = 1; holders <= 3; holders++) {
      if (holders > 1) providers.push(await provider(replicas[holders]!.grpcAddress));
      figures.add(`claims/s with ${holders} replicas`, await claimsPerSecond(replicas[0]!, 300));
    }
  } finally {
    await Promise.all(providers.map((each) => each.stop()));
    await stopAll(replicas);
  }
  const m = (name: string): number => figures.median(name);
  log("\n| provider runs | median | ratio |\n|---|---|---|");
  log(`| provider RunTool p50 ms, same replica | ${fixed(m("provider same-replica p50 ms"))} | |`);
  log(
    `| provider RunTool p50 ms, started on A, served on B | ${fixed(m("provider cross-replica p50 ms"))} | ${fixed(m("provider cross-replica p50 ms") / m("provider same-replica p50 ms"))}× same replica |`,
  );
  for (let holders = 1; holders <= 3; holders++) {
    log(
      `| runs claimed and finished per second, ${holders} replica(s) | ${fixed(m(`claims/s with ${holders} replicas`), 0)} | ${fixed(m(`claims/s with ${holders} replicas`) / m("claims/s with 1 replicas"))}× one |`,
    );
  }
}

async function main(): Promise<void> {
  log(`h2load ${ensureH2load(log)}`);
  if (!memoryOnly) log(`node for the job-queue anchors: ${ensureNode22(log)}`);
  const postgres: PostgresServer = await startPostgres({ durable: true });
  const workDir = await mkdtemp(join(tmpdir(), "toolruntime-bench-stores-"));
  const figures = new Figures();
  try {
    for (let round = 1; round <= rounds; round++) {
      await memoryRound(figures, workDir);
      if (!memoryOnly) {
        await durableRound(postgres, figures, round, workDir);
        await anchorRound(postgres, figures, round);
      }
      log(
        `round ${round}: memory ${fixed(figures.latest("memory runs/s"), 0)}/s, durable ${fixed(figures.latest("durable 64 runs/s"), 0)}/s, pg-boss ${fixed(figures.latest("pg-boss 64 runs/s"), 0)}/s, graphile-worker ${fixed(figures.latest("graphile-worker 64 runs/s"), 0)}/s, baseline ${fixed(figures.latest("baseline runs/s"), 0)}/s`,
      );
    }
    if (memoryOnly) {
      log(
        `memory ÷ baseline: calls/s ${fixed(figures.median("memory runs/s") / figures.median("baseline runs/s"))}, CPU per call ${fixed(figures.median("memory server CPU") / figures.median("baseline server CPU"))}`,
      );
      return;
    }
    report(figures);
    if (flags.providers) await providersSection(postgres, figures);
  } finally {
    await rm(workDir, { recursive: true, force: true });
    await postgres.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
