import { ToolChangeType } from "../../../gen/toolruntime/v1/registry_pb.js";
import type { ToolSpec } from "../../../gen/toolruntime/v1/tool_pb.js";
import { append, h, replaceChildren } from "../dom.js";
import { keepFollowing } from "../keep-following.js";
import { capabilityBadges, counted, toJsonText } from "../format.js";
import type { ViewContext } from "../view.js";

/** The namespace of a tool name: everything before its last segment. */
function namespaceOf(name: string): string {
  return name.slice(0, Math.max(0, name.lastIndexOf(".")));
}

function toolCard(spec: ToolSpec): HTMLElement {
  const headingId = `tool-${spec.name}`;
  const badges = capabilityBadges(spec.capabilities).map(({ label, warn }) =>
    h("li", { class: warn ? "badge warn" : "badge" }, label),
  );
  if (!spec.hasHandler) badges.push(h("li", { class: "badge bad" }, "no handler"));
  const schema = (title: string, value: unknown): HTMLElement =>
    h(
      "details",
      {},
      h("summary", {}, title),
      h("pre", {}, value === undefined ? "(any JSON object)" : toJsonText(value)),
    );
  return h(
    "li",
    { class: "card tool", "data-tool": spec.name },
    h(
      "article",
      { "aria-labelledby": headingId },
      h(
        "div",
        { class: "card-head" },
        h("h2", { id: headingId }, spec.name),
        h(
          "a",
          { class: "button", href: `#/run/${encodeURIComponent(spec.name)}`, "aria-label": `Run ${spec.name}` },
          "Run",
        ),
      ),
      h("p", { class: "hint" }, `Namespace: ${namespaceOf(spec.name)}`),
      badges.length > 0 ? h("ul", { class: "badges", "aria-label": "Capabilities" }, ...badges) : null,
      spec.description ? h("p", {}, spec.description) : null,
      schema("Input schema", spec.inputSchema),
      schema("Output schema", spec.outputSchema),
    ),
  );
}

/**
 * The registry, live: WatchTools' snapshot, then additions, updates and removals as they happen,
 * filtered by namespace and by text in names and descriptions.
 */
export function toolsView({ clients, signal, main }: ViewContext): void {
  document.title = "Tools · toolruntime";
  const tools = new Map<string, ToolSpec>();
  let synced = false;
  const namespace = h("select", { id: "tools-namespace" }, h("option", { value: "" }, "All namespaces"));
  const text = h("input", { id: "tools-filter", type: "search", placeholder: "name or description" });
  const count = h("p", { id: "tools-count", role: "status" }, "Loading tools…");
  const list = h("ul", { id: "tool-list", class: "cards", "aria-label": "Tools" });
  const error = h("p", { id: "tools-error", class: "error", role: "alert" });
  append(
    main,
    h("h1", { tabindex: -1 }, "Tools"),
    h(
      "div",
      { class: "filters", role: "search" },
      h("div", {}, h("label", { for: "tools-namespace" }, "Namespace"), namespace),
      h("div", {}, h("label", { for: "tools-filter" }, "Filter"), text),
    ),
    error,
    count,
    list,
  );

  const render = (): void => {
    if (!synced) return;
    const namespaces = [...new Set([...tools.keys()].map(namespaceOf))].sort();
    const chosen = namespace.value;
    replaceChildren(
      namespace,
      h("option", { value: "" }, "All namespaces"),
      ...namespaces.map((name) => h("option", { value: name, selected: name === chosen }, name)),
    );
    if (!namespaces.includes(chosen)) namespace.value = "";
    const needle = text.value.trim().toLowerCase();
    const shown = [...tools.values()]
      .filter((spec) => namespace.value === "" || namespaceOf(spec.name) === namespace.value)
      .filter((spec) => needle === "" || `${spec.name}\n${spec.description}`.toLowerCase().includes(needle))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
    replaceChildren(list, ...shown.map(toolCard));
    count.textContent =
      shown.length === tools.size
        ? counted(tools.size, "tool")
        : `${shown.length} of ${counted(tools.size, "tool")} shown`;
  };
  namespace.addEventListener("change", render);
  text.addEventListener("input", render);

  keepFollowing(
    async (live) => {
      // Each (re)start begins with a snapshot, which replaces what was shown once it is complete.
      const snapshot = new Map<string, ToolSpec>();
      let inSnapshot = true;
      for await (const change of clients.registry.watchTools({}, { signal })) {
        live();
        const spec = change.spec;
        switch (change.type) {
          case ToolChangeType.SNAPSHOT:
            if (spec) snapshot.set(spec.name, spec);
            continue;
          case ToolChangeType.SNAPSHOT_END:
            inSnapshot = false;
            synced = true;
            tools.clear();
            for (const [name, item] of snapshot) tools.set(name, item);
            break;
          case ToolChangeType.ADDED:
          case ToolChangeType.UPDATED:
            if (spec) tools.set(spec.name, spec);
            break;
          case ToolChangeType.REMOVED:
            if (spec) tools.delete(spec.name);
            break;
          case ToolChangeType.HEARTBEAT:
          case ToolChangeType.UNSPECIFIED:
            continue;
        }
        if (!inSnapshot) render();
      }
    },
    {
      signal,
      showError: (message) => {
        error.textContent = message;
        if (message !== "" && !synced) count.textContent = "";
      },
    },
  );
}
