import type { ToolResult } from "../../../gen/toolruntime/v1/tool_pb.js";
import { callOptions, readConnectionSettings, withConnection } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import { commonOptions, flagValue, stringValue } from "../options.js";
import { createRunView, wantsJson } from "../run-view.js";
import { UsageError } from "../usage-error.js";
import { parseOrHelp, type CliCommand } from "./command.js";
import { executionIdArgument } from "./execution-id.js";

/** `toolruntime executions watch ID`: a run's events, replayed then live, until it completes. */
export const executionsWatchCommand: CliCommand = {
  doc: {
    command: "executions watch",
    usage: "executions watch ID [options]",
    summary:
      'Streams the events of the run ID (ExecutionService.WatchExecution): those it already had, then each new one\nuntil the run completes. Another client\'s run, or one started with "run --detach", can be followed.',
    options: [
      {
        name: "after-sequence",
        type: "string",
        placeholder: "N",
        fallback: "0, every event",
        text: "show only the events after sequence number N (to resume a watch)",
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
      'Output as for "toolruntime run". Ctrl-C stops watching; the run goes on.',
      "Exit codes: 0 the run succeeded, 1 it failed or was cancelled, 2 usage error, 3 RPC error (with the\nsequence number to resume from), 130 interrupted.",
    ],
  },
  async run(args, io, env) {
    const parsed = parseOrHelp(this.doc, args, io, true);
    if (parsed === undefined) return ExitCode.ok;
    const executionId = executionIdArgument(parsed, "watch");
    const afterText = stringValue(parsed, "after-sequence");
    const afterSequence = afterText === undefined ? 0n : parseSequence(afterText);
    const settings = await readConnectionSettings(parsed, env);
    const view = createRunView(io, wantsJson(io, flagValue(parsed, "json")));
    let lastSequence = afterSequence;
    const resumeHint = (): string | undefined =>
      lastSequence > 0n
        ? `resume with: toolruntime executions watch ${executionId} --after-sequence ${lastSequence}`
        : undefined;

    return withConnection(
      settings,
      io,
      "WatchExecution",
      async ({ executions }) => {
        let result: ToolResult | undefined;
        try {
          for await (const { event } of executions.watchExecution({ executionId, afterSequence }, callOptions(io))) {
            if (event === undefined) continue;
            lastSequence = event.sequence;
            view.show(event);
            if (event.event.case === "completed") result = event.event.value.result;
          }
        } finally {
          view.end();
        }
        if (result === undefined) {
          io.stderr.write(`toolruntime: the watch of execution "${executionId}" ended before the run completed\n`);
          const hint = resumeHint();
          if (hint !== undefined) io.stderr.write(`  ${hint}\n`);
          return ExitCode.rpcError;
        }
        return result.success ? ExitCode.ok : ExitCode.failed;
      },
      resumeHint,
    );
  },
};

function parseSequence(text: string): bigint {
  if (!/^[0-9]{1,20}$/.test(text) || BigInt(text) > 0xffff_ffff_ffff_ffffn) {
    throw new UsageError(`--after-sequence "${text}" is invalid: use an event sequence number, a whole number from 0`);
  }
  return BigInt(text);
}
