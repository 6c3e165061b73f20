import {
  ServerInterceptingCall,
  type Metadata,
  status as Status,
  type ServerInterceptingCallInterface,
  type StatusObject,
} from "@grpc/grpc-js";
import type { Writable } from "node:stream";
import { grpcFramePrefixBytes as prefixBytes } from "../codec/fast-binary.js";
import { dateHeaders } from "./date-header.js";
import { UnaryRequestGuard } from "./incomplete-request-interceptor.js";

/**
 * grpc-js sends a stream's messages one at a time: each `call.write` is framed and handed to the
 * HTTP/2 stream on its own, and the next one waits in grpc-js's buffer until that write completes
 * (a native write and its completion, through five layers of callbacks, per message). It has no
 * public way to send several at once: its ServerWritableStream has no `_writev`, and whatever the
 * serializer returns is framed as one message. A RunTool stream sends six messages per run, which
 * made those writes the largest cost of the stream after encoding.
 *
 * A FrameWriter writes several length-prefixed messages to the call's HTTP/2 stream in one write,
 * doing what grpc-js's `sendMessage` does around each: the response headers first, the size limit,
 * channelz's count of messages sent, nothing once the call is over. It reaches the HTTP/2 stream
 * through grpc-js internals (ServerWritableStreamImpl.call → ServerInterceptingCall.nextCall… or
 * our own UnaryRequestGuard.call → BaseServerInterceptingCall.stream; checked against @grpc/grpc-js
 * 1.14), and exists only when that path is exactly as expected and no interceptor on it handles
 * messages or headers: otherwise
 * {@link frameWriterFor} returns undefined and the stream writes through `call.write` as before
 * (a test fails when grpc-js changes under it).
 */
export interface FrameWriter {
  /**
   * Whether messages may go straight to the HTTP/2 stream now: the response headers are sent and
   * nothing waits in grpc-js's own buffer (so they cannot overtake a message written through it).
   */
  ready(): boolean;
  /** Whether a message of `bytes` is within the call's limit (grpc-js refuses larger ones itself). */
  fits(bytes: number): boolean;
  /**
   * Writes `count` messages framed in `frames` (each with its 5-byte gRPC prefix, see
   * {@link framesOf}) in one write; does nothing once the call is over. Returns false when the
   * HTTP/2 stream's buffer is full: wait for {@link drained}.
   */
  write(frames: Buffer, count: number): boolean;
  /** Resolves when the HTTP/2 stream can take more, or when the call ends. */
  drained(): Promise<void>;
  /** Bytes waiting in the HTTP/2 stream's buffer (written, not yet taken by the HTTP/2 session). */
  readonly bufferedBytes: number;
  /**
   * Ends the call with OK through its interceptors, as grpc-js ends a unary call once its response
   * is written: the status goes in the trailers, after what was written.
   */
  endOk(): void;
  /**
   * Whether {@link endOk} may end a stream now instead of `call.end()`: the call goes on, its
   * headers went (an empty stream's end is grpc-js's trailers-only answer) and nothing waits in
   * grpc-js's own buffer (what did went to the HTTP/2 stream, ahead of the end).
   */
  endsAtOnce(): boolean;
}

/** The parts of grpc-js's BaseServerInterceptingCall the writer uses (internal to grpc-js). */
interface BaseCall {
  readonly stream: Writable & { readonly closed: boolean };
  readonly cancelled: boolean;
  readonly metadataSent: boolean;
  readonly maxSendMessageSize: number;
  readonly callEventTracker?: { addMessageSent(): void } | null;
}

/** The call under a ServerWritableStream: the first of its interceptors (internal to grpc-js). */
interface StatusSender {
  sendStatus(status: PartialStatus): void;
}

/** A status with its trailers' metadata optional, as grpc-js's calls take it. */
type PartialStatus = Pick<StatusObject, "code" | "details"> & { readonly metadata: Metadata | null };

/** A grpc-js server call as the handler receives it: a ServerWritableStream or ServerDuplexStream. */
type ServerCall = Writable & { readonly cancelled: boolean; sendMetadata(metadata: Metadata): void };

/**
 * The responder an interceptor gets when it sets no `sendMessage` or `sendMetadata` of its own: it
 * passes messages on, and the headers at once.
 */
const passThrough = responderOf(new ServerInterceptingCall({} as ServerInterceptingCallInterface));

/** A writer for `call`'s HTTP/2 stream, or undefined when grpc-js is not shaped as expected. */
export function frameWriterFor(call: ServerCall): FrameWriter | undefined {
  const base = baseCallOf(call);
  return base ? new DirectFrameWriter(call, base) : undefined;
}

/**
 * The FrameWriter of one call. A class: the object literal it replaced, five closures and a getter
 * made for every stream, cost about a microsecond per call.
 */
class DirectFrameWriter implements FrameWriter {
  readonly #call: ServerCall;
  readonly #base: BaseCall;

  constructor(call: ServerCall, base: BaseCall) {
    this.#call = call;
    this.#base = base;
  }

  #live(): boolean {
    const stream = this.#base.stream;
    return !this.#base.cancelled && !stream.destroyed && !stream.closed && !stream.writableEnded;
  }

  ready(): boolean {
    if (this.#call.writableLength > 0 || !this.#live()) return false;
    // grpc-js sends the headers before the first message; interceptors see them on the way.
    if (!this.#base.metadataSent) this.#call.sendMetadata(dateHeaders());
    return this.#base.metadataSent;
  }

  get bufferedBytes(): number {
    return this.#base.stream.writableLength;
  }

  fits(bytes: number): boolean {
    const limit = this.#base.maxSendMessageSize;
    return limit === -1 || bytes <= limit;
  }

  write(frames: Buffer, count: number): boolean {
    if (!this.#live()) return true;
    const tracker = this.#base.callEventTracker;
    // As grpc-js does, a message counts as sent once its write completes; a failed write breaks
    // the stream, which grpc-js reports as the call's cancellation.
    return this.#base.stream.write(frames, (error) => {
      if (!error && tracker) for (let i = 0; i < count; i++) tracker.addMessageSent();
    });
  }

  endsAtOnce(): boolean {
    return this.#call.writableLength === 0 && this.#base.metadataSent && this.#live();
  }

  endOk(): void {
    // The status grpc-js ends an answered unary call with, a new one each time as grpc-js's: an
    // interceptor may change what it is given.
    (this.#call as unknown as { readonly call: StatusSender }).call.sendStatus({
      code: Status.OK,
      details: "OK",
      metadata: null,
    });
  }

  drained(): Promise<void> {
    const stream = this.#base.stream;
    const call = this.#call;
    return new Promise((resolve) => {
      const done = (): void => {
        stream.off("drain", done);
        stream.off("close", done);
        call.off("cancelled", done);
        resolve();
      };
      stream.once("drain", done);
      stream.once("close", done);
      call.once("cancelled", done);
    });
  }
}

/** `messages` as consecutive gRPC frames in one buffer; `totalBytes` is the sum of their lengths. */
export function framesOf(messages: readonly Uint8Array[], totalBytes: number): Buffer {
  const out = Buffer.allocUnsafe(totalBytes + prefixBytes * messages.length);
  let at = 0;
  for (const message of messages) {
    // Byte 0: not compressed (grpc-js compresses no response either); then the length, big-endian.
    out[at] = 0;
    out.writeUInt32BE(message.byteLength, at + 1);
    out.set(message, at + prefixBytes);
    at += prefixBytes + message.byteLength;
  }
  return out;
}

/** The messages framed in `frames`, as views of it (nothing is copied). */
export function messagesOfFrames(frames: Buffer): Buffer[] {
  const messages: Buffer[] = [];
  for (let at = 0; at < frames.length;) {
    const length = frames.readUInt32BE(at + 1);
    messages.push(frames.subarray(at + prefixBytes, at + prefixBytes + length));
    at += prefixBytes + length;
  }
  return messages;
}

/**
 * The BaseServerInterceptingCall under `call`'s interceptors, when each of them passes messages and
 * headers on untouched; undefined otherwise.
 */
function baseCallOf(call: ServerCall): BaseCall | undefined {
  if (!passThrough?.sendMessage || !passThrough.sendMetadata) return undefined;
  let layer: unknown = (call as unknown as { call?: unknown }).call;
  for (;;) {
    if (layer instanceof UnaryRequestGuard) layer = layer.call;
    else if (layer instanceof ServerInterceptingCall) {
      const responder = responderOf(layer);
      if (responder?.sendMessage !== passThrough.sendMessage || responder.sendMetadata !== passThrough.sendMetadata) {
        return undefined;
      }
      layer = (layer as unknown as { nextCall?: unknown }).nextCall;
    } else break;
  }
  return isBaseCall(layer) ? layer : undefined;
}

/** The functions a ServerInterceptingCall calls for its interceptor (internal to grpc-js). */
interface Responder {
  readonly sendMessage?: unknown;
  readonly sendMetadata?: unknown;
}

function responderOf(call: ServerInterceptingCall): Responder | undefined {
  return (call as unknown as { responder?: Responder }).responder;
}

function isBaseCall(value: unknown): value is BaseCall {
  if (typeof value !== "object" || value === null) return false;
  const call = value as Partial<Record<keyof BaseCall, unknown>>;
  const stream = call.stream as Partial<Writable> | undefined;
  return (
    typeof stream?.write === "function" &&
    typeof stream.once === "function" &&
    typeof call.cancelled === "boolean" &&
    typeof call.metadataSent === "boolean" &&
    typeof call.maxSendMessageSize === "number"
  );
}
