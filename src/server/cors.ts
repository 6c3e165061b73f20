import { cors } from "@connectrpc/connect";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";

/** A request handler of the HTTP port (HTTP/1.1 and HTTP/2); the same shape as http-listener's. */
type Handler = (request: IncomingMessage | Http2ServerRequest, response: ServerResponse | Http2ServerResponse) => void;

/**
 * Request headers a browser may send beyond what Connect and gRPC-Web need: auth, tracing, and
 * MCP's Streamable HTTP headers (for /mcp).
 */
const extraAllowedHeaders = [
  "Authorization",
  "Traceparent",
  "Tracestate",
  "Mcp-Protocol-Version",
  "Mcp-Session-Id",
  "Last-Event-Id",
];

/** Response headers a page may read beyond Connect's list: the negotiated encodings, MCP's session id. */
const extraExposedHeaders = [
  "Connect-Accept-Encoding",
  "Grpc-Encoding",
  "Grpc-Accept-Encoding",
  "Mcp-Session-Id",
  "Www-Authenticate",
];

/** How long a browser may cache a preflight answer, in seconds. */
const preflightMaxAgeSeconds = 7200;

/**
 * Wraps `handler` so that pages served from `allowedOrigins` (exact origins such as
 * "https://app.example.com") may call the service from a browser with Connect or gRPC-Web.
 * A request whose `Origin` is in the list gets `Access-Control-Allow-Origin` with that origin and
 * the headers Connect and gRPC-Web need exposed (grpc-status, grpc-message,
 * grpc-status-details-bin, the encodings); its preflight (`OPTIONS` with
 * `Access-Control-Request-Method`) is answered 204 with the allowed methods and headers. Any other
 * request passes through untouched, so a page on an origin not in the list is blocked by its
 * browser. With an empty list the handler is returned as it is.
 */
export function withCors<H extends Handler>(handler: H, allowedOrigins: readonly string[]): H {
  if (allowedOrigins.length === 0) return handler;
  const allowed = new Set(allowedOrigins);
  const allowMethods = cors.allowedMethods.join(", ");
  const allowHeaders = [...cors.allowedHeaders, ...extraAllowedHeaders].join(", ");
  const exposeHeaders = [...cors.exposedHeaders, ...extraExposedHeaders].join(", ");
  const wrapped: Handler = (request, response) => {
    const origin = request.headers.origin;
    if (typeof origin !== "string" || !allowed.has(origin)) {
      handler(request, response);
      return;
    }
    response.setHeader("Vary", "Origin");
    response.setHeader("Access-Control-Allow-Origin", origin);
    if (request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined) {
      response.setHeader("Access-Control-Allow-Methods", allowMethods);
      response.setHeader("Access-Control-Allow-Headers", allowHeaders);
      response.setHeader("Access-Control-Max-Age", String(preflightMaxAgeSeconds));
      response.statusCode = 204;
      response.end();
      return;
    }
    response.setHeader("Access-Control-Expose-Headers", exposeHeaders);
    handler(request, response);
  };
  return wrapped as H;
}

/**
 * Checks one `--cors-origin` value: an origin is a scheme, a host and an optional port, with no
 * path, query or trailing slash. Returns an error message naming it, or undefined when it is valid.
 */
export function checkCorsOrigin(value: string): string | undefined {
  let origin: string | undefined;
  try {
    const url = new URL(value);
    origin = url.protocol === "http:" || url.protocol === "https:" ? url.origin : undefined;
  } catch {
    origin = undefined;
  }
  return origin === value
    ? undefined
    : `--cors-origin "${value}" is invalid: use an origin, a scheme, host and optional port with no path or trailing slash, for example https://app.example.com or http://127.0.0.1:3000`;
}
