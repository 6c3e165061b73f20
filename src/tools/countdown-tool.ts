import { cancellationOf } from "../runner/handler-context.js";
import { abortableDelay } from "./abortable-delay.js";
import { defineTool } from "./define-tool.js";

/** `builtin.countdown`: counts down, reporting progress at each step; honours cancellation. */
export const countdownTool = defineTool({
  name: "builtin.countdown",
  description:
    'Counts down from "from" (1 to 1,000, default 5) with "interval_ms" between steps (0 to 60,000, default 1,000), reporting progress at each step. Returns {"counted": from}.',
  toolType: "function",
  capabilities: { readOnly: true, idempotent: true },
  defaultTimeoutMs: 600_000,
  inputSchema: {
    type: "object",
    properties: {
      from: { type: "integer", minimum: 1, maximum: 1000 },
      interval_ms: { type: "integer", minimum: 0, maximum: 60_000 },
    },
    additionalProperties: false,
  },
  handler: async (inputs, context) => {
    const from = (inputs["from"] as number | undefined) ?? 5;
    const intervalMs = (inputs["interval_ms"] as number | undefined) ?? 1000;
    for (let remaining = from; remaining > 0; remaining--) {
      context.reportProgress({ fraction: (from - remaining) / from, message: `${remaining} to go` });
      await abortableDelay(intervalMs, cancellationOf(context));
    }
    context.reportProgress({ fraction: 1, message: "done" });
    return { counted: from };
  },
});
