/** Where a client command writes, and what can stop it. */
export interface CliIo {
  /** Results: JSON lines when it is not a TTY, readable text when it is. */
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  /** Diagnostics: usage errors, RPC errors, interruptions, and what a confirmation is asked about. */
  readonly stderr: NodeJS.WritableStream;
  /** Answers to confirmations (`executions approve`); a confirmation is asked only when it is a TTY. */
  readonly stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Aborting it cancels the call in flight (as Ctrl-C does) and the command returns 130. */
  readonly signal?: AbortSignal;
  /** Environment variables to read `TOOLRUNTIME_*` settings from; `process.env` when absent. */
  readonly env?: NodeJS.ProcessEnv;
}

/** Whether `io.stdout` is a terminal, which selects readable output over JSON lines. */
export function isTerminal(io: CliIo): boolean {
  return io.stdout.isTTY === true;
}

/** The width of the terminal in columns, 80 when unknown. */
export function terminalColumns(io: CliIo): number {
  const columns = io.stdout.columns;
  return typeof columns === "number" && Number.isFinite(columns) && columns > 0 ? Math.floor(columns) : 80;
}
