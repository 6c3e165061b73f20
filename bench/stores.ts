// `npm run bench:stores`: what the PostgreSQL store costs, measured against the in-memory store in
// the same run (interleaved rounds, medians), on this machine's private PostgreSQL:
// - ExecuteTool of builtin.noop on the gRPC port under h2load (64 in flight): calls/s and server
//   CPU per call, PostgreSQL ÷ memory (and memory ÷ an older build given with --baseline-main);
// - a provider's run started on replica A and served by replica B ÷ started where the provider
//   is connected: p50 latency of RunTool;
// - runs claimed per second by 1, 2 and 3 replicas holding a provider, for runs started elsewhere.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
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
import { activateNoop, checkGrpcExecute } from "./cases/checks.js";
import { grpcHeaders, requestBodies } from "./cases/request-bodies.js";
import { ensureH2load } from "./lib/ensure-h2load.js";
import { runH2load } from "./lib/h2load.js";
import { readProcessCpuMs } from "./lib/proc-cpu.js";

const log = (line: string): void => void process.stdout.write(`${line}\n`);
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};
const fixed = (value: number, digits = 2): string => value.toFixed(digits);

const { values: flags } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    "measure-s": { type: "string", default: "5" },
    "baseline-main": { type: "string" },
    // Only the in-memory store against the baseline build: what the ports cost, with more rounds.
    "memory-only": { type: "boolean", default: false },
  },
});
const memoryOnly = flags["memory-only"] ?? false;
const rounds = Number(flags.rounds);
const measureS = Number(flags["measure-s"]);

/** ExecuteTool of builtin.noop under h2load against one server: calls/s and CPU ms per call. */
async function measureExecute(server: MainProcess, workDir: string): Promise<{ rate: number; cpuMs: number }> {
  const baseUrl = `http://${server.grpcAddress}`;
  await activateNoop(baseUrl, "grpc");
  const url = `${baseUrl}/toolruntime.v1.RunnerService/ExecuteTool`;
  await checkGrpcExecute(baseUrl, { url, headers: grpcHeaders, body: requestBodies.grpcExecute });
  const bodyFile = join(workDir, "execute.body");
  await writeFile(bodyFile, requestBodies.grpcExecute);
  const run = (durationS: number) => ({
    url,
    bodyFile,
    headers: grpcHeaders,
    clients: 4,
    streamsPerClient: 16,
    durationS,
    logFile: join(workDir, "h2load.log"),
  });
  await runH2load(run(1));
  const before = readProcessCpuMs(server.child.pid ?? 0) ?? Number.NaN;
  const loaded = await runH2load(run(measureS));
  const after = readProcessCpuMs(server.child.pid ?? 0) ?? Number.NaN;
  if (loaded.failed + loaded.non2xx > 0) throw new Error(`${loaded.failed + loaded.non2xx} calls failed under load`);
  return { rate: loaded.requestsPerSecond, cpuMs: (after - before) / loaded.succeeded };
}

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

async function main(): Promise<void> {
  log(`h2load ${ensureH2load(log)}`);
  const postgres: PostgresServer = await startPostgres();
  const workDir = await mkdtemp(join(tmpdir(), "toolruntime-bench-stores-"));
  const results: Record<string, number[]> = {};
  const record = (name: string, value: number): void => void (results[name] ??= []).push(value);
  try {
    for (let round = 1; round <= rounds; round++) {
      const memory = await startMainProcess([]);
      const memoryRun = await measureExecute(memory, workDir).finally(() => stopAll([memory]));
      record("memory calls/s", memoryRun.rate);
      record("memory CPU ms/call", memoryRun.cpuMs);
      if (!memoryOnly) {
        const store = await postgres.createDatabase(`bench${round}`);
        const shared = await startMainProcess(["--store", store]);
        const sharedRun = await measureExecute(shared, workDir).finally(() => stopAll([shared]));
        record("postgres calls/s", sharedRun.rate);
        record("postgres CPU ms/call", sharedRun.cpuMs);
      }
      if (flags["baseline-main"]) {
        const baseline = await startMainProcess([], { command: [process.execPath, flags["baseline-main"]] });
        const baselineRun = await measureExecute(baseline, workDir).finally(() => stopAll([baseline]));
        record("baseline calls/s", baselineRun.rate);
        record("baseline CPU ms/call", baselineRun.cpuMs);
      }
      const latest = (name: string): string => fixed(results[name]?.at(-1) ?? Number.NaN, 0);
      log(
        `round ${round}: memory ${latest("memory calls/s")}/s, postgres ${latest("postgres calls/s")}/s, baseline ${latest("baseline calls/s")}/s`,
      );
    }

    // Cross-replica provider runs and claims: four replicas on one database.
    if (memoryOnly) {
      const m = (name: string): number => median(results[name] ?? []);
      log(
        `memory ÷ baseline: calls/s ${fixed(m("memory calls/s") / m("baseline calls/s"))}, CPU per call ${fixed(m("memory CPU ms/call") / m("baseline CPU ms/call"))}`,
      );
      return;
    }
    const clusterStore = await postgres.createDatabase("benchcluster");
    const replicas = await Promise.all(Array.from({ length: 4 }, () => startMainProcess(["--store", clusterStore])));
    const providers: ReadyChild[] = [];
    try {
      providers.push(await provider(replicas[1]!.grpcAddress));
      record("provider same-replica p50 ms", await providerLatencyMs(replicas[1]!.grpcAddress, 200));
      record("provider cross-replica p50 ms", await providerLatencyMs(replicas[0]!.grpcAddress, 200));
      for (let holders = 1; holders <= 3; holders++) {
        if (holders > 1) providers.push(await provider(replicas[holders]!.grpcAddress));
        record(`claims/s with ${holders} replicas`, await claimsPerSecond(replicas[0]!, 300));
      }
    } finally {
      await Promise.all(providers.map((each) => each.stop()));
      await stopAll(replicas);
    }

    const m = (name: string): number => median(results[name] ?? []);
    log("\n| measure | median | ratio |\n|---|---|---|");
    log(`| ExecuteTool calls/s, memory | ${fixed(m("memory calls/s"), 0)} | |`);
    log(
      `| ExecuteTool calls/s, PostgreSQL | ${fixed(m("postgres calls/s"), 0)} | ${fixed(m("postgres calls/s") / m("memory calls/s"))}× memory |`,
    );
    log(`| server CPU ms per call, memory | ${fixed(m("memory CPU ms/call"), 3)} | |`);
    log(
      `| server CPU ms per call, PostgreSQL | ${fixed(m("postgres CPU ms/call"), 3)} | ${fixed(m("postgres CPU ms/call") / m("memory CPU ms/call"))}× memory |`,
    );
    if (flags["baseline-main"]) {
      log(
        `| ExecuteTool calls/s, baseline build (memory) | ${fixed(m("baseline calls/s"), 0)} | memory ÷ baseline ${fixed(m("memory calls/s") / m("baseline calls/s"))} |`,
      );
      log(
        `| server CPU ms per call, baseline build | ${fixed(m("baseline CPU ms/call"), 3)} | memory ÷ baseline ${fixed(m("memory CPU ms/call") / m("baseline CPU ms/call"))} |`,
      );
    }
    log(`| provider RunTool p50 ms, same replica | ${fixed(m("provider same-replica p50 ms"))} | |`);
    log(
      `| provider RunTool p50 ms, started on A, served on B | ${fixed(m("provider cross-replica p50 ms"))} | ${fixed(m("provider cross-replica p50 ms") / m("provider same-replica p50 ms"))}× same replica |`,
    );
    for (let holders = 1; holders <= 3; holders++) {
      log(
        `| runs claimed and finished per second, ${holders} replica(s) | ${fixed(m(`claims/s with ${holders} replicas`), 0)} | ${fixed(m(`claims/s with ${holders} replicas`) / m("claims/s with 1 replicas"))}× one |`,
      );
    }
  } finally {
    await rm(workDir, { recursive: true, force: true });
    await postgres.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
