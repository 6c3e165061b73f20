import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { consolePath } from "./console-assets.js";

/**
 * Redirects a GET or HEAD of exactly `/` (a query string is dropped) to the web console with a 302
 * and answers true; answers false for every other request, which the caller then serves (so a POST
 * to `/` still reaches the RPC handler and its own answer).
 *
 * 302 rather than 308: browsers keep a permanent redirect for good, and what `/` shows may change.
 */
export function redirectRootToConsole(
  request: IncomingMessage | Http2ServerRequest,
  response: ServerResponse | Http2ServerResponse,
): boolean {
  const url = request.url ?? "";
  // Every call of the HTTP port passes here: RPC paths are told apart by their second character.
  if (url !== "/" && !url.startsWith("/?")) return false;
  if (request.method !== "GET" && request.method !== "HEAD") return false;
  response.writeHead(302, {
    location: consolePath,
    "content-type": "text/plain; charset=utf-8",
    "x-content-type-options": "nosniff",
  });
  if (request.method === "HEAD") response.end();
  else response.end(`see ${consolePath}\n`);
  return true;
}
