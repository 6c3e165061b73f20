import type { DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type {
  Server,
  ServerDuplexStream,
  ServerUnaryCall,
  ServerWritableStream,
  ServiceDefinition,
  StatusObject,
  UntypedServiceImplementation,
  sendUnaryData,
} from "@grpc/grpc-js";
import type { Logger } from "pino";
import { peerCertificateKey } from "./call-context.js";
import type { CallLimiter } from "./call-limiter.js";
import { sendPaced, type CallPacer } from "./call-pacer.js";
import { grpcFramePrefixBytes, toBinaryFast, toFramedBinaryFast } from "../codec/fast-binary.js";
import { decodeFailureReason } from "../codec/decode-failure.js";
import { fromBinaryFast } from "../codec/fast-binary-decode.js";
import { ChurnSet } from "../collections/churn-set.js";
import { frameWriterFor } from "./grpc-frame-writer.js";
import { GrpcHandlerContext, newContextValues } from "./grpc-handler-context.js";
import { toGrpcStatus } from "./grpc-status.js";
import { createBatchSender, type BatchSender, type StreamingCall } from "./grpc-stream-sender.js";
import { SettledStream, startOf, type StartedStream } from "./message-batches.js";
import { protobufRecursionLimit } from "./protobuf-limits.js";
import { readMessages } from "./read-messages.js";
import { toConnectError } from "./to-connect-error.js";

/** The reason a finished call's context aborts with, shared: building an error per call costs. */
const callEnded = new ConnectError("the call ended", Code.Canceled);
type UnaryMethod = (request: unknown, context: HandlerContext) => unknown;
type StreamingMethod = (request: unknown, context: HandlerContext) => AsyncIterable<unknown>;

/** Options of {@link addServiceToGrpcServer}. */
export interface GrpcAdapterOptions {
  /** Receives the causes of INTERNAL errors. */
  readonly logger: Logger;
  /** Aborted when the server shuts down; aborts every call's signal. */
  readonly shutdownSignal?: AbortSignal;
  /** The server-wide bound on calls in flight; a call beyond it is refused before it is decoded. */
  readonly limiter?: CallLimiter;
  /** Starts admitted calls with a bounded amount of work per turn of the event loop; at once when absent. */
  readonly pacer?: CallPacer;
  /**
   * Whether the port serves TLS, so that a call may carry a client certificate. grpc-js finds it
   * through the session's socket proxy, about a microsecond and a half a call: a plaintext port
   * skips that.
   */
  readonly tls?: boolean;
}

/**
 * Mounts a Connect-shaped service implementation on a grpc-js server. Requests are decoded here,
 * not by grpc-js (with fromBinaryFast), so that a malformed message is INVALID_ARGUMENT with a ToolError;
 * responses are encoded with toBinaryFast; a client's cancellation or deadline aborts the handler's signal; and
 * errors leave with the ToolError in `grpc-status-details-bin`. Unary, server-streaming and
 * bidirectional methods are supported (no client-streaming method exists).
 */
export function addServiceToGrpcServer<S extends DescService>(
  server: Server,
  service: S,
  implementation: ServiceImpl<S>,
  options: GrpcAdapterOptions,
): void {
  const limiter = options.limiter;
  const refusal = limiter ? toGrpcStatus(limiter.refusal) : undefined;
  // Takes a slot for the call, or refuses it; the slot is given back when the call settles.
  const admit = (refuse: (status: Partial<StatusObject>) => void): (() => void) | undefined => {
    if (!limiter || !refusal) return () => undefined;
    if (limiter.tryAcquire()) return () => limiter.release();
    refuse({ ...refusal, ...(refusal.metadata ? { metadata: refusal.metadata.clone() } : {}) });
    return undefined;
  };
  // An admitted call starts when the pacer lets it; one whose client left meanwhile gives its slot back.
  const start = (
    call: { readonly cancelled: boolean; getPeer(): string },
    release: () => void,
    serve: () => void,
  ): void => {
    const begin = (): void => {
      if (call.cancelled) release();
      else serve();
    };
    // A call that must wait queues behind its own connection's (its peer's address and port).
    if (options.pacer) options.pacer.run(begin, () => call.getPeer());
    else begin();
  };
  // The calls going on, so that shutdown aborts their signals (one listener for all of them).
  const liveContexts = new ChurnSet<GrpcHandlerContext>();
  options.shutdownSignal?.addEventListener(
    "abort",
    () => {
      for (const context of liveContexts) context.abort(options.shutdownSignal?.reason);
    },
    { once: true },
  );
  const definition: Record<string, ServiceDefinition[string]> = {};
  const handlers: UntypedServiceImplementation = {};
  for (const method of service.methods) {
    const impl = (implementation as unknown as Record<string, UnaryMethod | StreamingMethod>)[method.localName];
    if (!impl) continue;
    const path = `/${service.typeName}/${method.name}`;
    const bidi = method.methodKind === "bidi_streaming";
    const encodeResponse = (message: unknown): Buffer => encode(method.output, message);
    const streaming = method.methodKind === "server_streaming" || bidi;
    definition[method.name] = {
      path,
      requestStream: bidi,
      responseStream: streaming,
      originalName: method.localName,
      requestSerialize: (bytes: Buffer) => bytes,
      requestDeserialize: (bytes: Buffer) => bytes,
      responseSerialize: (bytes: Buffer) => bytes,
      responseDeserialize: (bytes: Buffer) => bytes,
    };
    const context = (
      call: ServerUnaryCall<Buffer, Buffer> | ServerWritableStream<Buffer, Buffer> | ServerDuplexStream<Buffer, Buffer>,
    ): GrpcHandlerContext => {
      const values = newContextValues();
      const certificate = options.tls ? call.getAuthContext().sslPeerCertificate : undefined;
      if (certificate) values.set(peerCertificateKey, certificate);
      const deadline = call.getDeadline();
      const context = new GrpcHandlerContext({
        service,
        method,
        url: path,
        metadata: call.metadata,
        deadlineMs: deadline instanceof Date ? deadline.getTime() : deadline,
        values,
      });
      if (options.shutdownSignal?.aborted) context.abort(options.shutdownSignal.reason);
      return context;
    };
    // A call that goes on past the turn it started in: its client's cancellation, its deadline and
    // the server's shutdown reach it from now on. Nothing can happen to a call within that turn, so
    // one answered in it (a run that ended inside start) needs neither a listener nor a place in
    // liveContexts, about a microsecond of EventEmitter and Set work per call.
    const goesOn = (
      call: ServerUnaryCall<Buffer, Buffer> | ServerWritableStream<Buffer, Buffer> | ServerDuplexStream<Buffer, Buffer>,
      context: GrpcHandlerContext,
    ): void => {
      // grpc-js emits "cancelled" when the client cancels, the deadline passes or the connection
      // drops, and also after some calls that ended normally: only a call still going is cancelled.
      (call as NodeJS.EventEmitter).once("cancelled", () => context.cancelledByPeer());
      liveContexts.add(context);
    };
    const ended = (context: GrpcHandlerContext): void => {
      liveContexts.delete(context);
      // Ends the signal, as Connect's context does when a call completes; listeners left on it go.
      context.abort(callEnded);
    };
    handlers[method.name] = streaming
      ? (call: ServerWritableStream<Buffer, Buffer> | ServerDuplexStream<Buffer, Buffer>) => {
          const release = admit((status) => call.emit("error", status));
          if (!release) return;
          start(call, release, () => {
            const requests = bidi ? decodeAll(method.input, call as ServerDuplexStream<Buffer, Buffer>) : undefined;
            const callContext = context(call);
            const serving = serveStream(
              call,
              method,
              encodeResponse,
              impl as StreamingMethod,
              callContext,
              options,
              requests,
            );
            if (serving) {
              goesOn(call, callContext);
              void serving.finally(() => {
                ended(callContext);
                release();
              });
            } else {
              ended(callContext);
              release();
            }
          });
        }
      : (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
          const release = admit((status) => callback(status));
          if (!release) return;
          start(call, release, () => {
            const callContext = context(call);
            const serving = serveUnary(call, callback, method, impl as UnaryMethod, callContext, options);
            if (serving) {
              goesOn(call, callContext);
              void serving.finally(() => {
                ended(callContext);
                release();
              });
            } else {
              ended(callContext);
              release();
            }
          });
        };
  }
  server.addService(definition as ServiceDefinition, handlers);
}

/**
 * Answers a unary call: at once (returning undefined) when the implementation answers without a
 * promise and the pacer lets the response go now; otherwise returns a promise that settles once
 * the response or the error was sent. Never rejects.
 */
function serveUnary(
  call: ServerUnaryCall<Buffer, Buffer>,
  callback: sendUnaryData<Buffer>,
  method: DescMethod,
  impl: UnaryMethod,
  context: GrpcHandlerContext,
  options: GrpcAdapterOptions,
): Promise<void> | undefined {
  let answer: unknown;
  try {
    answer = impl(decode(method.input, call.request), context);
  } catch (error) {
    fail(callback, context, options, error);
    return undefined;
  }
  return answer instanceof Promise
    ? answer.then(
        (response: unknown) => respond(call, callback, method, context, options, response),
        (error: unknown) => fail(callback, context, options, error),
      )
    : respond(call, callback, method, context, options, answer);
}

/** Sends a unary call's response, when the pacer lets it (see sendPaced). Never throws. */
function respond(
  call: ServerUnaryCall<Buffer, Buffer>,
  callback: sendUnaryData<Buffer>,
  method: DescMethod,
  context: GrpcHandlerContext,
  options: GrpcAdapterOptions,
  response: unknown,
): Promise<void> | undefined {
  try {
    const frame = toFramedBinaryFast(method.output, [response as object]);
    context.markAnswered();
    return sendPaced(options.pacer, () => sendUnaryFrame(call, callback, frame));
  } catch (error) {
    fail(callback, context, options, error);
    return undefined;
  }
}

/**
 * Sends a unary call's response, `frame` (the message in its gRPC frame), and ends the call with
 * OK: straight to the call's HTTP/2 stream when grpc-js allows (see grpc-frame-writer.ts), in the
 * order grpc-js would (headers, the message, the status in trailers), without grpc-js's copy of
 * the message into a frame of its own and its wait for the write before the status. Through
 * grpc-js otherwise, and for a response over the size limit, which grpc-js refuses itself
 * (RESOURCE_EXHAUSTED).
 */
function sendUnaryFrame(call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>, frame: Buffer): void {
  const writer = frameWriterFor(call as unknown as ServerWritableStream<Buffer, Buffer>);
  // The size first: grpc-js refuses a message over the limit before it sends headers (trailers-only).
  if (writer?.fits(frame.length - grpcFramePrefixBytes) && writer.ready()) {
    writer.write(frame, 1);
    writer.endOk();
  } else {
    callback(null, frame.subarray(grpcFramePrefixBytes));
  }
}

/** Ends a unary call with the status of what it threw. */
function fail(
  callback: sendUnaryData<Buffer>,
  context: GrpcHandlerContext,
  options: GrpcAdapterOptions,
  error: unknown,
): void {
  context.markAnswered();
  callback(toGrpcStatus(toConnectError(error, options.logger)));
}

/**
 * Serves a streaming call: returns undefined when it is over at once (a settled stream written and
 * ended in this turn, or a call that failed before its stream began), otherwise a promise that
 * settles when the call is over. Never rejects.
 */
function serveStream(
  call: StreamingCall,
  method: DescMethod,
  encodeResponse: (response: unknown) => Buffer,
  impl: StreamingMethod,
  context: GrpcHandlerContext,
  options: GrpcAdapterOptions,
  requests?: AsyncIterable<unknown>,
): Promise<void> | undefined {
  let started: StartedStream<unknown>;
  try {
    // A bidirectional method takes the stream of requests; a server-streaming one, its one request.
    const input = requests ?? decode(method.input, (call as ServerWritableStream<Buffer, Buffer>).request);
    started = startOf(impl(input, context));
  } catch (error) {
    if (!call.cancelled) endWithError(call, context, options, error);
    return undefined;
  }
  // The messages ready together come as one batch (see message-batches.ts): one step of the
  // generators behind it for all of them, and one write.
  const send = createBatchSender(call, encodeResponse, options.pacer, (messages, untilBytes) =>
    toFramedBinaryFast(method.output, messages as readonly object[], untilBytes),
  );
  return started instanceof SettledStream
    ? serveSettled(call, started, send, context, options)
    : serveBatches(call, started.batches, send, context, options);
}

/**
 * Writes a settled stream's one batch and ends the call as its `end` says; its observers hear the
 * final code. Without a promise when the write and the end need no wait.
 */
function serveSettled(
  call: StreamingCall,
  settled: SettledStream<unknown>,
  send: BatchSender,
  context: GrpcHandlerContext,
  options: GrpcAdapterOptions,
): Promise<void> | undefined {
  let sending: boolean | Promise<boolean>;
  try {
    sending = send(settled.batch);
  } catch (error) {
    failSettled(call, settled, context, options, error);
    return undefined;
  }
  if (typeof sending === "boolean") return endSettled(call, settled, send, sending, context, options);
  return sending.then(
    (sent) => endSettled(call, settled, send, sent, context, options),
    (error: unknown) => failSettled(call, settled, context, options, error),
  );
}

function endSettled(
  call: StreamingCall,
  settled: SettledStream<unknown>,
  send: BatchSender,
  sent: boolean,
  context: GrpcHandlerContext,
  options: GrpcAdapterOptions,
): Promise<void> | undefined {
  // The client left before the batch was sent: nothing more goes out.
  if (!sent) {
    settled.onEnd?.(Code.Canceled);
    return undefined;
  }
  let error: unknown;
  try {
    error = settled.end();
  } catch (thrown) {
    error = thrown;
  }
  if (error !== undefined) {
    failSettled(call, settled, context, options, error);
    return undefined;
  }
  settled.onEnd?.(0);
  context.markAnswered();
  return sendPaced(options.pacer, send.end);
}

function failSettled(
  call: StreamingCall,
  settled: SettledStream<unknown>,
  context: GrpcHandlerContext,
  options: GrpcAdapterOptions,
  error: unknown,
): void {
  const connectError = toConnectError(error, options.logger);
  settled.onEnd?.(connectError.code);
  if (call.cancelled) return;
  context.markAnswered();
  call.emit("error", toGrpcStatus(connectError));
}

/** Sends a stream's batches as they come, then ends the call. Never rejects. */
async function serveBatches(
  call: StreamingCall,
  iterator: AsyncIterator<readonly unknown[]>,
  send: BatchSender,
  context: GrpcHandlerContext,
  options: GrpcAdapterOptions,
): Promise<void> {
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done) break;
      if (!(await send(next.value))) return;
    }
    context.markAnswered();
    const ending = sendPaced(options.pacer, send.end);
    if (ending) await ending;
  } catch (error) {
    if (call.cancelled) return;
    endWithError(call, context, options, error);
  } finally {
    // Stops the generator when the client left early; its own finally blocks clean up.
    await iterator.return?.();
  }
}

/** Ends a streaming call with the status of `error`. */
function endWithError(
  call: StreamingCall,
  context: GrpcHandlerContext,
  options: GrpcAdapterOptions,
  error: unknown,
): void {
  context.markAnswered();
  call.emit("error", toGrpcStatus(toConnectError(error, options.logger)));
}

/** The decoded messages of a client stream; a malformed one ends it with INVALID_ARGUMENT. */
async function* decodeAll(schema: DescMessage, call: ServerDuplexStream<Buffer, Buffer>): AsyncGenerator<unknown> {
  for await (const message of readMessages(call)) yield decode(schema, message);
}

function decode(schema: DescMessage, bytes: Buffer): unknown {
  try {
    return fromBinaryFast(schema, bytes, { recursionLimit: protobufRecursionLimit });
  } catch (error) {
    throw new ConnectError(
      `request is not a valid ${schema.typeName} message: ${decodeFailureReason(error)}`,
      Code.InvalidArgument,
    );
  }
}

function encode(schema: DescMessage, message: unknown): Buffer {
  // The handlers return messages or the plain objects `create` takes: both encode alike.
  const bytes = toBinaryFast(schema, message as object);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
