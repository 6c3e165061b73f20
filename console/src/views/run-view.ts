import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { ExecutionState, type Execution } from "../../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../../gen/toolruntime/v1/tool_pb.js";
import { describeError, isAbort } from "../describe-error.js";
import { append, h, replaceChildren } from "../dom.js";
import { keepFollowing } from "../keep-following.js";
import { dateTime, duration, isoTime, stateName, timeOfDay, toJsonText } from "../format.js";
import type { ViewContext } from "../view.js";

/** The line a lifecycle event adds to the timeline; undefined for events shown elsewhere. */
function timelineText(event: RunEvent["event"]): string | undefined {
  switch (event.case) {
    case "discovered":
      return `Discovered ${event.value.spec?.name ?? ""}`;
    case "activated":
      return "Activated";
    case "awaitingApproval":
      return `Awaiting approval of inputs digest ${event.value.inputsDigest}`;
    case "approvalDecided":
      return `${event.value.approved ? "Approved" : "Rejected"} by ${event.value.decidedBy}`;
    case "queued":
      return `Queued (position ${event.value.position})`;
    case "checkpointTaken":
      return `Checkpoint taken before attempt ${event.value.attempt}`;
    case "executionStarted":
      return `Attempt ${event.value.attempt} started (timeout ${event.value.timeoutMs} ms)`;
    case "executionFinished": {
      const { attempt, success, durationMs, error } = event.value;
      return success
        ? `Attempt ${attempt} succeeded in ${duration(durationMs)}`
        : `Attempt ${attempt} failed after ${duration(durationMs)}: ${error?.errorType ?? ""}: ${error?.details ?? ""}`;
    }
    case "rolledBack":
      return event.value.success ? "Rolled back" : `Rollback failed: ${event.value.error}`;
    case "retryScheduled":
      return `Retry: attempt ${event.value.nextAttempt} in ${event.value.delayMs} ms (after ${event.value.error?.errorType ?? "a failure"})`;
    case "deactivated":
      return "Deactivated";
    case "completed": {
      const result = event.value.result;
      return `Completed: ${result?.success ? "succeeded" : result?.error?.errorType === "CancelledError" ? "cancelled" : "failed"}`;
    }
    case "progress":
    case "log":
    case "output":
    case "heartbeat":
    case undefined:
      return undefined;
  }
}

/** The state a run is in after an event, when the event says. */
function stateAfter(event: RunEvent["event"]): ExecutionState | undefined {
  switch (event.case) {
    case "awaitingApproval":
      return ExecutionState.AWAITING_APPROVAL;
    case "queued":
      return ExecutionState.QUEUED;
    case "executionStarted":
      return ExecutionState.RUNNING;
    case "completed":
      return finalState(event.value.result);
    default:
      return undefined;
  }
}

function finalState(result: ToolResult | undefined): ExecutionState {
  if (result?.success) return ExecutionState.SUCCEEDED;
  return result?.error?.errorType === "CancelledError" ? ExecutionState.CANCELLED : ExecutionState.FAILED;
}

const isLive = (state: ExecutionState): boolean =>
  state === ExecutionState.QUEUED ||
  state === ExecutionState.AWAITING_APPROVAL ||
  state === ExecutionState.RUNNING ||
  state === ExecutionState.UNSPECIFIED;

/**
 * One run, live: WatchExecution replayed from its first event (so a reload reattaches and misses
 * nothing: the run id is in the URL), as a timeline of lifecycle stages, a progress bar, logs and
 * partial output as they stream, and the final result; Cancel while the run is live.
 */
export function runView({ clients, signal, main }: ViewContext, executionId: string): void {
  document.title = `Run ${executionId} · toolruntime`;
  const error = h("p", { id: "run-error", class: "error", role: "alert" });
  const heading = h("h1", { tabindex: -1 }, "Run");
  const state = h("span", { id: "run-state", class: "badge" }, "…");
  const tool = h("a", { id: "run-tool" });
  const caller = h("dd", { id: "run-caller" });
  const created = h("dd", { id: "run-created" });
  const attempts = h("dd", { id: "run-attempts" }, "0");
  const approval = h("dd", { id: "run-approval" }, "—");
  const cancel = h("button", { type: "button", id: "run-cancel", class: "danger", hidden: true }, "Cancel run");
  const decide = h(
    "a",
    { id: "run-decide", href: "#/approvals", hidden: true, class: "button" },
    "Decide in Approvals",
  );
  const progress = h("progress", { id: "run-progress", max: 1, "aria-labelledby": "run-progress-label" });
  const progressText = h("p", { id: "run-progress-message", role: "status" });
  const timeline = h("ol", { id: "run-timeline", class: "timeline" });
  const logs = h("ol", { id: "run-logs", class: "logs" });
  const outputs = h("ol", { id: "run-output" });
  const result = h("div", { id: "run-result", role: "status" }, h("p", { class: "hint" }, "The run has not ended."));
  append(
    main,
    heading,
    error,
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "Run id"),
      h("dd", {}, h("code", {}, executionId)),
      h("dt", {}, "Tool"),
      h("dd", {}, tool),
      h("dt", {}, "State"),
      h("dd", {}, state),
      h("dt", {}, "Started by"),
      caller,
      h("dt", {}, "Created"),
      created,
      h("dt", {}, "Attempts"),
      attempts,
      h("dt", {}, "Approval"),
      approval,
    ),
    h("div", { class: "actions" }, cancel, decide),
    h("h2", { id: "run-progress-label" }, "Progress"),
    progress,
    progressText,
    h("h2", {}, "Timeline"),
    timeline,
    h("h2", {}, "Logs"),
    logs,
    h("h2", {}, "Partial output"),
    outputs,
    h("h2", {}, "Result"),
    result,
  );

  let lastSequence = 0n;
  const showState = (next: ExecutionState): void => {
    state.textContent = stateName(next);
    state.className = `badge state-${stateName(next)}`;
    cancel.hidden = !isLive(next);
    decide.hidden = next !== ExecutionState.AWAITING_APPROVAL;
  };
  const showRecord = (execution: Execution): void => {
    tool.textContent = execution.toolName;
    heading.textContent = `Run of ${execution.toolName}`;
    document.title = `Run of ${execution.toolName} · toolruntime`;
    tool.href = `#/run/${encodeURIComponent(execution.toolName)}`;
    caller.textContent = execution.caller;
    created.textContent = dateTime(execution.createdAt);
    attempts.textContent = String(execution.attempts);
    if (execution.approval) {
      const { approved, decidedBy, comment } = execution.approval;
      approval.textContent = `${approved ? "Approved" : "Rejected"} by ${decidedBy}${comment ? `: “${comment}”` : ""}`;
    }
    // The record may be older than the events already shown; an event's state wins then.
    if (execution.lastSequence >= lastSequence) showState(execution.state);
  };
  const refresh = (): void => {
    clients.executions.getExecution({ executionId }, { signal }).then(
      ({ execution }) => execution && showRecord(execution),
      (reason: unknown) => {
        if (!isAbort(reason)) error.textContent = describeError(reason);
      },
    );
  };
  const showResult = (value: ToolResult | undefined): void => {
    if (!value) return;
    replaceChildren(
      result,
      h(
        "p",
        { id: "run-result-summary", class: value.success ? "badge ok" : "badge bad" },
        value.success ? "Succeeded" : `Failed: ${value.error?.errorType ?? "unknown error"}`,
      ),
      h("p", {}, `Duration: ${duration(value.durationMs)}`),
      value.success
        ? h("pre", { id: "run-result-output" }, toJsonText(value.output ?? {}))
        : h("pre", { id: "run-result-error" }, value.error?.details ?? ""),
    );
  };
  const apply = (event: RunEvent): void => {
    lastSequence = event.sequence;
    const body = event.event;
    const line = timelineText(body);
    if (line !== undefined) {
      timeline.appendChild(
        h(
          "li",
          { "data-event": body.case ?? "" },
          h("time", { datetime: isoTime(event.time) }, timeOfDay(event.time)),
          h("span", {}, line),
        ),
      );
    }
    const next = stateAfter(body);
    if (next !== undefined) showState(next);
    switch (body.case) {
      case "executionStarted":
        attempts.textContent = String(body.value.attempt);
        break;
      case "progress": {
        const fraction = body.value.fraction;
        if (fraction === undefined) progress.removeAttribute("value");
        else progress.value = fraction;
        progressText.textContent = [fraction === undefined ? "" : `${Math.round(fraction * 100)}%`, body.value.message]
          .filter((part) => part !== "")
          .join(" · ");
        break;
      }
      case "log":
        logs.appendChild(
          h(
            "li",
            {},
            h("span", { class: "level" }, body.value.level),
            h("span", { class: "message" }, body.value.message),
          ),
        );
        break;
      case "output":
        outputs.appendChild(
          h("li", {}, h("pre", {}, toJsonText(body.value.chunk ? toJson(ValueSchema, body.value.chunk) : null))),
        );
        break;
      case "approvalDecided":
        refresh();
        break;
      case "completed":
        showResult(body.value.result);
        if (body.value.result?.success) progress.value = 1;
        refresh();
        break;
      default:
        break;
    }
  };

  const follow = (): void =>
    keepFollowing(
      async (live) => {
        // From the last event shown: a stream that broke resumes where it stopped, missing nothing.
        const events = clients.executions.watchExecution({ executionId, afterSequence: lastSequence }, { signal });
        for await (const { event } of events) {
          live();
          if (event) apply(event);
        }
        return "done";
      },
      { signal, showError: (message) => (error.textContent = message) },
    );
  cancel.addEventListener("click", () => {
    cancel.disabled = true;
    error.textContent = "";
    clients.executions.cancelExecution({ executionId }, { signal }).then(
      () => (cancel.disabled = false),
      (reason: unknown) => {
        cancel.disabled = false;
        if (!isAbort(reason)) error.textContent = describeError(reason);
      },
    );
  });
  refresh();
  follow();
}
