import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ExecutionState, type Execution } from "../../gen/toolruntime/v1/execution_pb.js";
import { cutToWidth, printable } from "./format.js";
import { UsageError } from "./usage-error.js";

const stateNames: Readonly<Record<ExecutionState, string>> = {
  [ExecutionState.UNSPECIFIED]: "unknown",
  [ExecutionState.QUEUED]: "queued",
  [ExecutionState.AWAITING_APPROVAL]: "awaiting_approval",
  [ExecutionState.RUNNING]: "running",
  [ExecutionState.SUCCEEDED]: "succeeded",
  [ExecutionState.FAILED]: "failed",
  [ExecutionState.CANCELLED]: "cancelled",
};

/** The lowercase name of a state, as `--state` takes it: "queued", "awaiting_approval", … */
export function stateName(state: ExecutionState): string {
  return stateNames[state] ?? "unknown";
}

/** Reads `--state NAME` (any case); throws a UsageError listing the names otherwise. */
export function parseState(text: string): ExecutionState {
  const wanted = text.toLowerCase();
  const states = [
    ExecutionState.QUEUED,
    ExecutionState.AWAITING_APPROVAL,
    ExecutionState.RUNNING,
    ExecutionState.SUCCEEDED,
    ExecutionState.FAILED,
    ExecutionState.CANCELLED,
  ];
  const found = states.find((state) => stateNames[state] === wanted);
  if (found !== undefined) return found;
  throw new UsageError(`--state "${text}" is invalid: use one of ${states.map(stateName).join(", ")}`);
}

/** A timestamp as ISO 8601 in UTC to the second, or "-" when unset. */
export function timeText(timestamp: Timestamp | undefined): string {
  return timestamp === undefined ? "-" : `${timestampDate(timestamp).toISOString().slice(0, 19)}Z`;
}

/**
 * A table of executions with a header: id, tool, state, caller and creation time, each line cut
 * to `columns`.
 */
export function executionTable(executions: readonly Execution[], columns: number): string {
  const header = ["EXECUTION", "TOOL", "STATE", "CALLER", "CREATED"];
  const rows = executions.map((execution) => [
    execution.executionId,
    printable(execution.toolName),
    stateName(execution.state),
    printable(execution.caller) || "-",
    timeText(execution.createdAt),
  ]);
  const widths = header.map((title, index) => Math.max(title.length, ...rows.map((row) => row[index]?.length ?? 0)));
  const line = (cells: readonly string[]): string =>
    cutToWidth(cells.map((cell, index) => cell.padEnd(widths[index] ?? 0)).join("  "), columns - 1).trimEnd();
  return `${[header, ...rows].map(line).join("\n")}\n`;
}

/** One line saying where a run stands, for a terminal: "ID  TOOL  STATE (result)". */
export function executionLine(execution: Execution): string {
  const error = execution.result?.error;
  const outcome = error === undefined ? "" : ` (${printable(error.errorType)}: ${printable(error.details)})`;
  return `${execution.executionId}  ${printable(execution.toolName)}  ${stateName(execution.state)}${outcome}\n`;
}
