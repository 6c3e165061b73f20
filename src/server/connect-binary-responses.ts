import type { DescMessage } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { preEncodedMessage, toBinaryFast } from "../codec/fast-binary.js";

/**
 * Content types whose messages are protobuf binary: Connect (`application/proto`,
 * `application/connect+proto`), gRPC and gRPC-Web (bare or `+proto`). A request without one (a
 * Connect GET, whose encoding is in its query) is left to connect-node.
 */
const binaryContentType = /^application\/(?:proto|connect\+proto|grpc(?:-web)?(?:\+proto)?)(?:;|$)/i;

/**
 * Makes the Connect port send responses encoded by {@link toBinaryFast} when the call uses the
 * binary codec: connect-node encodes with protobuf-es, which costs several times more for our
 * responses (Structs above all). The response message is replaced by one that protobuf-es writes
 * as exactly those bytes (see preEncodedMessage). JSON calls are untouched: that codec drops what
 * the replacement carries.
 */
export function binaryResponsesInterceptor(): Interceptor {
  return (next) => async (request) => {
    const response = await next(request);
    if (!binaryContentType.test(request.header.get("content-type") ?? "")) return response;
    const schema = request.method.output;
    if (!response.stream) {
      return { ...response, message: preEncode(schema, response.message) };
    }
    return { ...response, message: preEncodeEach(schema, response.message) };
  };
}

function preEncode(schema: DescMessage, message: object): never {
  return preEncodedMessage(schema, toBinaryFast(schema, message)) as never;
}

async function* preEncodeEach(schema: DescMessage, messages: AsyncIterable<object>): AsyncGenerator<never> {
  for await (const message of messages) yield preEncode(schema, message);
}
