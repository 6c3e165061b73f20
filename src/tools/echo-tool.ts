import { defineTool } from "./define-tool.js";

/** `builtin.echo`: returns its inputs unchanged, under "echo". */
export const echoTool = defineTool({
  name: "builtin.echo",
  description: 'Returns its inputs unchanged, under "echo". Useful to check a client end to end.',
  toolType: "function",
  capabilities: { readOnly: true, idempotent: true },
  outputSchema: { type: "object", required: ["echo"], properties: { echo: { type: "object" } } },
  handler: (inputs) => ({ echo: inputs }),
});
