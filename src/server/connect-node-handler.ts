import {
  Code,
  ConnectError,
  createConnectRouter,
  type ConnectRouter,
  type ConnectRouterOptions,
  type ContextValues,
} from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import {
  uResponseNotFound,
  type Compression,
  type UniversalHandler,
  type UniversalServerRequest,
} from "@connectrpc/connect/protocol";
import type http from "node:http";
import http2 from "node:http2";
import type { Logger } from "pino";
import { httpDate } from "./date-header.js";
import type { BodyAwareHandler } from "./http-call-limit.js";
import { noAuthorityMessage, requestUrlOf } from "./request-url.js";

/** The HTTP port's RPC handler: it may be given a request's body read already (see withCallLimit). */
export type ConnectNodeHandler = BodyAwareHandler & {
  /** Whether the call a request to `url` makes takes exactly one message (unary, server-streaming). */
  readonly takesOneMessage: (url: string) => boolean;
};

/** What {@link createConnectNodeHandler} serves and how. */
export interface ConnectNodeHandlerOptions extends ConnectRouterOptions {
  /** Adds the services to the router (and may wrap its handlers once they are all there). */
  readonly routes: (router: ConnectRouter) => void;
  /** Values every handler of one request sees, taken from the request (its peer's certificate…). */
  readonly contextValues: (request: http.IncomingMessage | http2.Http2ServerRequest) => ContextValues;
  /** Where a handler that fails outside the protocol (a bug, not a client's error) is reported. */
  readonly logger: Logger;
}

/** The compressions the HTTP port accepts unless told otherwise, as connect-node's own adapter. */
export const defaultHttpCompressions: readonly Compression[] = [compressionGzip, compressionBrotli];

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * Serves a ConnectRouter's handlers (Connect, gRPC-Web and gRPC over HTTP) to Node's HTTP/1.1 and
 * HTTP/2 servers, as connect-node's `connectNodeAdapter` does, without two costs that adapter pays
 * on every call:
 * - It aborts each request's signal when the request closes, also after a complete response, and
 *   an abort without a reason makes a DOMException, whose stack trace alone costs about 5 µs here
 *   (then the abort event is dispatched). Here the signal is aborted only when the client went
 *   away before the response ended, which is the only time a handler can still act on it.
 * - It wraps the request body in an async generator; a Node request is an async iterable of its
 *   chunks itself, with the same errors and the same end.
 * Paths no handler serves get 404, as there.
 */
export function createConnectNodeHandler(options: ConnectNodeHandlerOptions): ConnectNodeHandler {
  const router = createConnectRouter({
    ...options,
    acceptCompression: options.acceptCompression ?? [...defaultHttpCompressions],
  });
  options.routes(router);
  const handlers = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) handlers.set(handler.requestPath, handler);
  const logger = options.logger;

  const handlerOf = (url: string): UniversalHandler | undefined => {
    const query = url.indexOf("?");
    return handlers.get(query < 0 ? url : url.slice(0, query));
  };
  const handle: BodyAwareHandler = (request, response, body) => {
    const handler = handlerOf(request.url ?? "");
    if (handler === undefined) {
      response.writeHead(uResponseNotFound.status);
      response.end();
      return;
    }
    const universalRequest = universalRequestOf(request, response, options.contextValues(request), body);
    if (universalRequest === undefined) {
      response.writeHead(400, { "content-type": "text/plain; charset=utf-8" });
      response.end(`${noAuthorityMessage}\n`);
      return;
    }
    handler(universalRequest)
      .then((universalResponse) => {
        // Over HTTP/2 the response carries the date Node would add itself as its headers go (see
        // date-header.ts).
        if ("stream" in response && !response.headersSent) response.setHeader("date", httpDate());
        return universalResponseToNodeResponse(universalResponse, response);
      })
      .catch((reason: unknown) => {
        // Aborted: the response could not be written because the client went away.
        if (ConnectError.from(reason).code === Code.Aborted) return;
        logger.error({ err: reason, procedure: handler.requestPath }, "the HTTP port's handler failed");
      });
  };
  return Object.assign(handle, {
    takesOneMessage: (url: string): boolean => {
      const kind = handlerOf(url)?.method.methodKind;
      return kind === "unary" || kind === "server_streaming";
    },
  });
}

/** The universal request connect's handlers take, or undefined when the request names no valid authority. */
function universalRequestOf(
  request: NodeRequest,
  response: NodeResponse,
  contextValues: ContextValues,
  body: AsyncIterable<Uint8Array> | undefined,
): UniversalServerRequest | undefined {
  const url = requestUrlOf(request);
  if (url === undefined) return undefined;
  const abortController = new AbortController();
  if ("stream" in request) {
    request.once("close", () => {
      if (response.writableEnded) return;
      abortController.abort(closedStreamError(request.stream.rstCode));
      // A write that waits for 'drain' (the client stopped reading, then reset the stream) would
      // wait forever: Node's response gives neither 'drain' nor 'error' after a reset, and the
      // call's end (its metrics, log line and span) never came. Woken, the writer's next write
      // fails as the stream is gone, and the call ends as cancelled.
      if (response.listenerCount("drain") > 0) response.emit("drain");
    });
  } else {
    const abortEarly = (error?: Error): void => {
      request.off("error", abortEarly);
      response.off("close", abortEarly);
      if (response.writableEnded) return;
      abortController.abort(closedConnectionError(error ?? request.errored ?? undefined));
      // As over HTTP/2 (above): a write waiting for 'drain' on a connection that closed waits forever.
      if (response.listenerCount("drain") > 0) response.emit("drain");
    };
    request.once("error", abortEarly);
    // An HTTP/1.1 request closes once its body is read; the response closes with the connection.
    response.once("close", abortEarly);
  }
  return {
    httpVersion: request.httpVersion,
    method: request.method ?? "",
    url,
    header: webHeadersOf(request.headers),
    body: body ?? (request as AsyncIterable<Uint8Array>),
    signal: abortController.signal,
    contextValues,
  };
}

/** Node's request headers as web Headers, without HTTP/2's pseudo-headers. */
function webHeadersOf(headers: http.IncomingHttpHeaders | http2.IncomingHttpHeaders): Headers {
  const webHeaders = new Headers();
  for (const name in headers) {
    if (name.charCodeAt(0) === 0x3a /* ":" */) continue;
    const value = headers[name];
    if (typeof value === "string") webHeaders.append(name, value);
    else if (Array.isArray(value)) for (const item of value) webHeaders.append(name, item);
  }
  return webHeaders;
}

/** Why an HTTP/2 stream that closed before its response ended did so, as a ConnectError. */
function closedStreamError(rstCode: number): ConnectError {
  const hex = `0x${rstCode.toString(16)}`;
  switch (rstCode) {
    case http2.constants.NGHTTP2_REFUSED_STREAM:
      return new ConnectError(`the HTTP/2 stream was refused (${hex})`, Code.Unavailable);
    case http2.constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return new ConnectError(`the HTTP/2 stream was closed with ENHANCE_YOUR_CALM (${hex})`, Code.ResourceExhausted);
    case http2.constants.NGHTTP2_NO_ERROR:
    case http2.constants.NGHTTP2_CANCEL:
      return new ConnectError(`the HTTP/2 stream was closed before the response ended (${hex})`, Code.Canceled);
    default:
      return new ConnectError(`the HTTP/2 stream closed with error code ${hex}`, Code.Internal);
  }
}

/** Why an HTTP/1.1 connection that closed before its response ended did so, as a ConnectError. */
function closedConnectionError(error: Error | undefined): ConnectError {
  return new ConnectError("the client closed the connection", Code.Canceled, undefined, undefined, error);
}
