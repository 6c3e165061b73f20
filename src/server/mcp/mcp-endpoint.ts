import { createMcpHandler } from "@modelcontextprotocol/server";
import { toNodeHandler, type NodeServerResponseLike } from "@modelcontextprotocol/node";
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Logger } from "pino";
import type { Authenticator } from "../../auth/authenticator.js";
import type { Identity } from "../../auth/permissions.js";
import type { ToolRuntime } from "../../runtime.js";
import { peerCertificateOf } from "../peer-certificate.js";
import { McpCancellations, cancellationKey } from "./mcp-cancellations.js";
import { followRegistryForMcp } from "./mcp-list-changed.js";
import { readJsonBody } from "./read-json-body.js";
import { createMcpServerFactory, sessionIdHeader, toAuthInfo } from "./mcp-server-factory.js";

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

/** Options of {@link createMcpEndpoint}. */
export interface McpEndpointOptions {
  readonly logger: Logger;
  /** The same authenticator as the RPCs: bearer tokens or client certificates. */
  readonly authenticate: Authenticator;
  /** Tools per tools/list page. */
  readonly pageSize: number;
  /** Largest request body, in bytes (the server's message limit). */
  readonly maxBodyBytes: number;
  /** The version reported in `serverInfo`. */
  readonly version: string;
}

/** The MCP endpoint of the HTTP port. */
export interface McpEndpoint {
  /** Serves one request to `/mcp`. */
  readonly handle: (request: Request, response: Response) => void;
  /** Refuses new requests with 503 and ends the 2025-era notification streams (shutdown begins). */
  drain(): void;
  /** Drains, then aborts the exchanges still in flight (2026-07-28 listen streams included). */
  close(): Promise<void>;
}

/**
 * MCP over Streamable HTTP at `/mcp`, with the official SDK (`createMcpHandler`): the 2026-07-28
 * revision and, for 2025-era clients, stateless serving. Every request is authenticated like an
 * RPC (401 with a `WWW-Authenticate` challenge otherwise) and served as its identity. On top of
 * what the SDK does for the 2025 era, the endpoint hands out a session id at `initialize` (a
 * random correlation id, no state: any replica takes any request) so that a
 * `notifications/cancelled` POST reaches the call it names, and serves `GET /mcp` as a stream of
 * `notifications/tools/list_changed`.
 */
export function createMcpEndpoint(runtime: ToolRuntime, options: McpEndpointOptions): McpEndpoint {
  const { logger } = options;
  const cancellations = new McpCancellations();
  const onerror = (error: Error): void => logger.debug({ err: error }, "mcp request refused");
  const handler = createMcpHandler(createMcpServerFactory(runtime, { ...options, cancellations }), {
    onerror,
    maxRequestBodySize: options.maxBodyBytes,
  });
  const serveNode = toNodeHandler(handler, { onerror, maxRequestBodySize: options.maxBodyBytes });
  const listChanged = followRegistryForMcp(runtime.registries.default, handler.notify);
  let closing = false;

  const answer = (response: Response, status: number, message: string, headers: Record<string, string> = {}): void => {
    response.writeHead(status, { "content-type": "application/json", ...headers });
    response.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
  };

  const serve = async (request: Request, response: Response): Promise<void> => {
    if (closing) return answer(response, 503, "the server is shutting down: retry against a running server");
    let caller: Identity;
    const authorization = request.headers.authorization ?? null;
    try {
      caller = options.authenticate({ authorization, peerCertificate: peerCertificateOf(request.socket) });
    } catch (error) {
      return answer(response, 401, (error as Error).message, {
        "www-authenticate": 'Bearer realm="toolruntime"',
      });
    }
    if (request.method === "GET" && (request.headers.accept ?? "").includes("text/event-stream")) {
      return listChanged.openStream(caller, response);
    }
    if (request.method !== "POST") {
      return answer(response, 405, "method not allowed: POST JSON-RPC messages, or GET a notification stream", {
        allow: "GET, POST",
      });
    }
    const body = await readJsonBody(request, options.maxBodyBytes);
    if (body.kind === "too_large") {
      // The rest of an HTTP/1.1 body is unread, so the connection cannot carry another request
      // (HTTP/2 refuses connection headers: its stream simply ends).
      return answer(response, 413, body.message, request.httpVersionMajor === 1 ? { connection: "close" } : {});
    }
    const sessionId = headerValue(request.headers[sessionIdHeader]);
    const message = body.kind === "json" ? (body.value as { method?: unknown; params?: unknown }) : undefined;
    if (message?.method === "notifications/cancelled") {
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof requestId === "string" || typeof requestId === "number") {
        cancellations.cancel(
          cancellationKey(sessionId ?? "", caller.name, requestId),
          "the MCP client cancelled the call",
        );
      }
    }
    if (logger.isLevelEnabled("info")) logCall(logger, response, message?.method, caller.name);
    let out: NodeServerResponseLike = response;
    if (message?.method === "initialize" && sessionId === undefined) {
      out = withHeader(response, sessionIdHeader, randomUUID());
    }
    await serveNode(
      {
        method: request.method,
        url: request.url ?? "/mcp",
        headers: request.headers,
        auth: toAuthInfo(caller, authorization ?? ""),
        // The body was read to see what it carries; the SDK reads it again from here.
        [Symbol.asyncIterator]: () => Readable.from(body.kind === "empty" ? [] : [body.bytes])[Symbol.asyncIterator](),
      },
      out,
    );
  };

  return {
    handle(request, response) {
      serve(request, response).catch((error: unknown) => {
        logger.error({ err: error }, "mcp request failed");
        if (!response.headersSent) answer(response, 500, "internal error: see the server log");
        else response.end();
      });
    },
    drain() {
      closing = true;
      listChanged.close();
    },
    async close() {
      this.drain();
      await handler.close();
    },
  };
}

/** One log line per MCP request, like the RPCs' "call" lines: method, caller, HTTP status, duration. */
function logCall(logger: Logger, response: Response, method: unknown, caller: string): void {
  const started = performance.now();
  response.once("close", () => {
    logger.info(
      {
        rpc: `mcp/${typeof method === "string" ? method : "(batch or invalid)"}`,
        protocol: "mcp",
        caller,
        status: response.statusCode,
        durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      },
      "call",
    );
  });
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** `response` with one more header on the head it writes. */
function withHeader(response: Response, name: string, value: string): NodeServerResponseLike {
  const target = response as unknown as NodeServerResponseLike;
  return {
    writeHead: (status, headers) => target.writeHead(status, { ...headers, [name]: value }),
    write: (chunk) => target.write(chunk),
    end: (chunk) => target.end(chunk),
    on: (event, listener) => target.on(event, listener),
    get destroyed() {
      return target.destroyed ?? false;
    },
  };
}
