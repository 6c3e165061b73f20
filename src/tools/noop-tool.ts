import { defineTool } from "./define-tool.js";

/** `builtin.noop`: does nothing and returns an empty object; the cheapest possible run. */
export const noopTool = defineTool({
  name: "builtin.noop",
  description: "Does nothing and returns {}. Measures the runtime's own overhead.",
  toolType: "function",
  capabilities: { readOnly: true, idempotent: true },
  handler: () => ({}),
});
