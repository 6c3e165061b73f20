import { create, fromBinary, toBinary, type DescService } from "@bufbuild/protobuf";
import { ConnectError, type CallOptions, type Client } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { Client as GrpcClient, credentials, Metadata, type ChannelCredentials, type ServiceError } from "@grpc/grpc-js";

/**
 * A real `@grpc/grpc-js` client for a protobuf-es service, shaped like a Connect client so the same
 * tests run against every client stack. Errors become ConnectErrors decoded from the trailers,
 * `grpc-status-details-bin` included, exactly as a gRPC client in any language sees them.
 */
export function createGrpcJsClient<S extends DescService>(
  service: S,
  address: string,
  channelCredentials: ChannelCredentials = credentials.createInsecure(),
): {
  client: Client<S>;
  close: () => void;
} {
  const grpc = new GrpcClient(address, channelCredentials);
  const client: Record<string, unknown> = {};
  for (const method of service.methods) {
    const path = `/${service.typeName}/${method.name}`;
    const serialize = (message: unknown): Buffer =>
      Buffer.from(toBinary(method.input, create(method.input, message as never)));
    const deserialize = (bytes: Buffer): unknown => fromBinary(method.output, bytes);
    client[method.localName] =
      method.methodKind === "server_streaming"
        ? (request: unknown, options: CallOptions = {}) =>
            streamCall(grpc, path, serialize, deserialize, request, options)
        : (request: unknown, options: CallOptions = {}) =>
            new Promise((resolve, reject) => {
              const call = grpc.makeUnaryRequest(
                path,
                serialize,
                deserialize,
                request,
                toMetadata(options),
                deadlineOf(options),
                (error, response) => (error ? reject(toConnectError(error)) : resolve(response)),
              );
              options.signal?.addEventListener("abort", () => call.cancel(), { once: true });
            });
  }
  return { client: client as Client<S>, close: () => grpc.close() };
}

async function* streamCall(
  grpc: GrpcClient,
  path: string,
  serialize: (message: unknown) => Buffer,
  deserialize: (bytes: Buffer) => unknown,
  request: unknown,
  options: CallOptions,
): AsyncGenerator<unknown> {
  const call = grpc.makeServerStreamRequest(
    path,
    serialize,
    deserialize,
    request,
    toMetadata(options),
    deadlineOf(options),
  );
  const onAbort = (): void => call.cancel();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const message of call) yield message;
  } catch (error) {
    throw toConnectError(error as ServiceError);
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    call.cancel();
  }
}

function toMetadata(options: CallOptions): Metadata {
  const metadata = new Metadata();
  new Headers(options.headers as ConstructorParameters<typeof Headers>[0]).forEach((value, key) =>
    metadata.set(key, value),
  );
  return metadata;
}

function deadlineOf(options: CallOptions): { deadline?: Date } {
  return options.timeoutMs === undefined ? {} : { deadline: new Date(Date.now() + options.timeoutMs) };
}

function toConnectError(error: ServiceError): ConnectError {
  const headers = new Headers();
  for (const [key, value] of Object.entries(error.metadata?.getMap() ?? {})) {
    headers.set(key, typeof value === "string" ? value : Buffer.from(value).toString("base64"));
  }
  headers.set("grpc-status", String(error.code));
  headers.set("grpc-message", encodeURIComponent(error.details ?? ""));
  return findTrailerError(headers) ?? new ConnectError(error.details ?? "", error.code as number);
}
