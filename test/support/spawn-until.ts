import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";

/** A child process started by {@link spawnUntil}, once it printed what was awaited. */
export interface ReadyChild {
  readonly child: ChildProcessWithoutNullStreams;
  /** Everything it wrote to stdout and stderr so far. */
  readonly output: () => string;
  /** Sends SIGTERM and resolves with the exit code. */
  readonly stop: () => Promise<number | null>;
}

/**
 * Starts `command` and resolves once its stdout contains `text`; rejects with its output if it
 * exits first.
 */
export async function spawnUntil(
  command: string,
  args: readonly string[],
  cwd: string,
  text: string,
): Promise<ReadyChild> {
  const child = spawn(command, args, { cwd });
  const exited = (once(child, "exit") as Promise<[number | null]>).then(([code]) => code);
  let stdout = "";
  let output = "";
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      output += chunk.toString();
      if (stdout.includes(text)) resolve();
    });
    void exited.then((code) =>
      reject(new Error(`${command} exited with ${code} before printing "${text}": ${output}`)),
    );
  });
  return {
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}
