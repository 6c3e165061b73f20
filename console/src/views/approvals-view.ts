import { ExecutionState, type Execution } from "../../../gen/toolruntime/v1/execution_pb.js";
import { describeError, isAbort } from "../describe-error.js";
import { append, h, replaceChildren } from "../dom.js";
import { keepFollowing } from "../keep-following.js";
import { followRuns, isNewer } from "../executions-feed.js";
import { dateTime, toJsonText } from "../format.js";
import type { ViewContext } from "../view.js";

/**
 * Runs awaiting approval, live: for each, the tool, who started it, its inputs and their digest,
 * and Approve / Reject with a comment. A decided run leaves the list (whoever decided it), and its
 * run view shows the decision in the timeline at once.
 */
export function approvalsView({ clients, signal, main }: ViewContext): void {
  document.title = "Approvals · toolruntime";
  const error = h("p", { id: "approvals-error", class: "error", role: "alert" });
  const count = h("p", { id: "approvals-count" }, "Loading…");
  const announce = h("p", { id: "approvals-status", role: "status" });
  const list = h("ul", { id: "approval-list", class: "cards", "aria-label": "Runs awaiting approval" });
  append(main, h("h1", { tabindex: -1 }, "Approvals"), error, announce, count, list);

  const known = new Map<string, Execution>();
  const cards = new Map<string, HTMLElement>();
  const updateCount = (): void => {
    count.textContent =
      cards.size === 0
        ? "No run awaits approval."
        : cards.size === 1
          ? "1 run awaits approval"
          : `${cards.size} runs await approval`;
  };

  const card = (execution: Execution): HTMLElement => {
    const id = execution.executionId;
    const headingId = `approval-${id}`;
    const inputs = h("pre", { class: "approval-inputs" }, "Loading inputs…");
    const comment = h("textarea", { id: `comment-${id}`, rows: 2, maxlength: 1024 });
    const cardError = h("p", { class: "error", role: "alert" });
    const approve = h("button", { type: "button", class: "primary" }, "Approve");
    const reject = h("button", { type: "button", class: "danger" }, "Reject");
    const decide = (approved: boolean): void => {
      approve.disabled = reject.disabled = true;
      cardError.textContent = "";
      const request = { executionId: id, inputsDigest: execution.inputsDigest, comment: comment.value };
      (approved
        ? clients.executions.approveExecution(request, { signal })
        : clients.executions.rejectExecution(request, { signal })
      ).then(
        ({ execution: decided }) => {
          if (decided) onRecord(decided);
        },
        (reason: unknown) => {
          approve.disabled = reject.disabled = false;
          if (!isAbort(reason)) cardError.textContent = describeError(reason);
        },
      );
    };
    approve.addEventListener("click", () => decide(true));
    reject.addEventListener("click", () => decide(false));
    clients.executions.getExecution({ executionId: id, includeInputs: true }, { signal }).then(
      (response) => (inputs.textContent = toJsonText(response.inputs ?? {})),
      (reason: unknown) => {
        if (!isAbort(reason)) inputs.textContent = describeError(reason);
      },
    );
    return h(
      "li",
      { class: "card", "data-execution": id },
      h(
        "article",
        { "aria-labelledby": headingId },
        h("h2", { id: headingId }, execution.toolName),
        h(
          "dl",
          { class: "facts" },
          h("dt", {}, "Run"),
          h("dd", {}, h("a", { href: `#/runs/${encodeURIComponent(id)}` }, id)),
          h("dt", {}, "Started by"),
          h("dd", { class: "approval-caller" }, execution.caller),
          h("dt", {}, "Created"),
          h("dd", {}, dateTime(execution.createdAt)),
          h("dt", {}, "Inputs digest"),
          h("dd", {}, h("code", { class: "approval-digest" }, execution.inputsDigest)),
        ),
        h("h3", {}, "Inputs"),
        inputs,
        h("div", { class: "field" }, h("label", { for: `comment-${id}` }, "Comment"), comment),
        cardError,
        h("div", { class: "actions" }, approve, reject),
      ),
    );
  };

  const onRecord = (execution: Execution): void => {
    const id = execution.executionId;
    if (!isNewer(execution, known.get(id))) return;
    known.set(id, execution);
    const waiting = execution.state === ExecutionState.AWAITING_APPROVAL;
    const shown = cards.get(id);
    if (waiting && !shown) {
      const element = card(execution);
      cards.set(id, element);
      list.prepend(element);
    } else if (!waiting && shown) {
      shown.remove();
      cards.delete(id);
      const decision = execution.approval;
      replaceChildren(
        announce,
        decision
          ? `${execution.toolName}: ${decision.approved ? "approved" : "rejected"} by ${decision.decidedBy}. `
          : `${execution.toolName}: no longer awaits approval. `,
        h("a", { href: `#/runs/${encodeURIComponent(id)}` }, "Open the run"),
      );
    }
    updateCount();
  };

  keepFollowing(
    (live) =>
      followRuns({
        clients,
        toolName: "",
        state: ExecutionState.AWAITING_APPROVAL,
        signal,
        onRecord,
        onListed: updateCount,
        live,
      }),
    {
      signal,
      showError: (message) => {
        error.textContent = message;
        if (message !== "" && cards.size === 0) count.textContent = "";
      },
    },
  );
}
