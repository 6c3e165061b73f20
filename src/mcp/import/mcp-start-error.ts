import type { ChildReport } from "./stdio-child-transport.js";

/** A stdio MCP server that could not be started, with what its process left behind. */
export class McpStartError extends Error {
  override readonly name = "McpStartError";
  constructor(
    readonly report: ChildReport,
    cause: unknown,
  ) {
    super(`${errorMessage(cause)}${exitText(report) ? ` (${exitText(report)})` : ""}`, { cause });
  }
}

/** How a start failure reads in the log: one line and plain fields, never a stack. */
export interface StartFailureSummary {
  /**
   * E.g. `exited with code 3; its stderr ends with "boom"`: one line, the stderr quoted as JSON
   * (nothing is said of stderr when the process never ran).
   */
  readonly text: string;
  /** Without the stderr: `exited with code 3`, or the error's message. */
  readonly short: string;
  readonly fields: {
    readonly error: string;
    readonly exitCode?: number;
    readonly exitSignal?: string;
    readonly stderr?: string;
  };
}

/** Summarises why a connection attempt failed, for an operator. */
export function summariseStartFailure(error: unknown): StartFailureSummary {
  if (!(error instanceof McpStartError)) {
    const message = errorMessage(error);
    return { text: message, short: message, fields: { error: message } };
  }
  const { exit, stderr } = error.report;
  const why = exitText(error.report) || errorMessage(error.cause);
  return {
    text:
      stderr !== ""
        ? `${why}; its stderr ends with ${JSON.stringify(stderr)}`
        : exit
          ? `${why}; it wrote nothing to stderr`
          : why,
    short: why,
    fields: {
      error: errorMessage(error.cause),
      ...(exit?.code != null ? { exitCode: exit.code } : {}),
      ...(exit?.signal != null ? { exitSignal: exit.signal } : {}),
      ...(stderr === "" ? {} : { stderr }),
    },
  };
}

function exitText({ exit }: ChildReport): string {
  if (exit?.signal != null) return `killed by ${exit.signal}`;
  if (exit?.code != null) return `exited with code ${exit.code}`;
  return "";
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
