import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  Client,
  credentials,
  Server,
  ServerCredentials,
  ServerInterceptingCall,
  type sendUnaryData,
  type ServerInterceptor,
  type ServerOptions,
  type ServerUnaryCall,
  type ServerWritableStream,
} from "@grpc/grpc-js";
import { expect } from "chai";
import { pino } from "pino";
import {
  ExecuteToolRequestSchema,
  ExecuteToolResponseSchema,
  RunnerService,
  type ExecuteToolRequest,
} from "../../gen/toolruntime/v1/runner_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { addServiceToGrpcServer } from "../../src/server/grpc-adapter.js";
import { frameWriterFor } from "../../src/server/grpc-frame-writer.js";
import { incompleteRequestInterceptor } from "../../src/server/incomplete-request-interceptor.js";
import { createGrpcJsClient } from "../support/grpc-js-client.js";
import { startTestServer } from "../support/test-server.js";

/** An interceptor that handles messages itself: the adapter must answer through grpc-js. */
const handlesMessages: ServerInterceptor = (_method, call) =>
  new ServerInterceptingCall(call, { sendMessage: (message, next) => next(message) });

/** What a raw HTTP/2 client saw of one gRPC call, in the order it came. */
interface RawAnswer {
  readonly headers: http2.IncomingHttpHeaders;
  readonly body: Buffer;
  readonly trailers: http2.IncomingHttpHeaders;
  /** The events in arrival order: "headers", "data" (once per chunk), "trailers". */
  readonly order: readonly string[];
}

/** One ExecuteTool call over plain HTTP/2, every frame of the answer kept. */
function rawExecute(address: string, request: Uint8Array): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": "/toolruntime.v1.RunnerService/ExecuteTool",
      "content-type": "application/grpc",
      te: "trailers",
    });
    const frame = Buffer.alloc(5 + request.length);
    frame.writeUInt32BE(request.length, 1);
    frame.set(request, 5);
    const order: string[] = [];
    const chunks: Buffer[] = [];
    let headers: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on("response", (received: http2.IncomingHttpHeaders) => {
      order.push("headers");
      headers = received;
    });
    stream.on("data", (chunk: Buffer) => {
      order.push("data");
      chunks.push(chunk);
    });
    stream.on("trailers", (received: http2.IncomingHttpHeaders) => {
      order.push("trailers");
      trailers = received;
    });
    stream.on("error", reject);
    stream.on("close", () => {
      session.close();
      resolve({ headers, body: Buffer.concat(chunks), trailers, order });
    });
    stream.end(frame);
  });
}

/**
 * Records the headers every HTTP/2 server stream of this process is given to respond with (what
 * the server passes to Node, before Node adds anything), until `restore()`. Node exports no
 * ServerHttp2Stream class: its prototype is taken from a stream of a throwaway server.
 */
async function recordRespondHeaders(): Promise<{ seen: http2.OutgoingHttpHeaders[]; restore: () => void }> {
  const probe = http2.createServer();
  const prototype = await new Promise<{ respond: (...args: unknown[]) => void }>((resolve, reject) => {
    probe.on("stream", (stream) => {
      resolve(Object.getPrototypeOf(stream) as { respond: (...args: unknown[]) => void });
      stream.respond({ ":status": 204 }, { endStream: true });
    });
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address() as { port: number };
      const session = http2.connect(`http://127.0.0.1:${address.port}`);
      session.on("error", reject);
      const request = session.request({ ":path": "/" });
      request.on("close", () => session.close());
      request.resume();
      request.end();
    });
  });
  probe.close();
  const seen: http2.OutgoingHttpHeaders[] = [];
  const respond = prototype.respond;
  prototype.respond = function (this: unknown, ...args: unknown[]) {
    seen.push({ ...(args[0] as http2.OutgoingHttpHeaders) });
    return respond.apply(this, args);
  };
  return { seen, restore: () => (prototype.respond = respond) };
}

/** ExecuteTool of `toolName` over plain HTTP/2, with the headers the server handed Node meanwhile. */
async function executeRecorded(
  address: string,
  toolName: string,
): Promise<{ answer: RawAnswer; seen: http2.OutgoingHttpHeaders[] }> {
  const recorded = await recordRespondHeaders();
  try {
    const request = toBinary(ExecuteToolRequestSchema, create(ExecuteToolRequestSchema, { toolName }));
    return { answer: await rawExecute(address, request), seen: recorded.seen };
  } finally {
    recorded.restore();
  }
}

describe("Unary answers on the gRPC port", () => {
  let server: RunningServer;

  afterEach(async () => server?.close(0));

  it("sends headers with a current date, then the one framed response, then OK in the trailers", async () => {
    server = await startTestServer();
    const { client, close } = createGrpcJsClient(RunnerService, server.grpcAddress);
    await client.activateTool({ toolName: "builtin.noop" });
    close();
    const before = Math.floor(Date.now() / 1000) * 1000;
    const { answer, seen } = await executeRecorded(server.grpcAddress, "builtin.noop");
    const after = Date.now();
    // The server set the date itself: Node's HTTP/2 was handed headers that hold it.
    expect(seen).to.have.length(1);
    expect(seen[0]?.["date"]).to.equal(answer.headers["date"]);

    expect(answer.headers[":status"]).to.equal(200);
    expect(answer.headers["content-type"]).to.equal("application/grpc+proto");
    const date = String(answer.headers["date"]);
    expect(date).to.match(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(Date.parse(date)).to.be.within(before, after);
    expect(answer.order[0]).to.equal("headers");
    expect(answer.order.at(-1)).to.equal("trailers");
    expect(answer.trailers["grpc-status"]).to.equal("0");
    expect(answer.trailers["grpc-message"]).to.equal("OK");

    // One frame: not compressed, its length, the message.
    expect(answer.body[0]).to.equal(0);
    const length = answer.body.readUInt32BE(1);
    expect(answer.body.length).to.equal(5 + length);
    const response = fromBinary(ExecuteToolResponseSchema, answer.body.subarray(5));
    expect(response.result?.success).to.equal(true);
    expect(response.executionId).to.equal(response.result?.metadata?.["execution_id"]);
  });

  describe("through the adapter, on a grpc-js server", () => {
    let grpcServer: Server | undefined;
    afterEach(() => grpcServer?.forceShutdown());

    /** A server whose ExecuteTool answers an output of `outputBytes` characters. */
    async function serve(outputBytes: number, options: ServerOptions): Promise<string> {
      grpcServer = new Server(options);
      addServiceToGrpcServer(
        grpcServer,
        RunnerService,
        // Only ExecuteTool: the adapter leaves out the methods an implementation lacks.
        {
          executeTool: (request: ExecuteToolRequest) => ({
            executionId: "e-1",
            result: {
              success: true,
              output: { blob: "x".repeat(outputBytes) },
              metadata: { tool_name: request.toolName },
            },
          }),
        } as unknown as ServiceImpl<typeof RunnerService>,
        { logger: pino({ enabled: false }) },
      );
      const port = await new Promise<number>((resolve, reject) =>
        grpcServer!.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, bound) =>
          error ? reject(error) : resolve(bound),
        ),
      );
      return `127.0.0.1:${port}`;
    }

    it("finds the HTTP/2 stream of a unary call under the server's own interceptor, so that answers go straight to it", async () => {
      grpcServer = new Server({ interceptors: [incompleteRequestInterceptor()] });
      let found: boolean | undefined;
      grpcServer.register(
        "/test.Unary/Call",
        (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
          found = frameWriterFor(call as unknown as ServerWritableStream<Buffer, Buffer>) !== undefined;
          callback(null, Buffer.alloc(0));
        },
        (bytes: Buffer) => bytes,
        (bytes: Buffer) => bytes,
        "unary",
      );
      const port = await new Promise<number>((resolve, reject) =>
        grpcServer!.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, bound) =>
          error ? reject(error) : resolve(bound),
        ),
      );
      const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
      await new Promise<void>((resolve, reject) =>
        client.makeUnaryRequest(
          "/test.Unary/Call",
          (bytes: Buffer) => bytes,
          (bytes: Buffer) => bytes,
          Buffer.alloc(1),
          (error) => (error ? reject(error) : resolve()),
        ),
      );
      client.close();
      expect(found).to.equal(true);
    });

    // How grpc-js itself refuses a first message over the limit: before any headers (a trailers-only
    // answer) when its own call sends it; after the headers when an interceptor of grpc-js's kind
    // passes the message on (it sends them first).
    for (const [name, interceptor, trailersOnly] of [
      ["straight to the stream", incompleteRequestInterceptor(), true],
      ["through grpc-js (an interceptor handles messages)", handlesMessages, false],
    ] as const) {
      const options: ServerOptions = { interceptors: [interceptor] };
      it(`answers a response within the size limit and refuses one over it with RESOURCE_EXHAUSTED, ${name}`, async () => {
        const address = await serve(2000, { ...options, "grpc.max_send_message_length": 4096 });
        const request = toBinary(ExecuteToolRequestSchema, create(ExecuteToolRequestSchema, { toolName: "t.one" }));
        const answer = await rawExecute(address, request);
        expect(answer.trailers["grpc-status"]).to.equal("0");
        const response = fromBinary(ExecuteToolResponseSchema, answer.body.subarray(5));
        expect(response.result?.output).to.deep.equal({ blob: "x".repeat(2000) });
        expect(response.result?.metadata).to.deep.equal({ tool_name: "t.one" });
        grpcServer?.forceShutdown();

        const over = await serve(5000, { ...options, "grpc.max_send_message_length": 4096 });
        const refused = await rawExecute(over, request);
        if (trailersOnly) {
          expect(refused.headers["grpc-status"]).to.equal(String(Code.ResourceExhausted));
          expect(refused.order).to.deep.equal(["headers"]);
        } else {
          expect(refused.trailers["grpc-status"]).to.equal(String(Code.ResourceExhausted));
          expect(refused.order).to.deep.equal(["headers", "trailers"]);
        }
        expect(refused.body.length).to.equal(0);
      });
    }
  });

  it("sends the date header on a failed call's trailers-only answer as well", async () => {
    server = await startTestServer();
    const { answer, seen } = await executeRecorded(server.grpcAddress, "no.such.tool");
    expect(answer.headers["grpc-status"]).to.equal(String(Code.NotFound));
    expect(answer.body.length).to.equal(0);
    expect(seen).to.have.length(1);
    expect(seen[0]?.["date"]).to.equal(answer.headers["date"]);
    expect(Date.parse(String(answer.headers["date"]))).to.be.closeTo(Date.now(), 5_000);
  });

  it("sends the date header on the HTTP port's HTTP/2 answers, set as the response goes", async () => {
    server = await startTestServer();
    const recorded = await recordRespondHeaders();
    try {
      const session = http2.connect(server.httpUrl);
      const status = await new Promise<number>((resolve, reject) => {
        session.on("error", reject);
        const request = session.request({
          ":method": "POST",
          ":path": "/toolruntime.v1.RegistryService/GetTool",
          "content-type": "application/json",
        });
        request.on("response", (headers) => resolve(Number(headers[":status"])));
        request.resume();
        request.end(JSON.stringify({ name: "builtin.noop" }));
      });
      session.close();
      expect(status).to.equal(200);
    } finally {
      recorded.restore();
    }
    expect(recorded.seen).to.have.length(1);
    expect(String(recorded.seen[0]?.["date"])).to.match(
      /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/,
    );
  });
});
