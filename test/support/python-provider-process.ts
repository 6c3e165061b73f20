import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";

/** A Python provider script as a child process, and what it printed so far. */
export class PythonProviderProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
  stdout = "";
  stderr = "";
  #waiters: (() => void)[] = [];

  /** Starts `python` with `args` in `cwd`. */
  constructor(python: string, args: readonly string[], cwd: string) {
    this.child = spawn(python, args, { cwd });
    this.exited = once(this.child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
    const wake = (): void => {
      for (const waiter of this.#waiters.splice(0)) waiter();
    };
    this.child.stdout.on("data", (chunk: Buffer) => {
      this.stdout += chunk.toString();
      wake();
    });
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.child.once("exit", wake);
  }

  /** Resolves once stdout contains `text`; rejects if the process exits first. */
  async waitFor(text: string): Promise<void> {
    for (;;) {
      if (this.stdout.includes(text)) return;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`the provider exited before printing ${JSON.stringify(text)}: ${this.stdout}${this.stderr}`);
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }
}
