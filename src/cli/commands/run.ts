import type { JsonObject } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import {
  ExecutionState,
  StartExecutionResponseSchema,
  type StartExecutionResponse,
} from "../../../gen/toolruntime/v1/execution_pb.js";
import { ToolErrorSchema, type ToolResult } from "../../../gen/toolruntime/v1/tool_pb.js";
import { callOptions, readConnectionSettings, withConnection } from "../connection.js";
import { stateName } from "../execution-format.js";
import { ExitCode } from "../exit-codes.js";
import { jsonLine } from "../format.js";
import { parseInputFlag, readInputFile } from "../json-input.js";
import { commonOptions, flagValue, stringValue, wholeNumber } from "../options.js";
import { createRunView, wantsJson } from "../run-view.js";
import { UsageError } from "../usage-error.js";
import { parseOrHelp, type CliCommand } from "./command.js";

/** The largest `--timeout-ms` the server accepts: one day. */
const maxTimeoutMs = 86_400_000;

/** `toolruntime run NAME`: runs a tool's whole lifecycle and shows its events live, or starts it detached. */
export const runCommand: CliCommand = {
  doc: {
    command: "run",
    usage: "run NAME [options]",
    summary:
      "Runs the tool NAME through discover, activate, execute and deactivate (RunnerService.RunTool) and shows\neach event as it arrives, then the result.",
    options: [
      {
        name: "input",
        type: "string",
        placeholder: "JSON",
        fallback: "{}",
        text: "the run's inputs, one JSON object",
      },
      {
        name: "input-file",
        type: "string",
        placeholder: "PATH",
        fallback: "none",
        text: "read the inputs from a file holding one JSON object instead",
      },
      {
        name: "timeout-ms",
        type: "string",
        placeholder: "N",
        fallback: "0, the tool's own default",
        text: `time the execution may take, 0 to ${maxTimeoutMs.toLocaleString("en-US")} ms`,
      },
      {
        name: "acknowledge-unsafe",
        type: "boolean",
        fallback: "off",
        text: "run a tool flagged unsafe (refused with FAILED_PRECONDITION otherwise)",
      },
      {
        name: "idempotency-key",
        type: "string",
        placeholder: "KEY",
        fallback: "none",
        text: "the same key and inputs again, while the first run is retained, attach to that run",
      },
      {
        name: "detach",
        type: "boolean",
        fallback: "off",
        text: "start the run (ExecutionService.StartExecution), print its record and exit without waiting",
      },
      {
        name: "json",
        type: "boolean",
        fallback: "on when stdout is not a terminal",
        text: "print one JSON object (a RunEvent) per event and line",
      },
      ...commonOptions,
    ],
    notes: [
      'On a terminal: one line per stage, a progress bar redrawn in place, then the output or the error.\nOtherwise one JSON object per event per line; the last one is "completed" with the result.',
      'With --detach: prints the StartExecutionResponse (one JSON line; on a terminal the id and how to watch it),\nand the run goes on; follow it with "toolruntime executions watch ID".',
      "Ctrl-C cancels the run on the server. Exit codes: 0 the run succeeded (with --detach: it was started),\n1 the run failed, 2 usage error, 3 RPC error (status code, message and error type on stderr), 130 interrupted.",
    ],
  },
  async run(args, io, env) {
    const parsed = parseOrHelp(this.doc, args, io, true);
    if (parsed === undefined) return ExitCode.ok;
    const [toolName, ...extra] = parsed.positionals;
    if (toolName === undefined) {
      throw new UsageError(
        'missing tool name: write "toolruntime run NAME", for example "toolruntime run builtin.echo"',
      );
    }
    if (extra.length > 0) {
      throw new UsageError(
        `unexpected argument "${extra[0] ?? ""}": "toolruntime run" takes one tool name; pass inputs with --input JSON`,
      );
    }
    const inputText = stringValue(parsed, "input");
    const inputFile = stringValue(parsed, "input-file");
    if (inputText !== undefined && inputFile !== undefined) {
      throw new UsageError("--input and --input-file are both given: pass the inputs only one way");
    }
    const inputs: JsonObject =
      inputFile !== undefined
        ? await readInputFile(inputFile)
        : inputText !== undefined
          ? parseInputFlag(inputText)
          : {};
    const timeoutText = stringValue(parsed, "timeout-ms");
    const timeoutMs = timeoutText === undefined ? 0 : wholeNumber(timeoutText, "--timeout-ms", 0, maxTimeoutMs);
    const idempotencyKey = stringValue(parsed, "idempotency-key") ?? "";
    const options = { acknowledgeUnsafe: flagValue(parsed, "acknowledge-unsafe"), idempotencyKey };
    const settings = await readConnectionSettings(parsed, env);
    if (flagValue(parsed, "detach")) {
      return withConnection(
        settings,
        io,
        "StartExecution",
        async ({ executions }) => {
          const response = await executions.startExecution({ toolName, inputs, timeoutMs, options }, callOptions(io));
          io.stdout.write(
            wantsJson(io, flagValue(parsed, "json"))
              ? jsonLine(StartExecutionResponseSchema, response)
              : describeStart(response),
          );
          return ExitCode.ok;
        },
        unsafeHint,
      );
    }
    const view = createRunView(io, wantsJson(io, flagValue(parsed, "json")));

    return withConnection(
      settings,
      io,
      "RunTool",
      async ({ runner }) => {
        let result: ToolResult | undefined;
        try {
          for await (const response of runner.runTool({ toolName, inputs, timeoutMs, options }, callOptions(io))) {
            const event = response.event;
            if (event === undefined) continue;
            view.show(event);
            if (event.event.case === "completed") result = event.event.value.result;
          }
        } finally {
          view.end();
        }
        if (result === undefined) {
          io.stderr.write(
            `toolruntime: the RunTool stream of "${toolName}" on "${settings.address}" ended without a result: the server broke the contract; report it to its operator\n`,
          );
          return ExitCode.rpcError;
        }
        return result.success ? ExitCode.ok : ExitCode.failed;
      },
      unsafeHint,
    );
  },
};

/** The line after a refused unsafe run: how to acknowledge it. */
function unsafeHint(error: ConnectError): string | undefined {
  const [toolError] = error.findDetails(ToolErrorSchema);
  return toolError?.errorType === "UnsafeNotAcknowledgedError"
    ? "hint: pass --acknowledge-unsafe to run a tool flagged unsafe"
    : undefined;
}

/** A detached run's start, for a terminal: its id, state and how to follow it. */
function describeStart(response: StartExecutionResponse): string {
  const execution = response.execution;
  const id = execution?.executionId ?? "?";
  const how = response.deduplicated ? "attached to the earlier run" : "started";
  return `${how} ${id} (${stateName(execution?.state ?? ExecutionState.UNSPECIFIED)})\n  watch it: toolruntime executions watch ${id}\n`;
}
