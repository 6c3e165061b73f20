import { cancellationOf } from "../runner/handler-context.js";
import { abortableDelay } from "./abortable-delay.js";
import { defineTool } from "./define-tool.js";

/** `builtin.sleep`: waits `ms` milliseconds, then answers; stops at once when cancelled. */
export const sleepTool = defineTool({
  name: "builtin.sleep",
  description: 'Waits "ms" milliseconds (0 to 3,600,000), then returns {"slept_ms": ms}. Stops at once when cancelled.',
  toolType: "function",
  capabilities: { readOnly: true, idempotent: true },
  inputSchema: {
    type: "object",
    required: ["ms"],
    properties: { ms: { type: "integer", minimum: 0, maximum: 3_600_000 } },
    additionalProperties: false,
  },
  handler: async (inputs, context) => {
    const ms = inputs["ms"] as number;
    await abortableDelay(ms, cancellationOf(context));
    return { slept_ms: ms };
  },
});
