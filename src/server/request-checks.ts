import type { DescMethod } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  encodeEnvelope,
  transformSplitEnvelope,
  type UniversalHandler,
  type UniversalServerRequest,
} from "@connectrpc/connect/protocol";
import { pino } from "pino";
import { fromBinaryFast } from "../codec/fast-binary-decode.js";
import { invalidRequest } from "../errors/tool-runtime-error.js";
import { protobufRecursionLimit } from "./protobuf-limits.js";
import { toConnectError } from "./to-connect-error.js";

// The client errors raised here are the client's: nothing reaches the log.
const silent = pino({ enabled: false });
const compressedFlag = 0x01;

/**
 * Checks the requests of the HTTP port before connect-node parses them, so that bad input is
 * INVALID_ARGUMENT with a ToolError on every protocol. connect-node answers INTERNAL ("parse
 * binary") to protobuf it cannot decode, and raises that error inside its own parsing, where no
 * interceptor sees it; and it takes any frame flags. So each handler's request body is read here
 * first: a frame (gRPC, gRPC-Web, Connect streaming) whose flags are other than 0x00 or 0x01
 * (compressed) is refused, and an uncompressed binary message that does not decode is refused with
 * the same message as on the gRPC port; what passes is handed on unchanged. Binary messages are
 * thus decoded twice. Call after every service is added to `router`.
 */
export function checkRequests(router: ConnectRouter, readMaxBytes: number): void {
  const handlers = router.handlers;
  for (let index = 0; index < handlers.length; index += 1) {
    const handler = handlers[index] as UniversalHandler;
    const checked = (request: UniversalServerRequest): ReturnType<UniversalHandler> => {
      const body = request.body;
      if (!isByteStream(body)) return handler(request);
      const contentType = request.header.get("content-type") ?? "";
      const framed = /^application\/(grpc|grpc-web|connect)(\+|;|$)/.test(contentType);
      const binary = !/^application\/(grpc-web\+json|grpc\+json|connect\+json|json)/.test(contentType);
      if (framed) return handler({ ...request, body: checkFrames(body, handler.method, binary, readMaxBytes) });
      if (contentType.startsWith("application/proto"))
        return handler({ ...request, body: checkUnary(body, handler.method, readMaxBytes) });
      return handler(request);
    };
    handlers[index] = Object.assign(checked, {
      protocolNames: handler.protocolNames,
      service: handler.service,
      method: handler.method,
      requestPath: handler.requestPath,
      allowedMethods: handler.allowedMethods,
      supportedContentType: handler.supportedContentType,
    });
  }
}

function isByteStream(body: unknown): body is AsyncIterable<Uint8Array> {
  return typeof body === "object" && body !== null && Symbol.asyncIterator in body;
}

async function* checkFrames(
  body: AsyncIterable<Uint8Array>,
  method: DescMethod,
  binary: boolean,
  readMaxBytes: number,
): AsyncGenerator<Uint8Array> {
  for await (const { flags, data } of transformSplitEnvelope(readMaxBytes)(body)) {
    if ((flags & ~compressedFlag) !== 0) {
      throw toConnectError(
        invalidRequest(
          `request frame has flags 0x${flags.toString(16).padStart(2, "0")}: a client sends only 0x00 (uncompressed) or 0x01 (compressed)`,
        ),
        silent,
      );
    }
    if (binary && flags === 0) checkMessage(method, data);
    yield encodeEnvelope(flags, data);
  }
}

async function* checkUnary(
  body: AsyncIterable<Uint8Array>,
  method: DescMethod,
  readMaxBytes: number,
): AsyncGenerator<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    length += chunk.byteLength;
    // Too large: connect-node refuses it with its own message.
    if (length > readMaxBytes) break;
  }
  const message = Buffer.concat(chunks);
  if (length <= readMaxBytes) checkMessage(method, message);
  yield message;
}

function checkMessage(method: DescMethod, bytes: Uint8Array): void {
  try {
    // The gRPC port's decoder: the same refusals, with protobuf-es's own messages, at a fraction of the cost.
    fromBinaryFast(method.input, bytes, { recursionLimit: protobufRecursionLimit, readUnknownFields: false });
  } catch (error) {
    const reason = error instanceof RangeError ? "it is nested too deeply" : (error as Error).message;
    throw toConnectError(invalidRequest(`request is not a valid ${method.input.typeName} message: ${reason}`), silent);
  }
}
