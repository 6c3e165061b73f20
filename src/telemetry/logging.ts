import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";
import type { RunObserver } from "../runner/run-observer.js";
import { callerOf } from "../server/call-context.js";
import type { CallObserver } from "../server/call-pipeline.js";
import { codeName } from "./metrics.js";

/** One log line per call: service, method, protocol, caller, code and duration. */
export function createCallLogger(logger: Logger): CallObserver {
  return (method, context) => {
    const started = performance.now();
    if (!logger.isLevelEnabled("info")) return () => undefined;
    return (code) => {
      const fields = {
        rpc: `${method.parent.typeName}/${method.name}`,
        protocol: context.protocolName,
        caller: callerOf(context).name,
        code: codeName(code),
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      };
      logger.info(fields, "call");
    };
  };
}

/** Options of {@link createRunLogger}. */
export interface RunLoggerOptions {
  /** Log input values too. Default false: inputs may hold secrets. */
  readonly logInputs?: boolean;
  /** Where audit records go; none when absent. */
  readonly audit?: Logger | undefined;
}

/**
 * One log line per run (tool, runner, caller, outcome, duration; inputs only when asked), and an
 * audit record per run: who ran which tool with which inputs (as a SHA-256 digest), whether the
 * tool writes, and the outcome. When the audit records go to the main log (the default), they are
 * the run line's own fields (`audit: "execution"`) rather than a second line: one line per run.
 */
export function createRunLogger(logger: Logger, options: RunLoggerOptions = {}): RunObserver {
  const audit = options.audit;
  const merged = audit === logger;
  return {
    onRunEnd(info, result) {
      const outcome = result.success ? "success" : (result.error?.errorType ?? "unknown");
      // Skip building records nobody will write (hashing the inputs is not free).
      const logging = logger.isLevelEnabled("info");
      const auditing = audit?.isLevelEnabled("info") ?? false;
      const auditFields = auditing
        ? {
            audit: "execution",
            inputsSha256: digestOf(info.inputs),
            writes: info.spec.capabilities?.writes ?? false,
            approval: info.spec.capabilities?.humanApprovalRequired ? "required" : "not_required",
            traceParent: info.traceParent,
          }
        : undefined;
      if (logging)
        logger.info(
          {
            executionId: info.executionId,
            tool: info.spec.name,
            runner: info.runnerName,
            caller: info.caller,
            outcome,
            durationMs: Math.round(result.durationMs * 1000) / 1000,
            ...(options.logInputs ? { inputs: info.inputs } : {}),
            ...(merged ? auditFields : {}),
          },
          "run",
        );
      if (auditFields && !(merged && logging))
        audit?.info(
          { ...auditFields, executionId: info.executionId, caller: info.caller, tool: info.spec.name, outcome },
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
  return createHash("sha256").update(text).digest("hex");
}
