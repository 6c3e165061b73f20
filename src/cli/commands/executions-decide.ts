import type { JsonObject } from "@bufbuild/protobuf";
import { ExecutionSchema, ExecutionState, type Execution } from "../../../gen/toolruntime/v1/execution_pb.js";
import { isTerminal } from "../cli-io.js";
import { canConfirm, confirm } from "../confirm.js";
import { callOptions, readConnectionSettings, withConnection } from "../connection.js";
import { stateName, timeText } from "../execution-format.js";
import { ExitCode } from "../exit-codes.js";
import { jsonLine, printable } from "../format.js";
import { commonOptions, flagValue, stringValue } from "../options.js";
import { UsageError } from "../usage-error.js";
import { parseOrHelp, type CliCommand } from "./command.js";
import { executionIdArgument } from "./execution-id.js";

type Verb = "approve" | "reject";

/** `toolruntime executions approve ID`: approves a run that waits for a human. */
export const executionsApproveCommand: CliCommand = decideCommand("approve");

/** `toolruntime executions reject ID`: rejects a run that waits for a human. */
export const executionsRejectCommand: CliCommand = decideCommand("reject");

function decideCommand(verb: Verb): CliCommand {
  const rpc = verb === "approve" ? "ApproveExecution" : "RejectExecution";
  return {
    doc: {
      command: `executions ${verb}`,
      usage: `executions ${verb} ID [options]`,
      summary:
        `${verb === "approve" ? "Approves" : "Rejects"} the run ID, which waits for a human decision (ExecutionService.${rpc}).\n` +
        "First shows the tool, the caller, the inputs and the full inputs digest the decision is bound to.",
      options: [
        {
          name: "comment",
          type: "string",
          placeholder: "TEXT",
          fallback: "none",
          text: "recorded with the decision, at most 1,024 characters",
        },
        {
          name: "digest",
          type: "string",
          placeholder: "SHA256",
          fallback: "the digest shown",
          text: "the inputs digest to bind the decision to; the server refuses it if the run's differs",
        },
        {
          name: "yes",
          type: "boolean",
          short: "y",
          fallback: "off",
          text: "decide without asking; required when stdin is not a terminal",
        },
        ...commonOptions,
      ],
      notes: [
        `What is decided goes to stderr; on a terminal it asks "${verb} …? [y/N]" and only "y" or "yes" goes on.\n` +
          "Then prints the run's Execution: one line on a terminal, one JSON line otherwise.",
        `Exit codes: 0 ${verb === "approve" ? "approved" : "rejected"}, 1 the run is not awaiting approval, 2 usage error (or no --yes\nwithout a terminal), 3 RPC error, 4 declined at the prompt (nothing was sent).`,
      ],
    },
    async run(args, io, env) {
      const parsed = parseOrHelp(this.doc, args, io, true);
      if (parsed === undefined) return ExitCode.ok;
      const executionId = executionIdArgument(parsed, verb);
      const yes = flagValue(parsed, "yes");
      if (!yes && !canConfirm(io)) {
        throw new UsageError(
          `"toolruntime executions ${verb}" asks for confirmation on a terminal, and stdin is not one: pass --yes to ${verb} without asking`,
        );
      }
      const comment = stringValue(parsed, "comment") ?? "";
      const givenDigest = stringValue(parsed, "digest");
      const settings = await readConnectionSettings(parsed, env);
      return withConnection(settings, io, rpc, async ({ executions }) => {
        const shown = await executions.getExecution({ executionId, includeInputs: true }, callOptions(io));
        const execution = shown.execution;
        if (execution === undefined) throw new Error(`GetExecution of "${executionId}" returned no record`);
        const inputsDigest = givenDigest ?? execution.inputsDigest;
        io.stderr.write(describeDecision(verb, execution, shown.inputs ?? {}, inputsDigest));
        if (execution.state !== ExecutionState.AWAITING_APPROVAL) {
          io.stderr.write(
            `toolruntime: execution "${executionId}" is not awaiting approval (it is ${stateName(execution.state)}): nothing was sent\n`,
          );
          return ExitCode.failed;
        }
        if (!yes && !(await confirm(io, `${verb} execution "${executionId}" of "${printable(execution.toolName)}"?`))) {
          io.stderr.write(`toolruntime: not ${verb === "approve" ? "approved" : "rejected"}; nothing was sent\n`);
          return ExitCode.declined;
        }
        const request = { executionId, inputsDigest, comment };
        const decided =
          verb === "approve"
            ? await executions.approveExecution(request, callOptions(io))
            : await executions.rejectExecution(request, callOptions(io));
        const record = decided.execution;
        if (record !== undefined) {
          io.stdout.write(
            isTerminal(io)
              ? `${verb === "approve" ? "approved" : "rejected"} by ${printable(record.approval?.decidedBy ?? "?")}: ${record.executionId} is ${stateName(record.state)}\n`
              : jsonLine(ExecutionSchema, record),
          );
        }
        return ExitCode.ok;
      });
    },
  };
}

/** What a decision is about: the run, its tool and caller, its inputs and the digest it binds. */
function describeDecision(verb: Verb, execution: Execution, inputs: JsonObject, digest: string): string {
  const indented = JSON.stringify(inputs, null, 2).replaceAll("\n", "\n             ");
  return [
    `to ${verb}:`,
    `  execution  ${execution.executionId}`,
    `  tool       ${printable(execution.toolName)}${execution.writes ? " (writes)" : ""}`,
    `  caller     ${printable(execution.caller) || "-"}`,
    `  created    ${timeText(execution.createdAt)}`,
    `  state      ${stateName(execution.state)}`,
    `  inputs     ${indented}`,
    `  digest     ${digest}`,
    "",
  ].join("\n");
}
