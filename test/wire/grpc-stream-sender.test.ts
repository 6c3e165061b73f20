import {
  Client,
  credentials,
  Server,
  ServerCredentials,
  ServerInterceptingCall,
  ServerListenerBuilder,
  status,
  type ServerInterceptor,
  type ServerWritableStream,
  type ServiceError,
} from "@grpc/grpc-js";
import { expect } from "chai";
import http2 from "node:http2";
import { framesOf, frameWriterFor, type FrameWriter } from "../../src/server/grpc-frame-writer.js";
import { incompleteRequestInterceptor } from "../../src/server/incomplete-request-interceptor.js";
import { createBatchSender, maxBytesPerWrite, type BatchSender } from "../../src/server/grpc-stream-sender.js";

const path = "/test.Streams/Send";
const identity = (bytes: Buffer): Buffer => bytes;

/** Interceptors that pass messages and headers on: grpc-js's own kind, and the server's own. */
const passThrough: ServerInterceptor = (_method, call) => new ServerInterceptingCall(call);
const watchesStart: ServerInterceptor = (_method, call) =>
  new ServerInterceptingCall(call, { start: (next) => next(new ServerListenerBuilder().build()) });
const serversOwn = incompleteRequestInterceptor();
/** Interceptors that handle messages or headers themselves: the frame writer must not go around them. */
const countsMessages: ServerInterceptor = (_method, call) =>
  new ServerInterceptingCall(call, { sendMessage: (message, next) => next(message) });
const addsHeaders: ServerInterceptor = (_method, call) =>
  new ServerInterceptingCall(call, { sendMetadata: (metadata, next) => next(metadata) });

/** Message `index` of `size` bytes: its index in the first 4 bytes, then a filler. */
function message(index: number, size: number): Buffer {
  const bytes = Buffer.alloc(size, index % 251);
  bytes.writeUInt32BE(index, 0);
  return bytes;
}

/** What the handler of the test server does with each call, set by each test. */
type Handler = (call: ServerWritableStream<Buffer, Buffer>) => Promise<void>;

async function startServer(
  interceptors: ServerInterceptor[],
  handler: () => Handler,
  maxSendBytes = -1,
): Promise<{ server: Server; port: number }> {
  const server = new Server({ interceptors, "grpc.max_send_message_length": maxSendBytes });
  server.register(
    path,
    (call: ServerWritableStream<Buffer, Buffer>) => void handler()(call),
    identity,
    identity,
    "serverStream",
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return { server, port };
}

/** Opens the stream without reading it; `read()` then reads it to its end. */
function openStream(port: number) {
  const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
  const stream = client.makeServerStreamRequest(path, identity, identity, Buffer.alloc(0));
  const read = () =>
    new Promise<{ messages: Buffer[]; error?: ServiceError }>((resolve) => {
      const messages: Buffer[] = [];
      stream.on("data", (bytes: Buffer) => messages.push(bytes));
      stream.on("error", (error: ServiceError) => resolve({ messages, error }));
      stream.on("end", () => resolve({ messages }));
    });
  return { read, close: () => client.close() };
}

/** Yields to the event loop until `condition` holds (the test's timeout bounds the wait). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

describe("Batches of a stream on the gRPC port", () => {
  let server: Server | undefined;
  let handler: Handler = () => Promise.resolve();
  afterEach(() => server?.forceShutdown());

  describe("frameWriterFor()", () => {
    it("reaches the HTTP/2 stream through interceptors that pass messages and headers on, and not through one that handles them", async () => {
      const found: Record<string, boolean> = {};
      for (const [name, interceptors] of [
        ["none", []],
        ["grpc-js's kind", [passThrough, watchesStart]],
        ["the server's own", [serversOwn]],
        ["the server's own among others", [passThrough, serversOwn, watchesStart]],
        ["one handling messages", [passThrough, countsMessages]],
        ["one handling headers", [addsHeaders, passThrough]],
      ] as const) {
        const started = await startServer([...interceptors], () => handler);
        server = started.server;
        handler = (call) => {
          found[name] = frameWriterFor(call) !== undefined;
          call.end();
          return Promise.resolve();
        };
        const stream = openStream(started.port);
        expect((await stream.read()).error).to.equal(undefined);
        stream.close();
        server.forceShutdown();
      }
      expect(found).to.deep.equal({
        none: true,
        "grpc-js's kind": true,
        "the server's own": true,
        "the server's own among others": true,
        "one handling messages": false,
        "one handling headers": false,
      });
    });
  });

  describe("BatchSender.end()", () => {
    /** The raw answer to one call of the test method: headers, trailers, and the messages' count. */
    function rawCall(
      port: number,
    ): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; messages: number }> {
      return new Promise((resolve, reject) => {
        const session = http2.connect(`http://127.0.0.1:${port}`);
        session.on("error", reject);
        const stream = session.request({
          ":method": "POST",
          ":path": path,
          "content-type": "application/grpc",
          te: "trailers",
        });
        let headers: http2.IncomingHttpHeaders = {};
        let trailers: http2.IncomingHttpHeaders = {};
        const chunks: Buffer[] = [];
        stream.on("response", (received: http2.IncomingHttpHeaders) => (headers = received));
        stream.on("trailers", (received: http2.IncomingHttpHeaders) => (trailers = received));
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("error", reject);
        stream.on("close", () => {
          session.close();
          const body = Buffer.concat(chunks);
          let messages = 0;
          for (let at = 0; at < body.length; at += 5 + body.readUInt32BE(at + 1)) messages += 1;
          resolve({ headers, trailers, messages });
        });
        stream.end(Buffer.alloc(5));
      });
    }

    for (const [name, interceptors] of [
      ["through the frame writer", [serversOwn]],
      ["through grpc-js (an interceptor handles messages)", [countsMessages]],
    ] as const) {
      it(`ends with OK in the trailers after every message sent, ${name}`, async () => {
        const started = await startServer([...interceptors], () => handler);
        server = started.server;
        handler = async (call) => {
          const send = createBatchSender(call, (index) => message(index as number, 100), undefined);
          expect(await send([0, 1, 2])).to.equal(true);
          send.end();
        };
        const answer = await rawCall(started.port);
        expect(answer.headers[":status"]).to.equal(200);
        expect(answer.messages).to.equal(3);
        expect(answer.trailers["grpc-status"]).to.equal("0");
      });
    }

    it("does not end a stream whose client went away through the frame writer, and ends it quietly", async () => {
      const started = await startServer([serversOwn], () => handler);
      server = started.server;
      const seen: { before?: boolean; after?: boolean; ended?: boolean } = {};
      let cancelled!: () => void;
      const clientGone = new Promise<void>((resolve) => (cancelled = resolve));
      handler = async (call) => {
        const writer = frameWriterFor(call) as FrameWriter;
        const send = createBatchSender(call, (index) => message(index as number, 100), undefined);
        expect(await send([0])).to.equal(true);
        seen.before = writer.endsAtOnce();
        call.once("cancelled", () => cancelled());
        if (!call.cancelled) await clientGone;
        seen.after = writer.endsAtOnce();
        send.end();
        seen.ended = true;
      };
      const client = new Client(`127.0.0.1:${started.port}`, credentials.createInsecure());
      const stream = client.makeServerStreamRequest(path, identity, identity, Buffer.alloc(0));
      stream.on("error", () => undefined);
      await new Promise((resolve) => stream.once("data", resolve));
      stream.cancel();
      await until(() => seen.ended === true);
      client.close();
      expect(seen).to.deep.equal({ before: true, after: false, ended: true });
    });

    it("ends a stream that sent nothing as grpc-js does: a trailers-only answer", async () => {
      const started = await startServer([serversOwn], () => handler);
      server = started.server;
      handler = (call) => {
        createBatchSender(call, (index) => message(index as number, 100), undefined).end();
        return Promise.resolve();
      };
      const answer = await rawCall(started.port);
      expect(answer.messages).to.equal(0);
      expect(answer.headers["grpc-status"]).to.equal("0");
      expect(answer.trailers["grpc-status"]).to.equal(undefined);
    });
  });

  for (const framed of [false, true]) {
    describe(framed ? "createBatchSender() with a frame encoder" : "createBatchSender()", () => {
      /**
       * The sender under test: messages encoded one by one, or (framed) a batch encoded into its
       * frames at once, as toFramedBinaryFast does it: message by message until `untilBytes`.
       */
      /** Batches given to the frame encoder. */
      let framedBatches = 0;
      const sender = (call: ServerWritableStream<Buffer, Buffer>, encode: (message: unknown) => Buffer): BatchSender =>
        createBatchSender(
          call,
          encode,
          undefined,
          framed
            ? (batch, untilBytes) => {
                framedBatches += 1;
                const messages: Buffer[] = [];
                let bytes = 0;
                for (const each of batch) {
                  messages.push(encode(each));
                  bytes += messages.at(-1)!.length;
                  if (bytes >= untilBytes) break;
                }
                return framesOf(messages, bytes);
              }
            : undefined,
        );
      const messageBytes = 4096;
      const count = 1024; // 4 MiB: far more than HTTP/2 flow control lets through before the client reads

      it("writes a batch in order, 16 KiB a write, and stops writing while the client does not read", async () => {
        let writer: FrameWriter | undefined;
        let encoded = 0;
        let send: BatchSender | undefined;
        let sent: boolean | Promise<boolean> | undefined;
        const started = await startServer([serversOwn], () => handler);
        server = started.server;
        const ended = new Promise<void>((resolve) => {
          handler = async (call) => {
            writer = frameWriterFor(call);
            send = sender(call, (index) => {
              encoded += 1;
              return message(index as number, messageBytes);
            });
            sent = send(Array.from({ length: count }, (_, index) => index));
            expect(await sent).to.equal(true);
            call.end();
            resolve();
          };
        });
        const stream = openStream(started.port);
        // The client reads nothing yet: the writes must stop once the stream's buffer is full.
        await until(() => writer !== undefined && writer.bufferedBytes >= maxBytesPerWrite);
        expect(encoded, "messages encoded when the buffer filled").to.be.below(count);
        expect(writer!.bufferedBytes).to.be.at.most(maxBytesPerWrite + 4 * (messageBytes + 5));

        const { messages, error } = await stream.read();
        await ended;
        expect(error).to.equal(undefined);
        expect(messages).to.have.length(count);
        messages.forEach((bytes, index) => expect(bytes.readUInt32BE(0), `message ${index}`).to.equal(index));
        expect(messages.every((bytes) => bytes.length === messageBytes)).to.equal(true);
        stream.close();
      });

      it("writes a batch that fits in one write at once, without a promise, and encodes each message once", async () => {
        const started = await startServer([serversOwn], () => handler);
        server = started.server;
        const encodings: number[] = [];
        framedBatches = 0;
        const answers: unknown[] = [];
        handler = async (call) => {
          const send = sender(call, (index) => {
            encodings.push(index as number);
            return message(index as number, 100);
          });
          answers.push(send([0, 1, 2, 3, 4, 5]));
          // Past one write (16 KiB): in steps, as a promise.
          const big = send(Array.from({ length: 200 }, (_, index) => index + 6));
          answers.push(big);
          await big;
          call.end();
        };
        const stream = openStream(started.port);
        const { messages, error } = await stream.read();
        expect(error).to.equal(undefined);
        expect(answers[0]).to.equal(true);
        expect(answers[1]).to.be.instanceOf(Promise);
        expect(encodings).to.deep.equal(Array.from({ length: 206 }, (_, i) => i));
        // Framed, each batch went to the frame encoder (the big one once, then message by message).
        expect(framedBatches).to.equal(framed ? 2 : 0);
        expect(messages.map((bytes) => bytes.readUInt32BE(0))).to.deep.equal(Array.from({ length: 206 }, (_, i) => i));
        stream.close();
      });

      it("writes through call.write, in order, when an interceptor handles messages", async () => {
        const started = await startServer([countsMessages], () => handler);
        server = started.server;
        handler = async (call) => {
          const send = sender(call, (index) => message(index as number, 100));
          expect(await send([0, 1, 2])).to.equal(true);
          expect(await send(Array.from({ length: 500 }, (_, index) => index + 3))).to.equal(true);
          call.end();
        };
        const stream = openStream(started.port);
        const { messages, error } = await stream.read();
        expect(error).to.equal(undefined);
        expect(messages.map((bytes) => bytes.readUInt32BE(0))).to.deep.equal(Array.from({ length: 503 }, (_, i) => i));
        stream.close();
      });

      it("sends the messages before one over the size limit, then ends with grpc-js's RESOURCE_EXHAUSTED", async () => {
        const started = await startServer([serversOwn], () => handler, 10_000);
        server = started.server;
        handler = async (call) => {
          const sizes = [100, 100, 20_000, 100];
          const send = sender(call, (index) => message(index as number, sizes[index as number]!));
          await send([0, 1, 2, 3]);
          call.end();
        };
        const stream = openStream(started.port);
        const { messages, error } = await stream.read();
        expect(messages.map((bytes) => bytes.readUInt32BE(0))).to.deep.equal([0, 1]);
        expect(error?.code).to.equal(status.RESOURCE_EXHAUSTED);
        stream.close();
      });
    });
  }
});
