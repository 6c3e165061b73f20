import type { ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  endStreamFlag,
  endStreamToJson,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { CallLimiter } from "./call-limiter.js";
import type { CallPacer } from "./call-pacer.js";
import type { NodeRequestHandler } from "./http-listener.js";

/** A complete HTTP response, prepared once. */
interface PreparedResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Uint8Array;
}

/**
 * Puts the server-wide bound on calls in flight in front of the RPC handler of the HTTP port. A
 * call beyond it is answered at once, before its body is read or connect-node sees it, with the
 * limiter's RESOURCE_EXHAUSTED in the form its protocol expects (content type decides): a gRPC or
 * gRPC-Web trailers-only response, a Connect end-of-stream message, or a Connect unary error.
 * An admitted call reaches `handler` when `pacer` lets it (at once without one); one whose client
 * left meanwhile never does.
 */
export function withCallLimit(
  handler: NodeRequestHandler,
  limiter: CallLimiter,
  pacer?: CallPacer,
): NodeRequestHandler {
  const refusals = prepareRefusals(limiter.refusal);
  return (request, response) => {
    if (!limiter.tryAcquire()) {
      const refusal = refusals(request.headers["content-type"] ?? "");
      response.writeHead(refusal.status, refusal.headers);
      response.end(refusal.body);
      return;
    }
    let closed = false;
    response.once("close", () => {
      closed = true;
      limiter.release();
    });
    if (!pacer) handler(request, response);
    else
      pacer.run(
        () => closed || handler(request, response),
        () => request.socket,
      );
  };
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
