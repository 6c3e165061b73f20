/**
 * POSTs one JSON-RPC message (or a batch) to an MCP endpoint as a 2025-era client without a
 * library does: JSON, accepting JSON or an event stream, with the protocol version header.
 */
export function postMcp(url: string | URL, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}
