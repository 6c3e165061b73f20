import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";

/** A server started by {@link startServerProcess}. */
export interface ServerProcess {
  /** Process id: the server itself, not a shell. */
  readonly pid: number;
  /** What the process has written to stdout so far. */
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
  const child = spawn(command, args, { cwd: options.cwd, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
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
    const timer = setTimeout(() => {
      cleanup();
      void stop(0);
      reject(new Error(`${name} was not ready within ${options.timeoutMs ?? 20_000} ms; stderr: ${stderr}`));
    }, options.timeoutMs ?? 20_000);
    const onData = (): void => {
      if (!options.isReady(stdout)) return;
      cleanup();
      resolve();
    };
    const onExit = (): void => {
      cleanup();
      reject(new Error(`${name} ${describeExit(child, stderr)}`));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stdout?.off("data", onData);
      child.off("exit", onExit);
    };
    child.stdout?.on("data", onData);
    child.once("exit", onExit);
  });
  if (child.pid === undefined) throw new Error(`${name} has no process id`);
  return { pid: child.pid, stdout: () => stdout, stop };
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
