import { execFile, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chown } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** Where Debian installs each PostgreSQL major version: `<root>/<major>/bin`. */
const debianRoot = "/usr/lib/postgresql";

/** The user Debian's postgresql package creates; the server runs as it when this process is root. */
const serverUser = "postgres";

const isRoot = (): boolean => typeof process.getuid === "function" && process.getuid() === 0;

/**
 * The `bin` directory of the highest PostgreSQL major version installed under `root` (Debian's
 * `/usr/lib/postgresql/<major>/bin` by default) that has both `initdb` and `pg_ctl`.
 * Throws an Error naming the Debian package `postgresql` and its install command when there is none.
 */
export function findPostgresBinDir(root: string = debianRoot): string {
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+$/.test(name))
        .map(Number)
        .filter((major) => ["initdb", "pg_ctl"].every((program) => existsSync(join(root, `${major}`, "bin", program))))
        .sort((a, b) => b - a)
    : [];
  const [highest] = majors;
  if (highest === undefined) {
    throw new Error(
      `No PostgreSQL server programs (initdb, pg_ctl) under ${root}/<major>/bin: the tests start a private ` +
        `server from Debian's postgresql package. Install it with: sudo apt-get install postgresql`,
    );
  }
  return join(root, `${highest}`, "bin");
}

/**
 * The command line that runs `program` from `binDir`: as is, or through `runuser -u postgres --`
 * when this process is root, because PostgreSQL refuses to run as root.
 */
function commandLine(binDir: string, program: string, args: readonly string[]): [string, string[]] {
  const path = join(binDir, program);
  return isRoot() ? ["runuser", ["-u", serverUser, "--", path, ...args]] : [path, [...args]];
}

/**
 * Runs a PostgreSQL program (`initdb`, `pg_ctl`) from `binDir` in `cwd`, as the `postgres` user when
 * root. Rejects with an Error carrying the program's output when it exits non-zero.
 */
export async function runPostgresProgram(
  binDir: string,
  program: string,
  args: readonly string[],
  cwd: string,
): Promise<void> {
  const [file, fileArgs] = commandLine(binDir, program, args);
  try {
    // cwd is the server's own directory: as the postgres user, the caller's cwd may be unreadable.
    await execFileAsync(file, fileArgs, { cwd });
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`${program} ${args.join(" ")} failed: ${`${stderr}\n${stdout}`.trim()}`, { cause: error });
  }
}

/**
 * The synchronous form of {@link runPostgresProgram} for `process.on("exit")`, where nothing
 * asynchronous runs; returns whether the program exited with 0.
 */
export function runPostgresProgramSync(binDir: string, program: string, args: readonly string[], cwd: string): boolean {
  const [file, fileArgs] = commandLine(binDir, program, args);
  return spawnSync(file, fileArgs, { cwd, stdio: "ignore" }).status === 0;
}

/**
 * Makes `directory` owned by the `postgres` user when this process is root (initdb and the server
 * run as that user and must own their data directory); does nothing otherwise.
 */
export async function handToServerUser(directory: string): Promise<void> {
  if (!isRoot()) return;
  const id = async (flag: "-u" | "-g"): Promise<number> => {
    try {
      return Number((await execFileAsync("id", [flag, serverUser])).stdout.trim());
    } catch (error) {
      throw new Error(
        `No "${serverUser}" user to run PostgreSQL as (it refuses to run as root); Debian's postgresql ` +
          `package creates it: sudo apt-get install postgresql`,
        { cause: error },
      );
    }
  };
  await chown(directory, await id("-u"), await id("-g"));
}
