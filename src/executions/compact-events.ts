import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import type { EventBody } from "./execution-record.js";

/**
 * The compact forms of a finished record's events, for as long as it is retained. An event's body
 * is kept as a kind and a value; for the events of a plain run, the value is an object whose
 * fields the record knows already (its spec, its result, the first attempt), and which would stay
 * one more object per event in every retained record. Such a value is kept as what cannot be
 * rebuilt (the spec, the timeout, or nothing) under a kind of its own, and rebuilt, equal, when the
 * events are built. A value that is not exactly what would be rebuilt keeps its own kind and form.
 */

/** Kinds of the compact forms, never those of a RunEvent's case. */
const discoveredSpec = "discovered: the spec alone";
const firstAttemptStarted = "executionStarted: the first attempt's timeout alone";
const firstAttemptFinished = "executionFinished: the first attempt, as the result tells it";
const completedWithResult = "completed: with the record's result";

/**
 * The compact form of an event of a run that ended with `result`: [kind, value] written into
 * `pending` at `at` (kind) and `at + 1` (value), or nothing changed when it has none.
 */
export function compactEvent(pending: unknown[], at: number, result: ToolResult | undefined): void {
  const kind = pending[at] as EventBody["case"];
  const value = pending[at + 1] as Record<string, unknown>;
  switch (kind) {
    case "discovered":
      return keep(pending, at, discoveredSpec, value["spec"]);
    case "executionStarted":
      if (value["attempt"] === 1 && typeof value["timeoutMs"] === "number") {
        keep(pending, at, firstAttemptStarted, value["timeoutMs"]);
      }
      return;
    case "executionFinished":
      if (
        result &&
        value["attempt"] === 1 &&
        value["error"] === undefined &&
        value["success"] === result.success &&
        value["durationMs"] === result.durationMs
      ) {
        keep(pending, at, firstAttemptFinished, undefined);
      }
      return;
    case "completed":
      if (result && value["result"] === result) keep(pending, at, completedWithResult, undefined);
      return;
    default:
      // The other kinds have values of their own (or are rare enough not to matter).
      return;
  }
}

/** Writes an event's compact form in place of its kind and value. */
function keep(pending: unknown[], at: number, compactKind: string, compactValue: unknown): void {
  pending[at] = compactKind;
  pending[at + 1] = compactValue;
}

/** The body of an event kept as `kind` and `value` (compacted or not) by a run that ended with `result`. */
export function eventBodyOf(kind: unknown, value: unknown, result: ToolResult | undefined): EventBody {
  switch (kind) {
    case discoveredSpec:
      return { case: "discovered", value: { spec: value } } as EventBody;
    case firstAttemptStarted:
      return { case: "executionStarted", value: { timeoutMs: value as number, attempt: 1 } };
    case firstAttemptFinished:
      return {
        case: "executionFinished",
        value: { success: result?.success ?? false, durationMs: result?.durationMs ?? 0, attempt: 1 },
      };
    case completedWithResult:
      return { case: "completed", value: { result } };
    default:
      return { case: kind, value } as EventBody;
  }
}
