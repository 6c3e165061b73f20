import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { closeSync, openSync, readSync } from "node:fs";

/** A server started by {@link startServerProcess}. */
export interface ServerProcess {
  /** Process id: the server itself, not a shell. */
  readonly pid: number;
  /** What the process has written to stdout so far (the first 64 KiB when it goes to a file). */
  readonly stdout: () => string;
  /** Sends SIGTERM, then SIGKILL if it has not exited after `graceMs`; resolves once it exited. */
  readonly stop: (graceMs?: number) => Promise<void>;
}

/** Options of {@link startServerProcess}. */
export interface StartOptions {
  /** Whether the stdout written so far shows the server is ready. */
  readonly isReady: (stdout: string) => boolean;
  /** How long to wait for readiness. Default 20 s. */
  readonly timeoutMs?: number;
  /** Working directory. Default: this process's. */
  readonly cwd?: string;
  /** Environment. Default: this process's. */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * A file to send the process's stdout to (created or truncated), instead of a pipe read by this
   * process: a server that logs every call then writes as it would to a log file, and the bench
   * neither holds its log in memory nor spends CPU reading it.
   */
  readonly stdoutFile?: string;
}

const headBytes = 64 * 1024;

function readHead(file: string): string {
  const fd = openSync(file, "r");
  try {
    const buffer = Buffer.alloc(headBytes);
    const read = readSync(fd, buffer, 0, headBytes, 0);
    return buffer.subarray(0, read).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

function describeExit(child: ChildProcess, stderr: string): string {
  return `exited with ${child.exitCode ?? child.signalCode ?? "?"}${stderr ? `: ${stderr.trim().slice(-2000)}` : ""}`;
}

/**
 * Starts `command args` as a child process and resolves when its stdout satisfies `isReady`.
 * Rejects with its stderr when it exits first or is not ready in time (it is then killed).
 */
export async function startServerProcess(
  command: string,
  args: readonly string[],
  options: StartOptions,
): Promise<ServerProcess> {
  const file = options.stdoutFile;
  const fd = file === undefined ? undefined : openSync(file, "w");
  let child: ChildProcess;
  try {
    child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", fd ?? "pipe", "pipe"] });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  let piped = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (piped += chunk));
  const stdout = file === undefined ? () => piped : () => readHead(file);
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
  const exited = once(child, "exit");
  const stop = async (graceMs = 3000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const name = `${command} ${args.join(" ")}`;
  await new Promise<void>((resolve, reject) => {
    let poll: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      cleanup();
      void stop(0);
      reject(new Error(`${name} was not ready within ${options.timeoutMs ?? 20_000} ms; stderr: ${stderr}`));
    }, options.timeoutMs ?? 20_000);
    const onData = (): void => {
      if (!options.isReady(stdout())) return;
      cleanup();
      resolve();
    };
    const onExit = (): void => {
      cleanup();
      reject(new Error(`${name} ${describeExit(child, stderr)}`));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      clearInterval(poll);
      child.stdout?.off("data", onData);
      child.off("exit", onExit);
    };
    child.stdout?.on("data", onData);
    // A file gives no data events: look at it every 25 ms.
    if (file !== undefined) poll = setInterval(onData, 25);
    child.once("exit", onExit);
  });
  if (child.pid === undefined) throw new Error(`${name} has no process id`);
  return { pid: child.pid, stdout, stop };
}

/**
 * Runs `command args` to completion and returns the JSON value of the last line it wrote to
 * stdout. Rejects when it exits non-zero or takes longer than `timeoutMs`.
 */
export async function runJsonChild(command: string, args: readonly string[], timeoutMs: number): Promise<unknown> {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const [code] = (await once(child, "exit")) as [number | null];
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${command} ${args.join(" ")} ${describeExit(child, stderr)}`);
  const lines = stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1] ?? "null") as unknown;
}
