import type { ParsedCommandLine } from "../options.js";
import { UsageError } from "../usage-error.js";

/**
 * The one positional argument of `toolruntime executions SUBCOMMAND ID`; throws a UsageError when
 * it is missing or followed by others.
 */
export function executionIdArgument(parsed: ParsedCommandLine, subcommand: string): string {
  const [id, ...extra] = parsed.positionals;
  if (id === undefined || id === "") {
    throw new UsageError(
      `missing execution id: write "toolruntime executions ${subcommand} ID"; "toolruntime executions list" shows the ids`,
    );
  }
  if (extra.length > 0) {
    throw new UsageError(
      `unexpected argument "${extra[0] ?? ""}": "toolruntime executions ${subcommand}" takes one execution id`,
    );
  }
  return id;
}
