// ExecuteTool under h2load against one or more servers at once, with a fixed number of calls in
// flight split between them, and what the window cost: the servers' CPU and, with a PostgreSQL
// store, the database's commits, WAL syncs and CPU, and the runs it holds as succeeded (so that a
// call answered with a gRPC error, which h2load counts as HTTP 200, never counts as a run).
import { create, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { ExecuteToolRequestSchema, RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { createGrpcJsClient } from "../../test/support/grpc-js-client.js";
import type { MainProcess } from "../../test/support/main-process.js";
import { countersPerJob, readDatabaseCounters, readWalBetween, type CountersPerJob } from "../anchors/run-anchor.js";
import { grpcHeaders } from "../cases/request-bodies.js";
import { frameMessage } from "../lib/grpc-frame.js";
import { runH2load, type H2loadResult } from "../lib/h2load.js";
import { readProcessCpuMs } from "../lib/proc-cpu.js";

/** The tool a load calls, and its inputs. */
export interface LoadedTool {
  readonly name: string;
  readonly inputs: JsonObject;
}

/** A PostgreSQL store the servers share, to count what the window cost it. */
export interface StoreWindow {
  readonly url: string;
  readonly dataDirectory: string;
}

/** What one window measured. */
export interface ExecuteLoad {
  /** Calls answered per second (all servers). */
  readonly callsPerSecond: number;
  /** Median of the servers' p50 and p99 latencies, in milliseconds. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The servers' CPU per call, in milliseconds. */
  readonly serverCpuMsPerCall: number;
  /** With a store: runs stored as succeeded during the window, per call answered (1 when every call is a durable run). */
  readonly storedPerCall: number;
  /** With a store: commit records in the WAL per call, and the counters per call. */
  readonly commitsPerCall: number;
  readonly database: CountersPerJob | undefined;
  /** With a store: of the busy backends sampled (every 10 ms), the share waiting on a lock, and on a lightweight lock. */
  readonly lockWaitShare: number;
  readonly lightweightLockWaitShare: number;
}

/**
 * Samples what the database's busy client backends wait on, every 10 ms until `stop` resolves:
 * how many samples were busy, waiting on a (heavyweight) lock, and on a lightweight lock.
 */
async function sampleWaits(url: string, stop: Promise<void>): Promise<{ busy: number; lock: number; lwlock: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const counts = { busy: 0, lock: 0, lwlock: 0 };
  let stopped = false;
  void stop.then(() => (stopped = true));
  try {
    while (!stopped) {
      const { rows } = await client.query<{ wait_event_type: string | null }>(
        `SELECT wait_event_type FROM pg_stat_activity
          WHERE datname = current_database() AND state = 'active' AND backend_type = 'client backend'
            AND pid <> pg_backend_pid()`,
      );
      for (const row of rows) {
        counts.busy += 1;
        if (row.wait_event_type === "Lock") counts.lock += 1;
        if (row.wait_event_type === "LWLock") counts.lwlock += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } finally {
    await client.end();
  }
  return counts;
}

/** Activates `tool` through `server` (ExecuteTool requires it). */
export async function activate(server: MainProcess, tool: string): Promise<void> {
  const runner = createGrpcJsClient(RunnerService, server.grpcAddress);
  try {
    await runner.client.activateTool({ toolName: tool });
  } finally {
    runner.close();
  }
}

async function succeededRuns(url: string, tool: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ count: string }>(
      "SELECT count(*) FROM toolruntime.executions WHERE tool_name = $1 AND state = 4",
      [tool],
    );
    return Number(rows[0]?.count ?? 0);
  } finally {
    await client.end();
  }
}

/** Splits `inFlight` calls over `servers`: each gets clients × streams that add up to its share. */
function shares(inFlight: number, servers: number): { clients: number; streamsPerClient: number }[] {
  return Array.from({ length: servers }, (_, index) => {
    const share = Math.floor(inFlight / servers) + (index < inFlight % servers ? 1 : 0);
    const clients = share >= 16 ? 4 : 1;
    return { clients, streamsPerClient: Math.max(1, Math.round(share / clients)) };
  });
}

/**
 * Loads `servers` with ExecuteTool of `tool`, `inFlight` calls in flight in all, for `measureS`
 * seconds after a warm-up of `warmS` seconds. Throws when a call failed.
 */
export async function loadExecute(
  servers: readonly MainProcess[],
  tool: LoadedTool,
  inFlight: number,
  measureS: number,
  workDir: string,
  store?: StoreWindow,
  warmS = 1,
): Promise<ExecuteLoad> {
  const body = frameMessage(
    toBinary(ExecuteToolRequestSchema, create(ExecuteToolRequestSchema, { toolName: tool.name, inputs: tool.inputs })),
  );
  const bodyFile = join(workDir, `${tool.name}.body`);
  await writeFile(bodyFile, body);
  const split = shares(inFlight, servers.length);
  const runAll = (durationS: number): Promise<H2loadResult[]> =>
    Promise.all(
      servers.map((server, index) =>
        runH2load({
          url: `http://${server.grpcAddress}/toolruntime.v1.RunnerService/ExecuteTool`,
          bodyFile,
          headers: grpcHeaders,
          ...(split[index] as { clients: number; streamsPerClient: number }),
          durationS,
          logFile: join(workDir, `h2load-${index}.log`),
        }),
      ),
    );
  await runAll(warmS);
  const cpu = (): number => servers.reduce((sum, server) => sum + (readProcessCpuMs(server.child.pid ?? 0) ?? 0), 0);
  const storedBefore = store ? await succeededRuns(store.url, tool.name) : 0;
  const countersBefore = store ? await readDatabaseCounters(store.url, store.dataDirectory) : undefined;
  const cpuBefore = cpu();
  let windowEnded = (): void => undefined;
  const sampling = store ? sampleWaits(store.url, new Promise<void>((resolve) => (windowEnded = resolve))) : undefined;
  const results = await runAll(measureS).finally(() => windowEnded());
  const cpuAfter = cpu();
  const waits = await sampling;
  const countersAfter = store ? await readDatabaseCounters(store.url, store.dataDirectory) : undefined;
  const failed = results.reduce((sum, result) => sum + result.failed + result.non2xx, 0);
  if (failed > 0) throw new Error(`${failed} ExecuteTool calls of ${tool.name} failed under load`);
  const calls = results.reduce((sum, result) => sum + result.succeeded, 0);
  const sortedP50 = results.map((result) => result.p50Ms).sort((a, b) => a - b);
  const sortedP99 = results.map((result) => result.p99Ms).sort((a, b) => a - b);
  let database: CountersPerJob | undefined;
  let commitsPerCall = Number.NaN;
  let storedPerCall = Number.NaN;
  if (store && countersBefore && countersAfter) {
    database = countersPerJob(countersBefore, countersAfter, calls);
    commitsPerCall = (await readWalBetween(store.url, countersBefore.walLsn, countersAfter.walLsn)).commits / calls;
    storedPerCall = ((await succeededRuns(store.url, tool.name)) - storedBefore) / calls;
  }
  return {
    callsPerSecond: results.reduce((sum, result) => sum + result.requestsPerSecond, 0),
    p50Ms: sortedP50[Math.floor(sortedP50.length / 2)] ?? Number.NaN,
    p99Ms: sortedP99[Math.floor(sortedP99.length / 2)] ?? Number.NaN,
    serverCpuMsPerCall: (cpuAfter - cpuBefore) / calls,
    storedPerCall,
    commitsPerCall,
    database,
    lockWaitShare: waits ? waits.lock / Math.max(1, waits.busy) : Number.NaN,
    lightweightLockWaitShare: waits ? waits.lwlock / Math.max(1, waits.busy) : Number.NaN,
  };
}
