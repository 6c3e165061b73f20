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

/** What a value is compacted to, or `notCompacted`. */
const notCompacted = Symbol("not compacted");

/**
 * The compact form of an event of a run that ended with `result`: [kind, value] written into
 * `pending` at `at` (kind) and `at + 1` (value), or nothing changed when it has none.
 */
export function compactEvent(pending: unknown[], at: number, result: ToolResult | undefined): void {
  const kind = pending[at] as EventBody["case"];
  const value = pending[at + 1] as Record<string, unknown>;
  let compactKind: string | undefined;
  let compactValue: unknown = notCompacted;
  switch (kind) {
    case "discovered":
      compactKind = discoveredSpec;
      compactValue = value["spec"];
      break;
    case "executionStarted":
      if (value["attempt"] === 1 && typeof value["timeoutMs"] === "number") {
        compactKind = firstAttemptStarted;
        compactValue = value["timeoutMs"];
      }
      break;
    case "executionFinished":
      if (
        result &&
        value["attempt"] === 1 &&
        value["error"] === undefined &&
        value["success"] === result.success &&
        value["durationMs"] === result.durationMs
      ) {
        compactKind = firstAttemptFinished;
        compactValue = undefined;
      }
      break;
    case "completed":
      if (result && value["result"] === result) {
        compactKind = completedWithResult;
        compactValue = undefined;
      }
      break;
    default:
      // The other kinds have values of their own (or are rare enough not to matter).
      break;
  }
  if (compactValue === notCompacted) return;
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
