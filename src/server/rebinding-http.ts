import { errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { pino } from "pino";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import type { NodeRequestHandler } from "./http-listener.js";
import { mcpPath } from "./mcp/mcp-route.js";
import type { RebindingGuard } from "./rebinding-guard.js";
import { requestUrlOf } from "./request-url.js";
import { toConnectError } from "./to-connect-error.js";

type Request = Parameters<NodeRequestHandler>[0];
type Response = Parameters<NodeRequestHandler>[1];

// The refusal is the client's: nothing reaches the log.
const silent = pino({ enabled: false });

/**
 * Paths served whatever the Host and Origin: liveness and readiness carry no data and change
 * nothing, and a probe may name the pod by a name no one configured (a kubelet names its IP,
 * which the guard allows anyway; a custom probe may set any Host).
 */
const probePaths = new Set(["/healthz", "/readyz"]);

/**
 * Applies `guard` to a request of the HTTP port: a request whose Host or `:authority` (both, when
 * it carries both: some code reads one, some the other) is not served, or whose Origin is foreign,
 * is answered 403 here and true is returned. The body is a Connect error (code
 * `permission_denied`, a ToolError detail, which Connect clients read as PERMISSION_DENIED with
 * the message), or at `/mcp` a JSON-RPC error as MCP clients expect. Probes are never refused,
 * nor requests naming no valid authority (they get 400 later).
 */
export function refuseRebinding(request: Request, response: Response, guard: RebindingGuard): boolean {
  const path = pathOf(request.url ?? "");
  // A request naming no valid authority is answered 400 further on, as malformed.
  if (probePaths.has(path) || requestUrlOf(request) === undefined) return false;
  const authority = "authority" in request ? request.authority : undefined;
  const host = request.headers.host;
  let refusal = guard.refuseHost(authority ?? host);
  if (refusal === undefined && host !== undefined && authority !== undefined && host !== authority) {
    refusal = guard.refuseHost(host);
  }
  const origin = request.headers.origin;
  if (refusal === undefined && origin !== undefined) {
    const encrypted = "encrypted" in request.socket && request.socket.encrypted === true;
    refusal = guard.refuseOrigin(origin, encrypted ? "https" : "http", authority ?? host ?? "");
  }
  if (refusal === undefined) return false;
  const error = toConnectError(new ToolRuntimeError("PERMISSION_DENIED", ErrorType.PermissionDenied, refusal), silent);
  const body =
    path === mcpPath
      ? Buffer.from(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: error.rawMessage }, id: null }))
      : Buffer.from(errorToJsonBytes(error, {}));
  response.writeHead(403, { "content-type": "application/json", "cache-control": "no-store" });
  response.end(body);
  return true;
}

function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}
