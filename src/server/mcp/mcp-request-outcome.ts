import { Code } from "@connectrpc/connect";
import { codeFromString } from "@connectrpc/connect/protocol-connect";
import type { NodeServerResponseLike } from "@modelcontextprotocol/node";
import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";

// Each request to /mcp is measured like an RPC: an MCP method for the method label, and a status
// code for its outcome, taken from what decided it (the endpoint itself, a gateway handler, or
// what the SDK answered).

/** The status code of a request that succeeded (`Code` starts at CANCELLED = 1). */
export const okCode = 0;

/** Where the gateway's handlers leave the outcome of the request they served: a status code, 0 for OK. */
export interface McpOutcome {
  code: number | undefined;
}

/** The MCP methods a client sends; any other name is "(other)", so a client cannot grow the label set. */
const clientMethods = new Set([
  "initialize",
  "ping",
  "tools/list",
  "tools/call",
  "prompts/list",
  "prompts/get",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "resources/subscribe",
  "resources/unsubscribe",
  "completion/complete",
  "logging/setLevel",
  "server/discover",
  "subscriptions/listen",
  "tasks/get",
  "tasks/list",
  "tasks/result",
  "tasks/cancel",
  "notifications/initialized",
  "notifications/cancelled",
  "notifications/progress",
  "notifications/roots/list_changed",
]);

/**
 * The method label of a request to /mcp: the MCP method of the JSON-RPC message it carries,
 * "(response)" for a client's answer to a server request, "(other)" for a method MCP does not
 * define, "(invalid)" for a body that is no single JSON-RPC message (the endpoint labels a batch
 * "(batch)").
 */
export function methodLabel(message: unknown): string {
  if (message === null || typeof message !== "object" || Array.isArray(message)) return "(invalid)";
  const { method, id } = message as { method?: unknown; id?: unknown };
  if (typeof method === "string") return clientMethods.has(method) ? method : "(other)";
  if (id !== undefined && ("result" in message || "error" in message)) return "(response)";
  return "(invalid)";
}

/** The status code of an HTTP status the endpoint or the SDK answered with (2xx is OK). */
export function codeOfHttpStatus(status: number): number {
  if (status < 400) return okCode;
  switch (status) {
    case 401:
      return Code.Unauthenticated;
    case 403:
      return Code.PermissionDenied;
    case 404:
      return Code.NotFound;
    case 405:
      return Code.Unimplemented;
    case 409:
      return Code.FailedPrecondition;
    case 413:
    case 429:
      return Code.ResourceExhausted;
    case 499:
      return Code.Canceled;
    case 503:
      return Code.Unavailable;
    default:
      return status < 500 ? Code.InvalidArgument : Code.Internal;
  }
}

/**
 * The status code of a JSON-RPC error: the code name the gateway's refusals carry in `data.code`,
 * otherwise by JSON-RPC code (parse error, invalid request and invalid params are
 * INVALID_ARGUMENT, method not found UNIMPLEMENTED, internal error INTERNAL, a missing client
 * capability FAILED_PRECONDITION, anything else UNKNOWN).
 */
export function codeOfJsonRpcError(error: { readonly code?: unknown; readonly data?: unknown }): number {
  const named = (error.data as { code?: unknown } | undefined)?.code;
  const fromData = typeof named === "string" ? codeFromString(named) : undefined;
  if (fromData !== undefined) return fromData;
  switch (error.code) {
    case -32700:
    case -32600:
    case -32602:
      return Code.InvalidArgument;
    case -32601:
      return Code.Unimplemented;
    case -32603:
      return Code.Internal;
    case -32021:
      return Code.FailedPrecondition;
    default:
      return Code.Unknown;
  }
}

/** Most bytes of a response body kept to find a JSON-RPC error the SDK answered with. */
const maxCapturedBytes = 64 * 1024;

/** One exchange at /mcp, watched until its response closes. */
export interface McpExchange {
  /** Where a handler records the outcome; it decides over the HTTP status and the body. */
  readonly outcome: McpOutcome;
  /**
   * The response for the SDK to write to, with `headers` added to its head. Its body is read,
   * when no handler accounted for the request, for a JSON-RPC error (its first 64 KiB only).
   */
  forSdk(headers: Readonly<Record<string, string>>): NodeServerResponseLike;
}

/**
 * Watches an exchange and calls `onEnd` once, when its response closes, with its status code:
 * CANCELLED when the client left before the response ended; otherwise what a handler recorded;
 * otherwise the HTTP status, or for a 2xx from the SDK the JSON-RPC error in its body (JSON or
 * SSE) if any; OK (0) when none of these says otherwise.
 */
export function watchMcpExchange(
  response: ServerResponse | Http2ServerResponse,
  onEnd: (code: number) => void,
): McpExchange {
  const outcome: McpOutcome = { code: undefined };
  const chunks: Buffer[] = [];
  let captured = 0;
  const capture = (chunk: string | Uint8Array | undefined): void => {
    if (chunk === undefined || outcome.code !== undefined || captured >= maxCapturedBytes) return;
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk);
    chunks.push(bytes);
    captured += bytes.length;
  };
  response.once("close", () => {
    if (!response.writableEnded) return onEnd(Code.Canceled);
    if (outcome.code !== undefined) return onEnd(outcome.code);
    if (response.statusCode >= 400) return onEnd(codeOfHttpStatus(response.statusCode));
    onEnd(chunks.length === 0 ? okCode : codeOfBody(Buffer.concat(chunks).toString("utf8")));
  });
  const target = response as unknown as NodeServerResponseLike;
  return {
    outcome,
    forSdk: (headers) => ({
      writeHead: (status, head) => target.writeHead(status, { ...head, ...headers }),
      write: (chunk) => {
        capture(chunk);
        return target.write(chunk);
      },
      end: (chunk) => {
        capture(chunk);
        return target.end(chunk);
      },
      on: (event, listener) => target.on(event, listener),
      get destroyed() {
        return target.destroyed ?? false;
      },
    }),
  };
}

/** OK, or the status code of the first JSON-RPC error in a JSON or SSE body. */
function codeOfBody(body: string): number {
  const texts = body.trimStart().startsWith("{")
    ? [body]
    : body
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice("data:".length));
  for (const text of texts) {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      continue;
    }
    const error = (message as { error?: unknown } | null)?.error;
    if (error !== null && typeof error === "object") return codeOfJsonRpcError(error);
  }
  return okCode;
}
