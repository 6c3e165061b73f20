import type { DescMethod } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  encodeEnvelope,
  transformSplitEnvelope,
  type Compression,
  type UniversalHandler,
  type UniversalServerRequest,
} from "@connectrpc/connect/protocol";
import { pino } from "pino";
import { decodeFailureReason } from "../codec/decode-failure.js";
import { fromBinaryFast } from "../codec/fast-binary-decode.js";
import { invalidRequest } from "../errors/tool-runtime-error.js";
import { badFrameFlagsMessage } from "./frame-flags.js";
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
 * thus decoded twice; compressed ones (`compressions`: what the router accepts) are decompressed
 * for the check too, and one that does not decompress is handed on for connect-node to refuse.
 * Call after every service is added to `router`.
 */
export function checkRequests(router: ConnectRouter, readMaxBytes: number, compressions: readonly Compression[]): void {
  // The compression a request names, undefined for none; null for one the router does not accept
  // (it refuses the request itself).
  const compressionOf = (name: string | null): Compression | undefined | null =>
    name === null || name === "identity"
      ? undefined
      : (compressions.find((compression) => compression.name === name) ?? null);
  const handlers = router.handlers;
  for (let index = 0; index < handlers.length; index += 1) {
    const handler = handlers[index] as UniversalHandler;
    const checked = (request: UniversalServerRequest): ReturnType<UniversalHandler> => {
      const body = request.body;
      if (!isByteStream(body)) return handler(request);
      const contentType = request.header.get("content-type") ?? "";
      const framed = /^application\/(grpc|grpc-web|connect)(\+|;|$)/.test(contentType);
      const binary = !/^application\/(grpc-web\+json|grpc\+json|connect\+json|json)/.test(contentType);
      if (framed) {
        // Connect streaming names its compression in connect-content-encoding, gRPC and gRPC-Web in grpc-encoding.
        const compression = compressionOf(
          request.header.get(
            contentType.startsWith("application/connect") ? "connect-content-encoding" : "grpc-encoding",
          ),
        );
        return handler({ ...request, body: checkFrames(body, handler.method, binary, readMaxBytes, compression) });
      }
      if (contentType.startsWith("application/proto")) {
        const compression = compressionOf(request.header.get("content-encoding"));
        if (compression === null) return handler(request);
        return handler({ ...request, body: checkUnary(body, handler.method, readMaxBytes, compression) });
      }
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
  compression: Compression | undefined | null,
): AsyncGenerator<Uint8Array> {
  for await (const { flags, data } of transformSplitEnvelope(readMaxBytes)(body)) {
    if ((flags & ~compressedFlag) !== 0) {
      throw toConnectError(invalidRequest(badFrameFlagsMessage(flags)), silent);
    }
    if (binary && flags === 0) checkMessage(method, data);
    else if (binary && compression) await checkCompressedMessage(method, data, compression, readMaxBytes);
    yield encodeEnvelope(flags, data);
  }
}

async function* checkUnary(
  body: AsyncIterable<Uint8Array>,
  method: DescMethod,
  readMaxBytes: number,
  compression: Compression | undefined,
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
  if (length <= readMaxBytes) {
    if (compression) await checkCompressedMessage(method, message, compression, readMaxBytes);
    else checkMessage(method, message);
  }
  yield message;
}

/**
 * Checks a compressed message once decompressed. One that does not decompress (or is too large
 * once decompressed) is left alone: connect-node decompresses it again and refuses it with its
 * own precise error.
 */
async function checkCompressedMessage(
  method: DescMethod,
  bytes: Uint8Array,
  compression: Compression,
  readMaxBytes: number,
): Promise<void> {
  let message: Uint8Array;
  try {
    message = await compression.decompress(bytes, readMaxBytes);
  } catch {
    return;
  }
  checkMessage(method, message);
}

function checkMessage(method: DescMethod, bytes: Uint8Array): void {
  try {
    // The gRPC port's decoder: the same refusals, with protobuf-es's own messages, at a fraction of the cost.
    fromBinaryFast(method.input, bytes, { recursionLimit: protobufRecursionLimit, readUnknownFields: false });
  } catch (error) {
    throw toConnectError(
      invalidRequest(`request is not a valid ${method.input.typeName} message: ${decodeFailureReason(error)}`),
      silent,
    );
  }
}
