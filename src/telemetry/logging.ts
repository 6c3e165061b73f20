import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import { sha256Hex } from "../executions/inputs-digest.js";
import type { RunObserver } from "../runner/run-observer.js";
import { callerOf } from "../server/call-context.js";
import type { CallObserver } from "../server/call-pipeline.js";
import { codeName } from "./metrics.js";

/**
 * One log line per call: service, method, protocol, caller, code and duration. A call that ended
 * OK is logged at `debug`, any other at `info`: at the default level a busy server writes a line
 * for what went wrong, not for each of thousands of calls a second that went right.
 */
export function createCallLogger(logger: Logger): CallObserver {
  return (method, context) => {
    if (!logger.isLevelEnabled("info")) return () => undefined;
    const started = performance.now();
    return (code) => {
      const ok = code === 0;
      if (ok && !logger.isLevelEnabled("debug")) return;
      const fields = {
        rpc: `${method.parent.typeName}/${method.name}`,
        protocol: context.protocolName,
        caller: callerOf(context).name,
        code: codeName(code),
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      };
      if (ok) logger.debug(fields, "call");
      else logger.info(fields, "call");
    };
  };
}

/** Options of {@link createRunLogger}. */
export interface RunLoggerOptions {
  /** Log input values too. Default false: inputs may hold secrets. */
  readonly logInputs?: boolean;
  /** Where audit records go; none when absent (the default: nothing is hashed). */
  readonly audit?: Logger | undefined;
}

/**
 * One log line per run (tool, runner, caller, outcome, duration; inputs only when asked): at
 * `debug` for a run that succeeded, at `info` for one that did not (as for calls). And, when an
 * audit log is given, an audit record per run: who ran which tool with which inputs (as a SHA-256
 * digest), whether the tool writes, and the outcome. Without one nothing is hashed.
 */
export function createRunLogger(logger: Logger, options: RunLoggerOptions = {}): RunObserver {
  const audit = options.audit;
  return {
    onRunEnd(info, result) {
      const outcome = result.success ? "success" : (result.error?.errorType ?? "unknown");
      // Skip building records nobody will write (hashing the inputs is not free).
      if (logger.isLevelEnabled(result.success ? "debug" : "info")) {
        const fields = {
          executionId: info.executionId,
          tool: info.spec.name,
          runner: info.runnerName,
          caller: info.caller,
          outcome,
          durationMs: Math.round(result.durationMs * 1000) / 1000,
          ...(options.logInputs ? { inputs: info.inputs } : {}),
        };
        if (result.success) logger.debug(fields, "run");
        else logger.info(fields, "run");
      }
      if (audit?.isLevelEnabled("info"))
        audit.info(
          {
            audit: "execution",
            executionId: info.executionId,
            caller: info.caller,
            tool: info.spec.name,
            inputsSha256: digestOf(info.inputs),
            writes: info.spec.capabilities?.writes ?? false,
            approval: info.spec.capabilities?.humanApprovalRequired ? "required" : "not_required",
            outcome,
            traceParent: info.traceParent,
          },
          "execution",
        );
    },
  };
}

/** SHA-256 (hex) of a value's JSON, or of "(not JSON)" when it has none. */
function digestOf(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? "(not JSON)";
  } catch {
    text = "(not JSON)";
  }
  return sha256Hex(text);
}
