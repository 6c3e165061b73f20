import { toJson } from "@bufbuild/protobuf";
import { GetExecutionResponseSchema } from "../../../gen/toolruntime/v1/execution_pb.js";
import { isTerminal } from "../cli-io.js";
import { callOptions, readConnectionSettings, withConnection } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import { jsonLine, prettyJson } from "../format.js";
import { commonOptions } from "../options.js";
import { parseOrHelp, type CliCommand } from "./command.js";
import { executionIdArgument } from "./execution-id.js";

/** `toolruntime executions get ID`: one run's record and inputs. */
export const executionsGetCommand: CliCommand = {
  doc: {
    command: "executions get",
    usage: "executions get ID [options]",
    summary: "Prints the record of the run ID and its inputs (ExecutionService.GetExecution).",
    options: [...commonOptions],
    notes: [
      "Prints a GetExecutionResponse: indented JSON on a terminal, one JSON line otherwise.",
      "Exit codes: 0 printed, 2 usage error, 3 RPC error (NOT_FOUND for an unknown or evicted id).",
    ],
  },
  async run(args, io, env) {
    const parsed = parseOrHelp(this.doc, args, io, true);
    if (parsed === undefined) return ExitCode.ok;
    const executionId = executionIdArgument(parsed, "get");
    const settings = await readConnectionSettings(parsed, env);
    return withConnection(settings, io, "GetExecution", async ({ executions }) => {
      const response = await executions.getExecution({ executionId, includeInputs: true }, callOptions(io));
      io.stdout.write(
        isTerminal(io)
          ? prettyJson(toJson(GetExecutionResponseSchema, response))
          : jsonLine(GetExecutionResponseSchema, response),
      );
      return ExitCode.ok;
    });
  },
};
