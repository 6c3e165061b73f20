import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import { isTerminal, terminalColumns, type CliIo } from "./cli-io.js";
import { capabilityFlags, jsonLine, prettyJson, printable } from "./format.js";
import { LiveLine } from "./live-line.js";
import { renderProgressBar } from "./progress-bar.js";

/** Shows the events of one run as they arrive. */
export interface RunView {
  /** Shows one event. */
  show(event: RunEvent): void;
  /** Finishes any line drawn in place, so that diagnostics start on a line of their own. */
  end(): void;
}

/**
 * A view of a run on `io.stdout`: one JSON line per event (`toJson` of the RunEvent) when `json`
 * is true, otherwise one readable line per stage, a progress bar redrawn in place, and the result.
 */
export function createRunView(io: CliIo, json: boolean): RunView {
  if (json) {
    return { show: (event) => io.stdout.write(jsonLine(RunEventSchema, event)), end: () => undefined };
  }
  return new TerminalRunView(io);
}

/** Whether `run` should print JSON lines: when asked, or when stdout is not a terminal. */
export function wantsJson(io: CliIo, jsonFlag: boolean): boolean {
  return jsonFlag || !isTerminal(io);
}

class TerminalRunView implements RunView {
  private readonly live: LiveLine;
  private readonly columns: number;
  private sawProgress = false;

  constructor(private readonly io: CliIo) {
    this.columns = terminalColumns(io);
    this.live = new LiveLine(io.stdout, this.columns);
  }

  show(event: RunEvent): void {
    const stage = event.event;
    switch (stage.case) {
      case "discovered": {
        const spec = stage.value.spec;
        const facts = spec === undefined ? "" : ` (${spec.toolType || "no type"}; ${capabilityFlags(spec)})`;
        this.line("execution", event.executionId);
        this.line("discovered", `${spec?.name ?? "?"}${facts}`);
        return;
      }
      case "activated":
        this.line("activated", stage.value.toolName);
        return;
      case "executionStarted":
        this.line(
          "started",
          `attempt ${stage.value.attempt || 1}, timeout ${stage.value.timeoutMs.toLocaleString("en-US")} ms`,
        );
        return;
      case "queued":
        this.line("queued", `${stage.value.position} ahead`);
        return;
      case "awaitingApproval":
        this.line("approval", `awaiting a decision on inputs ${stage.value.inputsDigest.slice(0, 12)}…`);
        return;
      case "approvalDecided":
        this.line(stage.value.approved ? "approved" : "rejected", `by ${stage.value.decidedBy}`);
        return;
      case "log":
        this.line(`log ${stage.value.level}`, stage.value.message);
        return;
      case "output":
        this.line("output", JSON.stringify(stage.value.chunk ? toJson(ValueSchema, stage.value.chunk) : null));
        return;
      case "retryScheduled":
        this.line(
          "retry",
          `attempt ${stage.value.nextAttempt} in ${stage.value.delayMs} ms after ${stage.value.error?.errorType ?? "a failure"}`,
        );
        return;
      case "checkpointTaken":
        this.line("checkpoint", `before attempt ${stage.value.attempt}`);
        return;
      case "rolledBack":
        this.line("rolled back", stage.value.success ? "" : `failed: ${stage.value.error}`);
        return;
      case "progress":
        this.sawProgress = true;
        this.live.update(renderProgressBar(stage.value, this.columns));
        return;
      case "heartbeat":
        if (!this.sawProgress) {
          this.live.update(`  ${"running".padEnd(12)} ${(stage.value.elapsedMs / 1000).toFixed(1)} s`);
        }
        return;
      case "executionFinished":
        this.line(
          "finished",
          `${stage.value.success ? "succeeded in" : "failed after"} ${stage.value.durationMs.toFixed(1)} ms`,
        );
        return;
      case "deactivated":
        this.line("deactivated", stage.value.wasActive ? "" : "(it was no longer active)");
        return;
      case "completed":
        this.result(stage.value.result);
        return;
      case undefined:
        return;
    }
  }

  end(): void {
    this.live.commit();
  }

  private line(label: string, text: string): void {
    this.live.commit();
    this.io.stdout.write(`  ${label.padEnd(12)} ${printable(text)}`.trimEnd() + "\n");
  }

  private result(result: ToolResult | undefined): void {
    this.live.commit();
    if (result === undefined) {
      this.io.stdout.write("✘ the run completed without a result\n");
    } else if (result.success) {
      this.io.stdout.write(
        `✔ succeeded in ${result.durationMs.toFixed(1)} ms; output:\n${prettyJson(result.output ?? {})}`,
      );
    } else {
      const error = result.error;
      this.io.stdout.write(
        `✘ failed with ${error?.errorType || "an unknown error"} after ${result.durationMs.toFixed(1)} ms\n` +
          (error?.details ? `  ${printable(error.details)}\n` : ""),
      );
    }
  }
}
