import { timestampMs } from "@bufbuild/protobuf/wkt";
import { ExecutionState, type Execution } from "../../../gen/toolruntime/v1/execution_pb.js";
import { describeError, isAbort } from "../describe-error.js";
import { keepFollowing } from "../keep-following.js";
import { append, h, replaceChildren } from "../dom.js";
import { followRuns, isNewer } from "../executions-feed.js";
import { counted, dateTime, duration, filterStates, isoTime, stateName } from "../format.js";
import type { ViewContext } from "../view.js";

function createdMs(execution: Execution): number {
  return execution.createdAt ? timestampMs(execution.createdAt) : 0;
}

function runRow(execution: Execution): HTMLTableRowElement {
  const total = execution.queuedMs + execution.awaitingApprovalMs + execution.runningMs;
  return h(
    "tr",
    { "data-execution": execution.executionId },
    h(
      "td",
      { "data-label": "Created" },
      h(
        "a",
        { href: `#/runs/${encodeURIComponent(execution.executionId)}`, "aria-label": `Run ${execution.executionId}` },
        h("time", { datetime: isoTime(execution.createdAt) }, dateTime(execution.createdAt)),
      ),
    ),
    h("td", { "data-label": "Tool" }, execution.toolName),
    h(
      "td",
      { "data-label": "State" },
      h("span", { class: `badge state-${stateName(execution.state)}` }, stateName(execution.state)),
    ),
    h("td", { "data-label": "Started by" }, execution.caller),
    h("td", { "data-label": "Attempts" }, String(execution.attempts)),
    h("td", { "data-label": "Duration" }, duration(total)),
  );
}

/**
 * Runs, live: ListExecutions filtered by tool and state, with runs started or changed meanwhile
 * streamed by WatchExecutions; older pages on request.
 */
export function runsView({ clients, signal, main }: ViewContext): void {
  document.title = "Runs · toolruntime";
  const toolInput = h("input", { id: "runs-tool", type: "search", placeholder: "for example builtin.countdown" });
  const stateSelect = h(
    "select",
    { id: "runs-state" },
    h("option", { value: String(ExecutionState.UNSPECIFIED) }, "All states"),
    ...filterStates.map((state) => h("option", { value: String(state) }, stateName(state))),
  );
  const error = h("p", { id: "runs-error", class: "error", role: "alert" });
  const count = h("p", { id: "runs-count", role: "status" }, "Loading runs…");
  const body = h("tbody", { id: "run-rows" });
  const more = h("button", { type: "button", id: "runs-more", hidden: true }, "Show older runs");
  append(
    main,
    h("h1", { tabindex: -1 }, "Runs"),
    h(
      "form",
      { class: "filters", role: "search", onsubmit: (event: Event) => event.preventDefault() },
      h("div", {}, h("label", { for: "runs-tool" }, "Tool"), toolInput),
      h("div", {}, h("label", { for: "runs-state" }, "State"), stateSelect),
    ),
    error,
    count,
    h(
      "table",
      { class: "run-list" },
      h("caption", { class: "hint" }, "Newest first; runs appear and change as they happen."),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...["Created", "Tool", "State", "Started by", "Attempts", "Duration"].map((title) =>
            h("th", { scope: "col" }, title),
          ),
        ),
      ),
      body,
    ),
    more,
  );

  let runs = new Map<string, Execution>();
  let feed: AbortController | undefined;
  let nextPageToken = "";
  const chosenState = (): ExecutionState => Number(stateSelect.value);
  const render = (): void => {
    const state = chosenState();
    const shown = [...runs.values()]
      .filter((run) => state === ExecutionState.UNSPECIFIED || run.state === state)
      .sort((a, b) => createdMs(b) - createdMs(a));
    replaceChildren(body, ...shown.map(runRow));
    count.textContent = counted(shown.length, "run");
    more.hidden = nextPageToken === "";
  };
  const onRecord = (execution: Execution): void => {
    if (!isNewer(execution, runs.get(execution.executionId))) return;
    runs.set(execution.executionId, execution);
    render();
  };
  const start = (): void => {
    feed?.abort();
    feed = new AbortController();
    const feedSignal = AbortSignal.any([signal, feed.signal]);
    runs = new Map();
    nextPageToken = "";
    error.textContent = "";
    count.textContent = "Loading runs…";
    replaceChildren(body);
    keepFollowing(
      (live) =>
        followRuns({
          clients,
          toolName: toolInput.value.trim(),
          state: chosenState(),
          signal: feedSignal,
          onRecord,
          onListed: (token) => {
            nextPageToken = token;
            render();
          },
          live,
        }),
      {
        signal: feedSignal,
        showError: (message) => {
          error.textContent = message;
          if (message !== "" && runs.size === 0) count.textContent = "";
        },
      },
    );
  };
  more.addEventListener("click", () => {
    more.disabled = true;
    clients.executions
      .listExecutions({ toolName: toolInput.value.trim(), state: chosenState(), pageToken: nextPageToken }, { signal })
      .then(
        (page) => {
          more.disabled = false;
          nextPageToken = page.nextPageToken;
          for (const execution of page.executions) onRecord(execution);
          render();
        },
        (reason: unknown) => {
          more.disabled = false;
          if (!isAbort(reason)) error.textContent = describeError(reason);
        },
      );
  });
  toolInput.addEventListener("change", start);
  stateSelect.addEventListener("change", start);
  start();
}
