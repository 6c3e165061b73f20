import { byId } from "./dom.js";
import { approvalsView } from "./views/approvals-view.js";
import { runFormView } from "./views/run-form-view.js";
import { runView } from "./views/run-view.js";
import { runsView } from "./views/runs-view.js";
import { toolsView } from "./views/tools-view.js";
import { createClients, readToken, writeToken } from "./session.js";
import type { View } from "./view.js";

/** Routes, by the first segment of the hash (`#/runs/ID`): the view and the nav link it marks. */
const routes: Readonly<Record<string, { view: View; nav: string; item?: View }>> = {
  tools: { view: toolsView, nav: "tools" },
  run: { view: runFormView, nav: "tools" },
  runs: { view: runsView, item: runView, nav: "runs" },
  approvals: { view: approvalsView, nav: "approvals" },
};

const clients = createClients();
const main = byId<HTMLElement>("main");
let current: AbortController | undefined;

/** Shows the view of the current hash, leaving the previous one (its streams are cancelled). */
function show(): void {
  current?.abort();
  current = new AbortController();
  const [name = "tools", ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  const parameter = decodeURIComponent(rest.join("/"));
  const route = routes[name] ?? routes["tools"]!;
  const view = parameter !== "" && route.item ? route.item : route.view;
  for (const link of document.querySelectorAll<HTMLAnchorElement>("nav a[data-nav]")) {
    if (link.dataset["nav"] === route.nav) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  main.replaceChildren();
  view({ clients, signal: current.signal, main }, parameter);
  // Screen readers and keyboards start at the new view's heading.
  main.querySelector<HTMLElement>("h1")?.focus();
}

function setUpTokenForm(): void {
  const form = byId<HTMLFormElement>("token-form");
  const input = byId<HTMLInputElement>("token");
  const state = byId<HTMLElement>("token-state");
  const describe = (): void => {
    state.textContent = readToken() === "" ? "No token: calls are anonymous." : "A token is set for this tab.";
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    writeToken(input.value.trim());
    input.value = "";
    describe();
    show();
  });
  byId<HTMLButtonElement>("token-forget").addEventListener("click", () => {
    writeToken("");
    input.value = "";
    describe();
    show();
  });
  describe();
}

setUpTokenForm();
window.addEventListener("hashchange", show);
show();
