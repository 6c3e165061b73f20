import { Code } from "@connectrpc/connect";
import { createMcpHandler, isInitializeRequest } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { Readable } from "node:stream";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Logger } from "pino";
import type { Authenticator } from "../../auth/authenticator.js";
import type { Identity } from "../../auth/permissions.js";
import type { ToolRuntime } from "../../runtime.js";
import type { CallLimiter } from "../call-limiter.js";
import { codeName, type McpRequestObserver } from "../../telemetry/metrics.js";
import { peerCertificateOf } from "../peer-certificate.js";
import { parseApprovalRequestId } from "./mcp-approval-tokens.js";
import { McpCancellations, cancellationKey } from "./mcp-cancellations.js";
import { followRegistryForMcp } from "./mcp-list-changed.js";
import { methodLabel, watchMcpExchange } from "./mcp-request-outcome.js";
import { readJsonBody } from "./read-json-body.js";
import { createMcpServerFactory, toAuthInfo } from "./mcp-server-factory.js";
import { newSessionId, sessionIdHeader } from "./mcp-session-id.js";
import { takeApprovalAnswer } from "./take-approval-answer.js";
import { noAuthorityMessage, requestUrlOf } from "../request-url.js";

/** The JSON-RPC error of an initialize request whose params are not what MCP asks for. */
const invalidInitialize = {
  code: -32602,
  message:
    "Invalid params: initialize takes params with protocolVersion (a string), capabilities (an object) and clientInfo (an object with name and version)",
};

/** The JSON-RPC error of a tools/list whose cursor is not a string (what MCP's pagination asks). */
const invalidCursor = {
  code: -32602,
  message: "Invalid params: cursor must be a string: pass the nextCursor of a previous result",
};

/** The fields of a JSON-RPC message the endpoint looks at. */
interface JsonRpcMessage {
  readonly method?: unknown;
  readonly params?: unknown;
  readonly id?: unknown;
  readonly result?: unknown;
  readonly error?: unknown;
}

/** Whether a client's response answers one of the endpoint's approval questions. */
function isApprovalAnswer(message: JsonRpcMessage): boolean {
  return parseApprovalRequestId(message.id) !== undefined;
}

/** Whether a tools/list request's params hold no cursor, or a string one. */
function hasValidCursor(params: unknown): boolean {
  if (params === undefined) return true;
  if (params === null || typeof params !== "object" || Array.isArray(params)) return true;
  const cursor = (params as { cursor?: unknown }).cursor;
  return cursor === undefined || typeof cursor === "string";
}

/** A request's JSON-RPC id as the answer repeats it: null unless it is a string or a number. */
function jsonRpcIdOf(id: unknown): string | number | null {
  return typeof id === "string" || typeof id === "number" ? id : null;
}

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
  /**
   * Whether an identity may approve the runs it started (`--allow-self-approval`): then a client
   * that declared form elicitation is asked to approve the runs it starts. Default false.
   */
  readonly allowSelfApproval?: boolean;
  /** Measures each request (the RPC metrics, as service and protocol "mcp"). */
  readonly observe?: McpRequestObserver;
  /**
   * The server's bound on calls in flight (`--max-calls-in-flight`): each POST to /mcp is a call
   * from when its body has arrived until it is answered; past the bound it is refused with 429. A
   * `GET` notification stream is not (it is bounded by the connections).
   */
  readonly limiter?: CallLimiter;
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
 * `notifications/cancelled` POST reaches the call it names, serves `GET /mcp` as a stream of
 * `notifications/tools/list_changed`, and takes a client's answer to an approval question (a
 * JSON-RPC response in a POST of its own; see takeApprovalAnswer). Each request is measured and
 * logged like an RPC, with its MCP method and a status code for its outcome.
 */
export function createMcpEndpoint(runtime: ToolRuntime, options: McpEndpointOptions): McpEndpoint {
  const { logger } = options;
  const cancellations = new McpCancellations();
  const allowSelfApproval = options.allowSelfApproval ?? false;
  const onerror = (error: Error): void => logger.debug({ err: error }, "mcp request refused");
  const factory = createMcpServerFactory(runtime, { ...options, cancellations, allowSelfApproval });
  const handler = createMcpHandler(factory, {
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
    const observed = options.observe?.();
    // What is known of the request when it ends: its method once the body is read, its caller once authenticated.
    const facts: { method: string; caller: string | undefined } = { method: "(unknown)", caller: undefined };
    const startedAt = performance.now();
    const exchange = watchMcpExchange(response, (code) => {
      observed?.(facts.method, code);
      if (facts.caller !== undefined && logger.isLevelEnabled("info")) {
        logCall(logger, { method: facts.method, caller: facts.caller, status: response.statusCode, code, startedAt });
      }
    });
    if (closing) return answer(response, 503, "the server is shutting down: retry against a running server");
    // The SDK builds the request's URL from it, and answers 500 when it cannot.
    if (requestUrlOf(request) === undefined) return answer(response, 400, noAuthorityMessage);
    let caller: Identity;
    const authorization = request.headers.authorization ?? null;
    try {
      caller = options.authenticate({ authorization, peerCertificate: peerCertificateOf(request.socket) });
    } catch (error) {
      return answer(response, 401, (error as Error).message, {
        "www-authenticate": 'Bearer realm="toolruntime"',
      });
    }
    facts.caller = caller.name;
    if (request.method === "GET" && (request.headers.accept ?? "").includes("text/event-stream")) {
      facts.method = "(stream)";
      return listChanged.openStream(caller, response);
    }
    if (request.method !== "POST") {
      return answer(response, 405, "method not allowed: POST JSON-RPC messages, or GET a notification stream", {
        allow: "GET, POST",
      });
    }
    // Before anything in the body is acted on (cancellations and approval answers are, before the
    // SDK checks the type): a text/plain POST is one a page of any origin may send without a preflight.
    const mediaType = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (mediaType !== "application/json") {
      return answer(response, 415, "Unsupported Media Type: Content-Type must be application/json");
    }
    const body = await readJsonBody(request, options.maxBodyBytes);
    if (body.kind === "too_large") {
      // The rest of an HTTP/1.1 body is unread, so the connection cannot carry another request
      // (HTTP/2 refuses connection headers: its stream simply ends).
      return answer(response, 413, body.message, request.httpVersionMajor === 1 ? { connection: "close" } : {});
    }
    if (body.kind === "too_deep") return answer(response, 400, body.message);
    // A call of the server's bound once its body is all here, as an RPC is (see http-call-limit.ts):
    // a body withheld, or trickled, holds no slot.
    const limiter = options.limiter;
    if (limiter) {
      if (!limiter.tryAcquire()) return answer(response, 429, limiter.refusal.rawMessage);
      response.once("close", () => limiter.release());
    }
    const sessionId = headerValue(request.headers[sessionIdHeader]);
    // A batch (protocol versions before 2025-06-18) carries its messages in an array: each is
    // looked at as a single one would be.
    const batch = body.kind === "json" && Array.isArray(body.value) ? (body.value as unknown[]) : undefined;
    const message = body.kind === "json" && !batch ? (body.value as JsonRpcMessage) : undefined;
    facts.method = batch ? "(batch)" : methodLabel(message);
    const messages: readonly unknown[] = batch ?? (message ? [message] : []);
    for (const each of messages) {
      const cancelled = each as JsonRpcMessage | null;
      if (cancelled?.method !== "notifications/cancelled") continue;
      const requestId = (cancelled.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof requestId === "string" || typeof requestId === "number") {
        cancellations.cancel(
          cancellationKey(sessionId ?? "", caller.name, requestId),
          "the MCP client cancelled the call",
        );
      }
    }
    // The client's answers to approval questions decide their runs; the SDK knows nothing of them.
    const answers = messages.filter(
      (each): each is JsonRpcMessage => methodLabel(each) === "(response)" && isApprovalAnswer(each as JsonRpcMessage),
    );
    let forwarded = body.kind === "empty" ? [] : [body.bytes];
    if (answers.length > 0) {
      const take = (answerMessage: JsonRpcMessage) =>
        takeApprovalAnswer(
          runtime,
          caller,
          parseApprovalRequestId(answerMessage.id) as NonNullable<ReturnType<typeof parseApprovalRequestId>>,
          answerMessage,
          allowSelfApproval,
          logger,
        );
      const [firstAnswer, ...moreAnswers] = answers as [JsonRpcMessage, ...JsonRpcMessage[]];
      // The reply is the first failure, or the last answer's.
      let reply = await take(firstAnswer);
      for (const more of moreAnswers) {
        const next = await take(more);
        if (!reply.error) reply = next;
      }
      const rest = (batch ?? []).filter((each) => !answers.includes(each as JsonRpcMessage));
      if (rest.length === 0) {
        exchange.outcome.code = reply.code;
        if (!reply.error) {
          response.writeHead(reply.status);
          response.end();
          return;
        }
        response.writeHead(reply.status, { "content-type": "application/json" });
        response.end(JSON.stringify({ jsonrpc: "2.0", error: reply.error, id: null }));
        return;
      }
      // The rest of the batch goes to the SDK, without the answers it cannot place.
      forwarded = [Buffer.from(JSON.stringify(rest))];
    }
    // The SDK answers a cursor that is not a string with an internal error (-32603) and a zod dump.
    if (message?.method === "tools/list" && !hasValidCursor(message.params)) {
      exchange.outcome.code = Code.InvalidArgument;
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ jsonrpc: "2.0", error: invalidCursor, id: jsonRpcIdOf(message.id) }));
      return;
    }
    // The SDK answers a malformed initialize with an internal error (-32603) and a zod dump.
    if (message?.method === "initialize" && !isInitializeRequest(message)) {
      response.writeHead(400, { "content-type": "application/json" });
      response.end(JSON.stringify({ jsonrpc: "2.0", error: invalidInitialize, id: jsonRpcIdOf(message.id) }));
      return;
    }
    const initializing = message?.method === "initialize" && sessionId === undefined;
    await serveNode(
      {
        method: request.method,
        url: request.url ?? "/mcp",
        headers: request.headers,
        auth: toAuthInfo(caller, authorization ?? "", exchange.outcome),
        // The body was read to see what it carries; the SDK reads it again from here.
        [Symbol.asyncIterator]: () => Readable.from(forwarded)[Symbol.asyncIterator](),
      },
      exchange.forSdk(initializing ? { [sessionIdHeader]: newSessionId(message.params) } : {}),
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

/**
 * One log line per MCP request, like the RPCs' "call" lines: method, caller, HTTP status, code,
 * duration; at `debug` when it ended OK, at `info` otherwise (as the RPCs' lines).
 */
function logCall(
  logger: Logger,
  facts: { method: string; caller: string; status: number; code: number; startedAt: number },
): void {
  const ok = facts.code === 0;
  if (!logger.isLevelEnabled(ok ? "debug" : "info")) return;
  logger[ok ? "debug" : "info"](
    {
      rpc: `mcp/${facts.method}`,
      protocol: "mcp",
      caller: facts.caller,
      status: facts.status,
      code: codeName(facts.code),
      durationMs: Math.round((performance.now() - facts.startedAt) * 1000) / 1000,
    },
    "call",
  );
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
