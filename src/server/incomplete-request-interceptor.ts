import {
  Metadata,
  type ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  type StatusObject,
} from "@grpc/grpc-js";
import { pino } from "pino";
import { withDateHeader } from "./date-header.js";
import { invalidRequest } from "../errors/tool-runtime-error.js";
import { toGrpcStatus } from "./grpc-status.js";
import { toConnectError } from "./to-connect-error.js";

type CallListener = Parameters<ServerInterceptingCallInterface["start"]>[0];

/**
 * Answers INVALID_ARGUMENT, with a ToolError, for a call to a method that takes one request whose
 * request stream ends without a complete message: it was empty, or cut short (a length prefix
 * announcing more bytes than arrived; grpc-js drops such a partial message at the end of the
 * stream). grpc-js itself would answer UNIMPLEMENTED, which says the method does not exist.
 *
 * A call whose requests stream is handed on as it is. A call that takes one request (unary or
 * server-streaming) is wrapped in a {@link UnaryRequestGuard}, not in grpc-js's
 * `ServerInterceptingCall`: that class makes a responder, a listener and a dozen closures a call
 * to let any event be held back, and this guard holds back none, only answers instead of one (a
 * few percent of a no-op call's server time).
 */
export function incompleteRequestInterceptor(): ServerInterceptor {
  // The error is the client's: nothing reaches the log.
  const status = toGrpcStatus(
    toConnectError(
      invalidRequest(
        "the request stream ended without a complete message (it was empty, or shorter than its length prefix): send one length-prefixed protobuf message",
      ),
      pino({ enabled: false }),
    ),
  );
  // grpc-js reads only the interface's methods of what an interceptor returns (the class in the
  // type has private fields that no other class can match).
  return (method, call) =>
    (method.requestStream ? call : new UnaryRequestGuard(call, status)) as ServerInterceptingCall;
}

/**
 * A call that takes one request as grpc-js serves it, except that a request stream without a
 * message is answered here. It passes messages on untouched, so a frame writer may go around it to
 * the call it wraps (grpc-frame-writer.ts); the response headers it sends carry `date`.
 */
export class UnaryRequestGuard implements ServerInterceptingCallInterface {
  constructor(
    readonly call: ServerInterceptingCallInterface,
    private readonly incomplete: StatusObject,
  ) {}

  /**
   * Whether headers or a message went through: the response is under way, so a status goes in the
   * trailers. Until then a status is a trailers-only answer, whose trailers are the headers, and
   * gets `date` (see date-header.ts).
   */
  #answering = false;

  start(listener: CallListener): void {
    this.call.start(new RequestListener(listener, this.call, this.incomplete));
  }
  sendMetadata(metadata: Parameters<ServerInterceptingCallInterface["sendMetadata"]>[0]): void {
    this.#answering = true;
    this.call.sendMetadata(withDateHeader(metadata));
  }
  sendMessage(message: unknown, callback: () => void): void {
    // grpc-js sends headers of its own before the message, or refuses one over the size limit with
    // a trailers-only answer: either way, as grpc-js does.
    this.#answering = true;
    this.call.sendMessage(message, callback);
  }
  sendStatus(status: Parameters<ServerInterceptingCallInterface["sendStatus"]>[0]): void {
    this.call.sendStatus(
      this.#answering ? status : { ...status, metadata: withDateHeader(status.metadata ?? new Metadata()) },
    );
  }
  startRead(): void {
    this.call.startRead();
  }
  getPeer(): string {
    return this.call.getPeer();
  }
  getDeadline(): ReturnType<ServerInterceptingCallInterface["getDeadline"]> {
    return this.call.getDeadline();
  }
  getHost(): string {
    return this.call.getHost();
  }
  getAuthContext(): ReturnType<ServerInterceptingCallInterface["getAuthContext"]> {
    return this.call.getAuthContext();
  }
  getConnectionInfo(): ReturnType<ServerInterceptingCallInterface["getConnectionInfo"]> {
    return this.call.getConnectionInfo();
  }
  getMetricsRecorder(): ReturnType<ServerInterceptingCallInterface["getMetricsRecorder"]> {
    return this.call.getMetricsRecorder();
  }
}

/**
 * Passes a call's events to grpc-js's listener; ends the call itself when no message came. Nothing
 * is passed on once the call was cancelled: grpc-js's base call goes on delivering the client's
 * events after it answered a call itself (a deadline, a message over the size limit), and a
 * half-close passed on then would start the handler of a call already answered.
 */
class RequestListener implements CallListener {
  private received = false;
  private cancelled = false;

  constructor(
    private readonly next: CallListener,
    private readonly call: ServerInterceptingCallInterface,
    private readonly incomplete: StatusObject,
  ) {}

  onReceiveMetadata(metadata: Parameters<CallListener["onReceiveMetadata"]>[0]): void {
    if (!this.cancelled) this.next.onReceiveMetadata(metadata);
  }
  onReceiveMessage(message: unknown): void {
    if (this.cancelled) return;
    this.received = true;
    this.next.onReceiveMessage(message);
  }
  onReceiveHalfClose(): void {
    if (this.cancelled) return;
    if (this.received) this.next.onReceiveHalfClose();
    else this.call.sendStatus({ ...this.incomplete, metadata: this.incomplete.metadata.clone() });
  }
  onCancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.next.onCancel();
  }
}
