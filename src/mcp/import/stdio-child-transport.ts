import { StdioClientTransport, type StdioServerParameters } from "@modelcontextprotocol/client/stdio";
import type { ChildProcess } from "node:child_process";
import { createStderrTail, type StderrTail } from "./stderr-tail.js";

/** How a child process ended. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** What a stdio child left behind when it could not be started: its exit and last stderr lines. */
export interface ChildReport {
  /** Undefined when the process never ran (it could not be spawned) or did not end in time. */
  readonly exit: ChildExit | undefined;
  /** The last stderr lines (see createStderrTail), "" when none. */
  readonly stderr: string;
}

/**
 * The SDK's stdio transport (stderr piped), which also keeps the child's last stderr lines and how
 * it ended, so that a server that fails to start can be reported with its own words.
 */
export class StdioChildTransport extends StdioClientTransport {
  private readonly tail: StderrTail = createStderrTail();
  private readonly stderrEnded: Promise<void>;
  private exit: Promise<ChildExit> | undefined;

  constructor(params: Omit<StdioServerParameters, "stderr">) {
    super({ ...params, stderr: "pipe" });
    const stderr = this.stderr;
    stderr?.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") this.tail.push(line);
    });
    this.stderrEnded = new Promise((resolve) => stderr?.once("end", resolve).once("close", resolve));
  }

  override async start(): Promise<void> {
    await super.start();
    // The SDK keeps the child private and exposes no exit status; read it once it is spawned. If a
    // later SDK renames the field, the report only loses the exit status.
    const child = (this as unknown as { _process?: ChildProcess })._process;
    if (child) this.exit = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  }

  /**
   * The child's exit and last stderr lines, once it has exited and its stderr is drained; waits at
   * most `withinMs` for either (a grandchild may hold stderr open), so call it after closing.
   */
  async report(withinMs = 1000): Promise<ChildReport> {
    const [exit] = await Promise.all([
      this.exit ? within(this.exit, withinMs) : undefined,
      this.exit ? within(this.stderrEnded, withinMs) : undefined,
    ]);
    return { exit, stderr: this.tail.text() };
  }
}

/** `promise`'s value, or undefined if it has not settled within `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
