import { readFile, mkdtemp, rm, stat } from "node:fs/promises";
import { existsSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import {
  findPostgresBinDir,
  handToServerUser,
  runPostgresProgram,
  runPostgresProgramSync,
} from "./postgres-programs.js";

/** A private PostgreSQL server started by {@link startPostgres}, listening on 127.0.0.1 only. */
export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:PORT/postgres`: the superuser, trusted without a password. */
  readonly url: string;
  readonly port: number;
  /** The temporary data directory; the server's log is `log` in it. Removed by `stop()`. */
  readonly directory: string;
  /**
   * Creates a fresh, uniquely named database (`<prefix>_<n>`, prefix `test` by default, lowercase
   * letters, digits and `_`, at most 40 characters) and returns its URL.
   */
  createDatabase(prefix?: string): Promise<string>;
  /** Stops the server (fast shutdown) and keeps its data: a database that goes away. */
  pause(): Promise<void>;
  /** Starts a paused server again, on the same port with the same data. */
  resume(): Promise<void>;
  /** Stops the server at once (`pg_ctl -m immediate`) and removes its directory. Safe to call twice. */
  stop(): Promise<void>;
}

/** How many ports to try when another process takes the free port before the server binds it. */
const maxPortAttempts = 5;

/**
 * Starts a private PostgreSQL server for tests: initdb in a new temporary directory, then pg_ctl on
 * a free port of 127.0.0.1, with durability off (fsync, synchronous_commit, full_page_writes) since
 * the data is thrown away, unless `durable` (benchmarks: commits cost what they cost in production). Runs the programs as the `postgres` user when root. Never uses a server
 * the machine already runs. The server is also stopped when the process exits without `stop()`.
 * Rejects when no PostgreSQL is installed (naming the Debian package) or the server fails to start
 * (with its log).
 */
export async function startPostgres(options: { durable?: boolean } = {}): Promise<PostgresServer> {
  const durable = options.durable ?? false;
  const binDir = findPostgresBinDir();
  const directory = await mkdtemp(join(tmpdir(), "toolruntime-pg-"));
  let port: number;
  try {
    await handToServerUser(directory);
    // C.UTF-8: the same collation and character classes whatever the caller's LANG.
    const initdb = ["-D", directory, "-A", "trust", "--no-sync", "-U", "postgres", "--encoding=UTF8"];
    await runPostgresProgram(binDir, "initdb", [...initdb, "--locale=C.UTF-8"], directory);
    port = await startOnFreePort(binDir, directory, freeLoopbackPort, durable);
  } catch (error) {
    // A half-started server must not outlive the failure; pg_ctl stop fails harmlessly if none runs.
    runPostgresProgramSync(binDir, "pg_ctl", ["-D", directory, "-m", "immediate", "stop"], directory);
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
  const stopNow = (): void => {
    runPostgresProgramSync(binDir, "pg_ctl", ["-D", directory, "-m", "immediate", "stop"], directory);
    rmSync(directory, { recursive: true, force: true });
  };
  // Best effort for a run that ends without stop(): 'exit' allows only synchronous work.
  process.on("exit", stopNow);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let databases = 0;
  let stopped: Promise<void> | undefined;
  return {
    url,
    port,
    directory,
    async createDatabase(prefix = "test") {
      if (!/^[a-z][a-z0-9_]{0,39}$/.test(prefix)) {
        throw new Error(
          `database prefix must be lowercase letters, digits and _, at most 40: ${JSON.stringify(prefix)}`,
        );
      }
      databases += 1;
      const name = `${prefix}_${databases}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async pause() {
      await runPostgresProgram(binDir, "pg_ctl", ["-w", "-D", directory, "-m", "fast", "stop"], directory);
    },
    async resume() {
      await startOnFreePort(binDir, directory, () => Promise.resolve(port), durable, 1);
    },
    stop() {
      stopped ??= (async () => {
        process.off("exit", stopNow);
        // A paused server (see pause) is already stopped: only its directory is left to remove.
        if (existsSync(join(directory, "postmaster.pid"))) {
          await runPostgresProgram(binDir, "pg_ctl", ["-D", directory, "-m", "immediate", "stop"], directory);
        }
        await rm(directory, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

/**
 * Starts the server in `directory` on a port `nextPort` gives (a free loopback port) and returns the
 * port, trying another one when the port was taken between finding it and the server binding it.
 */
async function startOnFreePort(
  binDir: string,
  directory: string,
  nextPort: () => Promise<number>,
  durable: boolean,
  attempts = maxPortAttempts,
): Promise<number> {
  const log = join(directory, "log");
  for (let attempt = 1; ; attempt += 1) {
    const port = await nextPort();
    // Only this attempt's part of the log tells whether the port was the problem.
    const logStart = await stat(log).then(
      (info) => info.size,
      () => 0,
    );
    const options = [
      `-p ${port}`,
      // The socket goes in the private directory, not /var/run/postgresql where a system server's is.
      `-k ${directory}`,
      "-c listen_addresses=127.0.0.1",
      ...(durable ? [] : ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]),
      "-c max_connections=300",
    ].join(" ");
    try {
      await runPostgresProgram(binDir, "pg_ctl", ["-w", "-D", directory, "-o", options, "-l", log, "start"], directory);
      return port;
    } catch (error) {
      const output = (await readFile(log, "utf8").catch(() => "")).slice(logStart);
      if (/could not bind|already in use/i.test(output) && attempt < attempts) continue;
      throw new Error(`PostgreSQL did not start on 127.0.0.1:${port}; its log:\n${output}`, { cause: error });
    }
  }
}

/** A port of 127.0.0.1 that was free a moment ago: the kernel picks it for a listener we then close. */
async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no TCP address for a port-0 listener");
  return address.port;
}

let shared: Promise<PostgresServer> | undefined;

/**
 * The one PostgreSQL server of this mocha process, started on first use and stopped by the root
 * hook in `postgres-hooks.ts` (or at exit). Give each suite its own database with `createDatabase()`.
 */
export function sharedPostgres(): Promise<PostgresServer> {
  shared ??= startPostgres();
  return shared;
}

/** Stops the shared server if it was started (and started successfully); does nothing otherwise. */
export async function stopSharedPostgres(): Promise<void> {
  const starting = shared;
  shared = undefined;
  const server = await starting?.catch(() => undefined);
  await server?.stop();
}
