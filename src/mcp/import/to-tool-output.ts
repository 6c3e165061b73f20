/** The parts of an MCP `tools/call` result this runtime reads. */
export interface McpCallResult {
  readonly content?: ReadonlyArray<{ readonly type: string; readonly text?: string }> | undefined;
  readonly structuredContent?: Record<string, unknown> | undefined;
  readonly isError?: boolean | undefined;
}

/** A `tools/call` result as a run's outcome: an output object, or the details of a failure. */
export type ToolOutcome =
  { readonly ok: true; readonly output: Record<string, unknown> } | { readonly ok: false; readonly details: string };

/**
 * Converts an MCP `tools/call` result:
 * - `isError: true` → a failure whose details are the text content (joined by newlines), which the
 *   handler reports as a HandlerError;
 * - `structuredContent` → the output as it is;
 * - otherwise the text content, joined by newlines: when it parses as a JSON object it is the output,
 *   else the output is `{ "text": "…" }`. Non-text content (images, audio, resources) is dropped.
 */
export function toToolOutcome(result: McpCallResult): ToolOutcome {
  const text = (result.content ?? [])
    .filter((part) => part.type === "text" && typeof part.text === "string")
    .map((part) => part.text as string)
    .join("\n");
  if (result.isError === true) return { ok: false, details: text === "" ? "the MCP tool reported an error" : text };
  if (result.structuredContent !== undefined) return { ok: true, output: result.structuredContent };
  return { ok: true, output: parseObject(text) ?? { text } };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
