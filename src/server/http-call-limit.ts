import { Code, ConnectError } from "@connectrpc/connect";
import { createAsyncIterable, encodeEnvelope } from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  endStreamFlag,
  endStreamToJson,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { maxJsonNesting, nestsDeeperThan, tooDeepMessage } from "../json/json-nesting.js";
import type { CallLimiter } from "./call-limiter.js";
import type { CallPacer } from "./call-pacer.js";
import type { NodeRequestHandler } from "./http-listener.js";

/** A complete HTTP response, prepared once. */
interface PreparedResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array;
}

/** What {@link withCallLimit} needs to know of the calls it admits. */
export interface CallLimitOptions {
  /** Starts admitted calls with a bounded amount of work per turn of the event loop; at once when absent. */
  readonly pacer?: CallPacer | undefined;
  /** Whether the call a request makes takes exactly one message (unary, server-streaming), by its URL. */
  readonly takesOneMessage: (url: string) => boolean;
  /**
   * Bytes of body read before admitting such a call; a longer body is admitted at once and handed
   * on whole for the handler to refuse by its own limit.
   */
  readonly maxBodyBytes: number;
}

/** A request handler that may be given the request's body, read already. */
export type BodyAwareHandler = (
  request: Parameters<NodeRequestHandler>[0],
  response: Parameters<NodeRequestHandler>[1],
  body?: AsyncIterable<Uint8Array>,
) => void;

/**
 * Puts the server-wide bound on calls in flight in front of the RPC handler of the HTTP port. A
 * call that takes one message is admitted once its request body is complete, as on the gRPC port
 * (grpc-js runs a unary handler once its message arrived): a client that sends its headers and
 * then trickles or withholds the body holds a connection, never one of the server's call slots.
 * The body read is handed to `handler`. A call whose requests stream (a provider's) is admitted
 * at once. A call beyond the bound is answered without reaching connect-node, with the limiter's
 * RESOURCE_EXHAUSTED in the form its protocol expects (content type decides): a gRPC or gRPC-Web
 * trailers-only response, a Connect end-of-stream message, or a Connect unary error. An admitted
 * call reaches `handler` when the pacer lets it (at once without one); one whose client left
 * meanwhile never does.
 */
export function withCallLimit(
  handler: BodyAwareHandler,
  limiter: CallLimiter,
  options: CallLimitOptions,
): NodeRequestHandler {
  const refusals = prepareRefusals(limiter.refusal);
  const tooDeep = prepareRefusals(new ConnectError(tooDeepMessage(maxJsonNesting), Code.InvalidArgument));
  const pacer = options.pacer;
  const admit = (
    request: Parameters<NodeRequestHandler>[0],
    response: Parameters<NodeRequestHandler>[1],
    body?: ReadBody,
  ): void => {
    // JSON nested this deep is refused before anything parses it: its parse alone holds the loop.
    if (
      body?.complete === true &&
      isJson(request.headers["content-type"]) &&
      nestsDeeperThan(body.read, maxJsonNesting)
    ) {
      const refusal = tooDeep(request.headers["content-type"] ?? "");
      response.writeHead(refusal.status, refusal.headers);
      response.end(refusal.body);
      return;
    }
    if (!limiter.tryAcquire()) {
      const refusal = refusals(request.headers["content-type"] ?? "");
      response.writeHead(refusal.status, refusal.headers);
      response.end(refusal.body);
      // A body left half read would stall the connection (Node drains only bodies nobody read).
      if (body?.complete === false) request.destroy();
      return;
    }
    let closed = false;
    response.once("close", () => {
      closed = true;
      limiter.release();
    });
    if (!pacer) handler(request, response, body?.chunks);
    else
      pacer.run(
        () => closed || handler(request, response, body?.chunks),
        () => request.socket,
      );
  };
  return (request, response) => {
    if (!options.takesOneMessage(request.url ?? "")) {
      admit(request, response);
      return;
    }
    // A response that closed before admission takes no slot (its "close" would never give it back).
    let gone = false;
    const onGone = (): void => {
      gone = true;
    };
    response.once("close", onGone);
    void readBody(request, options.maxBodyBytes).then((body) => {
      response.off("close", onGone);
      if (gone) return;
      if (body !== undefined) admit(request, response, body);
      // The request failed while its body was read: there is no call to answer.
      else response.destroy();
    });
  };
}

/** A request body read before admission: all of it, or its first chunks then the rest as it comes. */
interface ReadBody {
  readonly chunks: AsyncIterable<Uint8Array>;
  /** The chunks read before admission (all of them when `complete`). */
  readonly read: readonly Uint8Array[];
  readonly complete: boolean;
}

/** Whether a request's content type carries JSON messages (Connect, gRPC-Web). */
function isJson(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/(?:json|connect\+json|grpc-web\+json)\b/i.test(contentType);
}

/**
 * Reads a request's body, up to `maxBytes`: the chunks read, or, for a longer body, those chunks
 * followed by the rest of the request as it comes; undefined when the request fails meanwhile.
 */
async function readBody(request: AsyncIterable<unknown>, maxBytes: number): Promise<ReadBody | undefined> {
  const iterator = request[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done === true) return { chunks: createAsyncIterable(chunks), read: chunks, complete: true };
      chunks.push(next.value);
      length += next.value.byteLength;
      if (length > maxBytes) return { chunks: readThen(chunks, iterator), read: chunks, complete: false };
    }
  } catch {
    return undefined;
  }
}

/** The chunks read already, then the rest of the iterator's. */
async function* readThen(chunks: readonly Uint8Array[], rest: AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    yield* chunks;
    for (let next = await rest.next(); next.done !== true; next = await rest.next()) yield next.value;
  } finally {
    // A reader that stops early (at its own limit) ends the request's reading, as it would have.
    await rest.return?.();
  }
}

function prepareRefusals(error: ConnectError): (contentType: string) => PreparedResponse {
  const trailer: Record<string, string> = {};
  setTrailerStatus(new Headers(), error).forEach((value, key) => (trailer[key] = value));
  const empty = new Uint8Array(0);
  const grpc = { status: 200, headers: { "content-type": "application/grpc", ...trailer }, body: empty };
  const grpcWeb = { status: 200, headers: { "content-type": "application/grpc-web+proto", ...trailer }, body: empty };
  const endStream = new TextEncoder().encode(JSON.stringify(endStreamToJson(new Headers(), error, undefined)));
  const connectStream = (contentType: string): PreparedResponse => ({
    status: 200,
    headers: { "content-type": contentType },
    body: encodeEnvelope(endStreamFlag, endStream),
  });
  const connectStreamJson = connectStream("application/connect+json");
  const connectStreamProto = connectStream("application/connect+proto");
  const connectUnary = {
    status: codeToHttpStatus(error.code),
    headers: { "content-type": "application/json" },
    body: errorToJsonBytes(error, undefined),
  };
  return (contentType) => {
    if (contentType.startsWith("application/grpc-web")) return grpcWeb;
    if (contentType.startsWith("application/grpc")) return grpc;
    if (contentType.startsWith("application/connect+json")) return connectStreamJson;
    if (contentType.startsWith("application/connect+")) return connectStreamProto;
    return connectUnary;
  };
}
