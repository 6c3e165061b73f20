import type { NodeRequestHandler } from "../http-listener.js";

/** The path of the MCP endpoint on the HTTP port. */
export const mcpPath = "/mcp";

/**
 * Sends requests for {@link mcpPath} (any query) to `mcp` and everything else to `handler`;
 * returns `handler` itself when there is no MCP endpoint.
 */
export function withMcpRoute(handler: NodeRequestHandler, mcp: NodeRequestHandler | undefined): NodeRequestHandler {
  if (!mcp) return handler;
  return (request, response) => {
    const url = request.url ?? "";
    const path = url.includes("?") ? url.slice(0, url.indexOf("?")) : url;
    if (path === mcpPath) mcp(request, response);
    else handler(request, response);
  };
}
