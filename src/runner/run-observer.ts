import type { ToolResult, ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";

/** What is known about a run when it starts. */
export interface RunInfo {
  readonly executionId: string;
  readonly spec: ToolSpec;
  readonly runnerName: string;
  /** Name of the caller's identity ("anonymous" when authentication is off). */
  readonly caller: string;
  /** The inputs as received (not yet checked). */
  readonly inputs: unknown;
  /** W3C traceparent of the call that started the run, when traced. */
  readonly traceParent: string | undefined;
}

/**
 * Watches runs for metrics, logs, traces and audit. Called synchronously; an observer that throws
 * is a bug in the observer, and the runner does not guard against it.
 */
export interface RunObserver {
  /** The handler is about to be called (inputs not yet checked). */
  onRunStart?(info: RunInfo): void;
  /** The run ended with `result`. */
  onRunEnd?(info: RunInfo, result: ToolResult): void;
}
