import { ExecutionSchema, ExecutionState, type Execution } from "../../../gen/toolruntime/v1/execution_pb.js";
import { isTerminal, terminalColumns } from "../cli-io.js";
import { callOptions, readConnectionSettings, withConnection } from "../connection.js";
import { executionTable, parseState } from "../execution-format.js";
import { ExitCode } from "../exit-codes.js";
import { jsonLine } from "../format.js";
import { commonOptions, flagValue, stringValue, wholeNumber } from "../options.js";
import { parseOrHelp, type CliCommand } from "./command.js";

/** Runs asked for per ListExecutions page: the most the server allows. */
const maxPageSize = 1000;

/** `toolruntime executions list`: the runs the caller may see, newest first. */
export const executionsListCommand: CliCommand = {
  doc: {
    command: "executions list",
    usage: "executions list [options]",
    summary: "Lists runs newest first, reading every page of ExecutionService.ListExecutions (or up to --limit).",
    options: [
      { name: "tool", type: "string", placeholder: "NAME", fallback: "every tool", text: "only runs of this tool" },
      {
        name: "state",
        type: "string",
        placeholder: "STATE",
        fallback: "every state",
        text: "only runs in this state: queued, awaiting_approval, running, succeeded, failed or cancelled",
      },
      {
        name: "limit",
        type: "string",
        placeholder: "N",
        fallback: "every run",
        text: "print at most N runs, 1 to 1,000,000",
      },
      {
        name: "json",
        type: "boolean",
        fallback: "on when stdout is not a terminal",
        text: "print one JSON object (an Execution) per line instead of a table",
      },
      ...commonOptions,
    ],
    notes: [
      "On a terminal: a table of execution id, tool, state, caller and creation time. Otherwise one JSON\nobject per run per line.",
      "Exit codes: 0 listed, 2 usage error, 3 RPC error.",
    ],
  },
  async run(args, io, env) {
    const parsed = parseOrHelp(this.doc, args, io, false);
    if (parsed === undefined) return ExitCode.ok;
    const stateText = stringValue(parsed, "state");
    const limitText = stringValue(parsed, "limit");
    const limit = limitText === undefined ? Infinity : wholeNumber(limitText, "--limit", 1, 1_000_000);
    const request = {
      toolName: stringValue(parsed, "tool") ?? "",
      state: stateText === undefined ? ExecutionState.UNSPECIFIED : parseState(stateText),
    };
    const settings = await readConnectionSettings(parsed, env);
    const json = flagValue(parsed, "json") || !isTerminal(io);
    return withConnection(settings, io, "ListExecutions", async ({ executions }) => {
      const rows: Execution[] = [];
      let printed = 0;
      let pageToken = "";
      do {
        const pageSize = Math.min(maxPageSize, limit - printed);
        const page = await executions.listExecutions({ ...request, pageSize, pageToken }, callOptions(io));
        for (const execution of page.executions.slice(0, limit - printed)) {
          if (json) io.stdout.write(jsonLine(ExecutionSchema, execution));
          else rows.push(execution);
          printed += 1;
        }
        pageToken = page.nextPageToken;
      } while (pageToken !== "" && printed < limit);
      if (!json) io.stdout.write(rows.length === 0 ? "no runs match\n" : executionTable(rows, terminalColumns(io)));
      return ExitCode.ok;
    });
  },
};
