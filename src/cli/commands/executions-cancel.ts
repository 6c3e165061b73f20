import { ExecutionSchema } from "../../../gen/toolruntime/v1/execution_pb.js";
import { isTerminal } from "../cli-io.js";
import { callOptions, readConnectionSettings, withConnection } from "../connection.js";
import { executionLine } from "../execution-format.js";
import { ExitCode } from "../exit-codes.js";
import { jsonLine } from "../format.js";
import { commonOptions } from "../options.js";
import { parseOrHelp, type CliCommand } from "./command.js";
import { executionIdArgument } from "./execution-id.js";

/** `toolruntime executions cancel ID`: cancels a run. */
export const executionsCancelCommand: CliCommand = {
  doc: {
    command: "executions cancel",
    usage: "executions cancel ID [options]",
    summary: "Cancels the run ID (ExecutionService.CancelExecution) and prints its record.",
    options: [...commonOptions],
    notes: [
      'Prints the Execution: one line on a terminal, one JSON line otherwise. The state may read "running" for\na moment while the handler stops: "toolruntime executions watch ID" shows the end.',
      "Exit codes: 0 cancelled (or already cancelled), 2 usage error, 3 RPC error (NOT_FOUND; FAILED_PRECONDITION\nfor a run that already finished otherwise).",
    ],
  },
  async run(args, io, env) {
    const parsed = parseOrHelp(this.doc, args, io, true);
    if (parsed === undefined) return ExitCode.ok;
    const executionId = executionIdArgument(parsed, "cancel");
    const settings = await readConnectionSettings(parsed, env);
    return withConnection(settings, io, "CancelExecution", async ({ executions }) => {
      const { execution } = await executions.cancelExecution({ executionId }, callOptions(io));
      if (execution !== undefined) {
        io.stdout.write(isTerminal(io) ? executionLine(execution) : jsonLine(ExecutionSchema, execution));
      }
      return ExitCode.ok;
    });
  },
};
