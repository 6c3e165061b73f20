import { execFile, spawnSync } from "node:child_process";
import { chown, mkdtemp, readdir, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const execFileAsync = promisify(execFile);

/** A private PostgreSQL server started for the tests, on a free loopback port. */
export interface PostgresServer {
  /** URL of its `postgres` database, as the `postgres` superuser (trust authentication). */
  readonly url: string;
  readonly port: number;
  /** Creates a fresh, uniquely named database and returns its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /** Stops the server (fast shutdown) and keeps its data, to test a database that goes away. */
  pause(): Promise<void>;
  /** Starts a paused server again on the same port, with the same data. */
  resume(): Promise<void>;
  /** Stops the server at once and removes its data directory. */
  stop(): Promise<void>;
}

/** The newest Debian PostgreSQL binaries directory, or an Error naming the package to install. */
async function binariesDir(): Promise<string> {
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root)
    ? (await readdir(root)).filter((name) => existsSync(path.join(root, name, "bin", "initdb")))
    : [];
  const newest = majors.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) {
    throw new Error(
      "PostgreSQL is not installed: the store tests need Debian's postgresql package (sudo apt-get install postgresql)",
    );
  }
  return path.join(root, newest, "bin");
}

/** A port free on 127.0.0.1 a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

/** Runs a PostgreSQL program, as the `postgres` user when root (PostgreSQL refuses to run as root). */
async function runAsOwner(program: string, args: readonly string[]): Promise<void> {
  const [command, commandArgs] = isRoot ? ["runuser", ["-u", "postgres", "--", program, ...args]] : [program, args];
  await execFileAsync(command, commandArgs, { timeout: 60_000 });
}

/**
 * Starts a private PostgreSQL: `initdb` into a new temporary directory (trust authentication, no
 * fsync: test data need not survive a power cut) and `pg_ctl start` on a free 127.0.0.1 port with
 * its socket in that directory, retrying with another port if one was taken meanwhile.
 */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = await binariesDir();
  const dir = await mkdtemp(path.join(os.tmpdir(), "toolruntime-pg-"));
  const dataDir = path.join(dir, "data");
  if (isRoot) {
    const { stdout } = await execFileAsync("id", ["-u", "postgres"]);
    const { stdout: group } = await execFileAsync("id", ["-g", "postgres"]);
    await chown(dir, Number(stdout.trim()), Number(group.trim()));
  }
  await runAsOwner(path.join(bin, "initdb"), [
    "-D",
    dataDir,
    "-A",
    "trust",
    "--no-sync",
    "-U",
    "postgres",
    "-E",
    "UTF8",
  ]);
  let port = 0;
  const start = async (): Promise<void> => {
    const options = [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses=127.0.0.1",
      "-c fsync=off",
      "-c synchronous_commit=off",
      "-c full_page_writes=off",
      "-c max_connections=400",
    ].join(" ");
    await runAsOwner(path.join(bin, "pg_ctl"), [
      "-w",
      "-D",
      dataDir,
      "-o",
      options,
      "-l",
      path.join(dir, "log"),
      "start",
    ]);
  };
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await start();
      break;
    } catch (error) {
      if (attempt >= 4) {
        await rm(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let databases = 0;
  const stopNow = (): void => {
    spawnSync(isRoot ? "runuser" : path.join(bin, "pg_ctl"), [
      ...(isRoot ? ["-u", "postgres", "--", path.join(bin, "pg_ctl")] : []),
      "-D",
      dataDir,
      "-m",
      "immediate",
      "stop",
    ]);
  };
  // A run that crashes must not leave a server behind.
  process.once("exit", stopNow);
  return {
    url,
    port,
    async createDatabase(prefix = "test") {
      const name = `${prefix}_${process.pid}_${++databases}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    pause: () => runAsOwner(path.join(bin, "pg_ctl"), ["-w", "-D", dataDir, "-m", "fast", "stop"]),
    resume: start,
    async stop() {
      process.removeListener("exit", stopNow);
      stopNow();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

let shared: Promise<PostgresServer> | undefined;

/** One private server for the whole test run, started on first use and stopped by the root hook. */
export function sharedPostgres(): Promise<PostgresServer> {
  shared ??= startPostgres();
  return shared;
}

/** Stops the shared server if it was started (the root `afterAll` hook). */
export async function stopSharedPostgres(): Promise<void> {
  const started = shared;
  shared = undefined;
  if (started) await (await started).stop();
}
