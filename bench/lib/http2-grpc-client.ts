import { constants, type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http2";
import { frameMessage } from "./grpc-frame.js";
import { codeOfHttpStatus, decodeGrpcMessage, GrpcCallError, GrpcCode } from "./grpc-status.js";
import { http2ErrorName, streamLimitOf, type GrpcConnection, type Http2GrpcClients } from "./http2-grpc-connections.js";
import type { FailedCall, SendResult } from "./send-result.js";

// A unary gRPC load generator on node:http2 alone: one stream per call, the request written once
// (frame prefix and body together), the response reassembled from its DATA frames, the status read
// from the trailers (or the headers of a trailers-only response). Every call's stream shares the
// same module-level listeners, which find their call through a symbol on the stream: this module
// makes no closure and no state object per call, only one per lane (a call in flight on a connection).

const laneOf = Symbol("lane");

type CallStream = ClientHttp2Stream & { [laneOf]: CallLane };

/** One `sendAll`: the framed requests, where each call's outcome goes, and when it is done. */
interface SendRun {
  readonly headers: OutgoingHttpHeaders;
  readonly framed: readonly Buffer[];
  readonly responses: (Buffer | undefined)[];
  readonly failed: FailedCall[];
  next: number;
  ended: number;
  lanesLeft: number;
  lastFailure: string;
  readonly done: () => void;
}

/** A slot for one call in flight on one connection; it sends the run's next call when one ends. */
class CallLane {
  index = -1;
  httpStatus = 0;
  grpcStatus = -1;
  grpcMessage = "";
  error: string | undefined = undefined;
  body: Buffer | undefined = undefined;
  /** DATA frames after the first, kept apart so that Buffer.concat runs only for a message that spans frames. */
  more: Buffer[] | undefined = undefined;

  constructor(
    readonly run: SendRun,
    readonly connection: GrpcConnection,
  ) {}

  /** Sends calls until one is in flight, or the run has none left, or the connection is gone. */
  sendNext(): void {
    const run = this.run;
    while (run.next < run.framed.length) {
      const failure = whyGone(this.connection);
      if (failure !== undefined) {
        run.lastFailure = failure;
        break; // leave the calls to the other connections' lanes
      }
      const index = run.next++;
      let stream: CallStream;
      try {
        stream = this.connection.session.request(run.headers) as CallStream;
      } catch (error) {
        this.connection.failure ??= `the connection to ${this.connection.address} refused a new stream: ${String(error)}`;
        fail(run, index, GrpcCode.UNAVAILABLE, this.connection.failure);
        continue;
      }
      this.index = index;
      this.httpStatus = 0;
      this.grpcStatus = -1;
      this.grpcMessage = "";
      this.error = undefined;
      this.body = undefined;
      this.more = undefined;
      stream[laneOf] = this;
      stream.on("response", onResponse);
      stream.on("data", onData);
      stream.on("trailers", onTrailers);
      stream.on("error", onError);
      stream.on("close", onClose);
      stream.end(run.framed[index]);
      return;
    }
    retire(run);
  }

  /** Records the call's outcome once its stream closed, then sends the next call. */
  finish(rstCode: number): void {
    const run = this.run;
    if (this.grpcStatus === GrpcCode.OK) {
      const problem = this.takeMessage();
      if (problem === undefined) succeed(run);
      else fail(run, this.index, GrpcCode.INTERNAL, problem);
    } else if (this.grpcStatus !== -1) {
      fail(run, this.index, this.grpcStatus, this.grpcMessage);
    } else {
      fail(run, this.index, ...this.statusWithout(rstCode));
    }
    this.body = undefined;
    this.more = undefined;
    this.sendNext();
  }

  /** Stores the one response message, or says what is wrong with the body. */
  private takeMessage(): string | undefined {
    let body = this.body;
    if (body === undefined) return "the server answered OK with no response message";
    if (this.more) body = Buffer.concat([body, ...this.more]);
    if (body.length < 5) return `the response body is ${body.length} bytes, shorter than a gRPC frame header`;
    if (body[0] !== 0) return "the response message is compressed, which this client never asked for";
    const length = body.readUInt32BE(1);
    if (body.length !== 5 + length)
      return `the response body is ${body.length} bytes, not one frame of ${length} bytes`;
    this.run.responses[this.index] = body.subarray(5);
    return undefined;
  }

  /** The status of a call that ended without grpc-status: from the transport, or the HTTP status. */
  private statusWithout(rstCode: number): [number, string] {
    const connectionFailure = whyGone(this.connection);
    const because = connectionFailure === undefined ? "" : ` (${connectionFailure})`;
    if (this.error !== undefined) return [GrpcCode.UNAVAILABLE, `${this.error}${because}`];
    if (this.httpStatus !== 0 && this.httpStatus !== 200)
      return [codeOfHttpStatus(this.httpStatus), `HTTP status ${this.httpStatus} without a grpc-status`];
    if (rstCode !== constants.NGHTTP2_NO_ERROR)
      return [GrpcCode.UNAVAILABLE, `the stream was reset (${http2ErrorName(rstCode)})${because}`];
    return [
      connectionFailure === undefined ? GrpcCode.INTERNAL : GrpcCode.UNAVAILABLE,
      `the stream ended without a grpc-status${because}`,
    ];
  }

  /** Takes grpc-status and grpc-message from trailers (or trailers-only headers) that carry them. */
  takeStatus(fields: IncomingHttpHeaders): void {
    const status = fields["grpc-status"];
    if (status === undefined) return;
    this.grpcStatus = Number(status);
    const message = fields["grpc-message"];
    this.grpcMessage = typeof message === "string" ? decodeGrpcMessage(message) : "";
  }
}

/**
 * Why `connection` can carry no more calls, or undefined while it can. Its streams close before
 * its own "close" event, so a closed session without a recorded reason still counts as gone.
 */
function whyGone(connection: GrpcConnection): string | undefined {
  const session = connection.session;
  if (connection.failure === undefined && (session.closed || session.destroyed))
    connection.failure = `the connection to ${connection.address} closed`;
  return connection.failure;
}

function onResponse(this: CallStream, headers: IncomingHttpHeaders): void {
  const lane = this[laneOf];
  lane.httpStatus = Number(headers[":status"]);
  lane.takeStatus(headers); // a trailers-only response carries its status here
}

function onData(this: CallStream, chunk: Buffer): void {
  const lane = this[laneOf];
  if (lane.body === undefined) lane.body = chunk;
  else (lane.more ??= []).push(chunk);
}

function onTrailers(this: CallStream, trailers: IncomingHttpHeaders): void {
  this[laneOf].takeStatus(trailers);
}

function onError(this: CallStream, error: Error): void {
  this[laneOf].error = error.message;
}

function onClose(this: CallStream): void {
  this[laneOf].finish(this.rstCode ?? constants.NGHTTP2_NO_ERROR);
}

function fail(run: SendRun, index: number, code: number, details: string): void {
  run.failed.push({ index, code, details });
  run.ended += 1;
  if (run.ended === run.framed.length) run.done();
}

function succeed(run: SendRun): void {
  run.ended += 1;
  if (run.ended === run.framed.length) run.done();
}

/** A lane stops; when the last one does with calls never sent (every connection gone), they fail. */
function retire(run: SendRun): void {
  run.lanesLeft -= 1;
  if (run.lanesLeft === 0) failUnsent(run);
}

function failUnsent(run: SendRun): void {
  while (run.next < run.framed.length) fail(run, run.next++, GrpcCode.UNAVAILABLE, run.lastFailure);
}

/**
 * Sends every body (a pre-encoded protobuf message) as one unary call of `path`, keeping up to
 * `inFlightPerConnection` calls in flight on each connection, and resolves once every call has
 * ended. The server's stream limit (its SETTINGS_MAX_CONCURRENT_STREAMS) caps the calls in flight
 * per connection. A call fails with the server's status and message, or with UNAVAILABLE when its
 * connection went away (GOAWAY, reset, error: the message says which), or INTERNAL when the response
 * is not one uncompressed message; calls that no connection can carry any more fail UNAVAILABLE.
 */
export function sendAll(
  clients: Http2GrpcClients,
  path: string,
  bodies: readonly Buffer[],
  inFlightPerConnection: number,
): Promise<SendResult> {
  const framed = bodies.map(frameMessage);
  return new Promise((resolve) => {
    const cpuBefore = process.cpuUsage();
    const began = performance.now();
    const run: SendRun = {
      headers: requestHeaders(path),
      framed,
      responses: new Array<Buffer | undefined>(bodies.length),
      failed: [],
      next: 0,
      ended: 0,
      lanesLeft: 0,
      lastFailure: "no connection to send the call on",
      done: () => {
        const elapsedMs = performance.now() - began;
        const cpu = process.cpuUsage(cpuBefore);
        resolve({
          responses: run.responses,
          failed: run.failed,
          elapsedMs,
          clientCpuMs: (cpu.user + cpu.system) / 1000,
        });
      },
    };
    if (bodies.length === 0) return run.done();
    const lanes = clients.connections.flatMap((connection) =>
      Array.from({ length: inFlightOn(connection, inFlightPerConnection) }, () => new CallLane(run, connection)),
    );
    run.lanesLeft = lanes.length;
    if (lanes.length === 0) failUnsent(run);
    for (const lane of lanes) lane.sendNext();
  });
}

/** Calls to keep in flight on `connection`: as asked, within the server's stream limit, at least 1. */
export function inFlightOn(connection: GrpcConnection, inFlightPerConnection: number): number {
  return Math.max(1, Math.min(inFlightPerConnection, streamLimitOf(connection)));
}

function requestHeaders(path: string): OutgoingHttpHeaders {
  return {
    [constants.HTTP2_HEADER_METHOD]: constants.HTTP2_METHOD_POST,
    [constants.HTTP2_HEADER_PATH]: path,
    [constants.HTTP2_HEADER_CONTENT_TYPE]: "application/grpc",
    [constants.HTTP2_HEADER_TE]: "trailers",
  };
}

/** One unary call of pre-encoded `body` to `path` on the first connection; rejects with a {@link GrpcCallError}. */
export async function callOnce(clients: Http2GrpcClients, path: string, body: Buffer): Promise<Buffer> {
  const first = clients.connections.slice(0, 1);
  const sent = await sendAll({ connections: first, close: clients.close }, path, [body], 1);
  const response = sent.responses[0];
  const failure = sent.failed[0];
  if (response === undefined) throw new GrpcCallError(failure?.code ?? -1, failure?.details ?? "no response");
  return response;
}
