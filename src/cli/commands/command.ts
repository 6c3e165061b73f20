import type { CliIo } from "../cli-io.js";
import { renderCommandHelp, type CommandDoc } from "../help.js";
import { flagValue, parseCommandLine, type ParsedCommandLine } from "../options.js";

/** One client command: its documentation and what it does. */
export interface CliCommand {
  /** What `--help` prints, including every flag the command accepts. */
  readonly doc: CommandDoc;
  /**
   * Runs the command with the arguments that follow its name and returns the exit code. Throws a
   * UsageError for a mistake on the command line.
   */
  run(args: readonly string[], io: CliIo, env: NodeJS.ProcessEnv): Promise<number>;
}

/**
 * Parses the command line of `doc`'s command. With `--help` it prints the help and returns
 * undefined: the command then exits 0 without doing anything else.
 */
export function parseOrHelp(
  doc: CommandDoc,
  args: readonly string[],
  io: CliIo,
  allowPositionals: boolean,
): ParsedCommandLine | undefined {
  const parsed = parseCommandLine(doc.command, args, doc.options, allowPositionals);
  if (flagValue(parsed, "help")) {
    io.stdout.write(renderCommandHelp(doc));
    return undefined;
  }
  return parsed;
}
