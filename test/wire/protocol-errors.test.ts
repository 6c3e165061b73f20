import { Code } from "@connectrpc/connect";
import { Client as GrpcClient, credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
import http2 from "node:http2";
import zlib from "node:zlib";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack } from "../support/client-stacks.js";
import { expectToolError } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";
import { testGate } from "../support/test-tools.js";
import { create, toBinary } from "@bufbuild/protobuf";
import { ActivateToolRequestSchema, ExecuteToolRequestSchema } from "../../gen/toolruntime/v1/runner_pb.js";
import { frameWithFlag, postRawHttp2 } from "../support/raw-http2.js";

/** Bytes that no protobuf message decodes: field 1, wire type 7 (there is no wire type 7). */
const undecodable = Buffer.from([0x0f, 0x01]);
const passThrough = (bytes: Buffer): Buffer => bytes;

describe("Protocol errors over the wire", () => {
  let server: RunningServer;

  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server.close(0);
  });

  describe("the gRPC port", () => {
    it("ends a provider stream whose first message cannot be decoded with INVALID_ARGUMENT at once", async () => {
      const client = new GrpcClient(server.grpcAddress, credentials.createInsecure());
      try {
        const call = client.makeBidiStreamRequest(
          "/toolruntime.v1.ProviderService/Connect",
          passThrough,
          passThrough,
          new Metadata(),
          { deadline: Date.now() + 10_000 },
        );
        const failure = new Promise<ServiceError>((resolve, reject) => {
          call.on("error", resolve);
          call.on("end", () => reject(new Error("the stream ended without an error")));
          call.on("data", () => undefined);
        });
        call.write(undecodable);
        const error = await failure;
        expect(error.code).to.equal(status.INVALID_ARGUMENT);
        expect(error.details).to.match(/^request is not a valid toolruntime\.v1\.ConnectRequest message: /);
      } finally {
        client.close();
      }
    });
  });

  describe("truncated and empty requests on the gRPC port", () => {
    const incomplete =
      "the request stream ended without a complete message (it was empty, or shorter than its length prefix): send one length-prefixed protobuf message";
    it("answers INVALID_ARGUMENT to a unary call whose frame announces 10 bytes and carries 3", async () => {
      const frame = Buffer.from([0x00, 0x00, 0x00, 0x00, 0x0a, 0x0a, 0x01, 0x61]);
      const answer = await rawGrpc(server.grpcAddress, "/toolruntime.v1.RegistryService/GetTool", frame);
      expect(answer).to.deep.equal({ status: String(status.INVALID_ARGUMENT), message: incomplete });
    });
    it("answers INVALID_ARGUMENT to a server-streaming call that sends no message at all", async () => {
      const answer = await rawGrpc(server.grpcAddress, "/toolruntime.v1.RunnerService/RunTool", Buffer.alloc(0));
      expect(answer).to.deep.equal({ status: String(status.INVALID_ARGUMENT), message: incomplete });
    });
  });

  describe("frame flags on the gRPC port", () => {
    const flagged = (flags: number, message: Uint8Array): Buffer => {
      const frame = Buffer.alloc(5 + message.byteLength);
      frame.writeUInt8(flags, 0);
      frame.writeUInt32BE(message.byteLength, 1);
      frame.set(message, 5);
      return frame;
    };
    // GetToolRequest { name: "builtin.echo" }: a valid message, so only the flags can be refused.
    const getTool = Buffer.concat([Buffer.from([0x12, 12]), Buffer.from("builtin.echo")]);
    const badFlags = (flags: string) =>
      `request frame has flags ${flags}: a client sends only 0x00 (uncompressed) or 0x01 (compressed)`;
    const methods = [
      { kind: "unary", path: "/toolruntime.v1.RegistryService/GetTool", message: getTool },
      { kind: "server-streaming", path: "/toolruntime.v1.RunnerService/RunTool", message: Buffer.alloc(0) },
      { kind: "bidi-streaming", path: "/toolruntime.v1.ProviderService/Connect", message: Buffer.alloc(0) },
    ] as const;
    for (const method of methods) {
      for (const flags of [0x02, 0x03, 0x80, 0xff]) {
        const shown = `0x${flags.toString(16).padStart(2, "0")}`;
        it(`answers INVALID_ARGUMENT to a ${method.kind} call whose frame has flags ${shown}, as the HTTP port does`, async () => {
          const answer = await rawGrpc(server.grpcAddress, method.path, flagged(flags, method.message));
          expect(answer).to.deep.equal({ status: String(status.INVALID_ARGUMENT), message: badFlags(shown) });
        });
      }
    }
    it("refuses a bad frame that follows a good one in the same request stream", async () => {
      // ConnectRequest { hello: ProviderHello { provider_name: "p" } }, then a frame flagged 0x02.
      const hello = Buffer.from([0x0a, 0x03, 0x0a, 0x01, 0x70]);
      const body = Buffer.concat([flagged(0, hello), flagged(0x02, Buffer.alloc(0))]);
      const answer = await rawGrpc(server.grpcAddress, "/toolruntime.v1.ProviderService/Connect", body);
      expect(answer).to.deep.equal({ status: String(status.INVALID_ARGUMENT), message: badFlags("0x02") });
    });
    it("serves flags 0x00, and 0x01 with the compression the call names", async () => {
      const session = http2.connect(`http://${server.grpcAddress}`);
      try {
        expect((await exchange(session, methods[0].path, flagged(0, getTool))).status).to.equal("0");
        const stream = session.request({
          ":method": "POST",
          ":path": methods[0].path,
          "content-type": "application/grpc",
          "grpc-encoding": "gzip",
          te: "trailers",
        });
        const answered = statusOf(stream);
        stream.end(flagged(1, zlib.gzipSync(getTool)));
        expect((await answered).status).to.equal("0");
      } finally {
        session.close();
      }
    });
  });

  describe("calls the gRPC port answered before their request stream ended", () => {
    const executeTool = "/toolruntime.v1.RunnerService/ExecuteTool";
    const grpcFrame = (message: Uint8Array): Buffer => {
      const frame = Buffer.alloc(5 + message.byteLength);
      frame.writeUInt32BE(message.byteLength, 1);
      frame.set(message, 5);
      return frame;
    };
    const activate = (toolName: string): Buffer =>
      grpcFrame(toBinary(ActivateToolRequestSchema, create(ActivateToolRequestSchema, { toolName })));
    const execute = (toolName: string): Buffer =>
      grpcFrame(toBinary(ExecuteToolRequestSchema, create(ExecuteToolRequestSchema, { toolName })));

    it("never runs a call whose deadline passed while its client kept the request stream open", async () => {
      testGate.reset();
      const session = http2.connect(`http://${server.grpcAddress}`);
      try {
        for (const tool of ["test.gate", "builtin.noop"]) {
          expect(
            (await exchange(session, "/toolruntime.v1.RunnerService/ActivateTool", activate(tool))).status,
          ).to.equal(String(status.OK));
        }
        // The request's message arrives, its end does not: the deadline answers the call first.
        const stream = session.request({
          ":method": "POST",
          ":path": executeTool,
          "content-type": "application/grpc",
          te: "trailers",
          "grpc-timeout": "100m",
        });
        const answered = statusOf(stream);
        stream.write(execute("test.gate"));
        expect(await answered).to.deep.equal({
          status: String(status.DEADLINE_EXCEEDED),
          message: "Deadline exceeded",
        });
        // Now the client ends its request stream; once the stream is closed on both sides, a call
        // of the same method on the same connection follows it through the same steps.
        await new Promise<void>((resolve) => {
          stream.once("close", resolve);
          stream.end();
        });
        expect((await exchange(session, executeTool, execute("builtin.noop"))).status).to.equal(String(status.OK));
        expect(testGate.entered, "runs of test.gate started").to.equal(0);
      } finally {
        testGate.open();
        session.close();
      }
    });
  });

  describe("the HTTP port", () => {
    const frame = (flags: number, message: Buffer): Buffer => {
      const header = Buffer.alloc(5);
      header.writeUInt8(flags, 0);
      header.writeUInt32BE(message.length, 1);
      return Buffer.concat([header, message]);
    };
    const notDecodable = (typeName: string) => `request is not a valid ${typeName} message: `;
    const badFlags = (flags: string) =>
      `request frame has flags ${flags}: a client sends only 0x00 (uncompressed) or 0x01 (compressed)`;
    const cases = [
      { protocol: "gRPC", contentType: "application/grpc" },
      { protocol: "gRPC-Web", contentType: "application/grpc-web+proto" },
      { protocol: "Connect streaming", contentType: "application/connect+proto" },
    ] as const;
    const methods = [
      { kind: "unary", path: "/toolruntime.v1.RegistryService/GetTool", input: "toolruntime.v1.GetToolRequest" },
      { kind: "streaming", path: "/toolruntime.v1.RunnerService/RunTool", input: "toolruntime.v1.RunToolRequest" },
    ] as const;
    it("answers INVALID_ARGUMENT to undecodable protobuf in a Connect binary unary request", async () => {
      const answer = await rawHttp(server.httpUrl, methods[0].path, "application/proto", undecodable);
      expect(answer).to.include({ httpStatus: 400, code: "invalid_argument" });
      expect(answer.message.startsWith(notDecodable(methods[0].input)), answer.message).to.equal(true);
    });
    // GetToolRequest { name: "builtin.echo" }, and the same with a length that runs past the end.
    const validGetTool = Buffer.concat([Buffer.from([0x12, 12]), Buffer.from("builtin.echo")]);
    const truncated = Buffer.from([0x12, 0x05, 0x61]);
    const compressions = [
      { name: "gzip", compress: (bytes: Buffer) => zlib.gzipSync(bytes) },
      { name: "br", compress: (bytes: Buffer) => zlib.brotliCompressSync(bytes) },
    ] as const;
    for (const { name, compress } of compressions) {
      it(`checks a ${name}-compressed Connect binary unary request once decompressed: valid is served, undecodable refused`, async () => {
        const headers = { "content-encoding": name };
        const served = await rawHttp(
          server.httpUrl,
          methods[0].path,
          "application/proto",
          compress(validGetTool),
          headers,
        );
        expect(served.httpStatus).to.equal(200);
        const refused = await rawHttp(
          server.httpUrl,
          methods[0].path,
          "application/proto",
          compress(undecodable),
          headers,
        );
        expect(refused).to.include({ httpStatus: 400, code: "invalid_argument" });
        expect(refused.message).to.equal(`${notDecodable(methods[0].input)}illegal tag: field no 1 wire type 7`);
      });
    }
    it("says a truncated message is truncated, on both ports", async () => {
      const expected = `${notDecodable(methods[0].input)}it is truncated: a field runs past the end of the message (premature EOF)`;
      const overGrpc = await rawGrpc(server.grpcAddress, methods[0].path, frame(0, truncated));
      expect(overGrpc).to.deep.equal({ status: "3", message: expected });
      const overConnect = await rawHttp(server.httpUrl, methods[0].path, "application/proto", truncated);
      expect(overConnect).to.include({ httpStatus: 400, code: "invalid_argument", message: expected });
    });
    for (const method of methods) {
      for (const { protocol, contentType } of cases) {
        if (protocol === "Connect streaming" && method.kind === "unary") continue;
        it(`answers INVALID_ARGUMENT to undecodable gzip-compressed protobuf over ${protocol} (${method.kind} method)`, async () => {
          const encoding = protocol === "Connect streaming" ? "connect-content-encoding" : "grpc-encoding";
          const body = frame(1, zlib.gzipSync(undecodable));
          const answer = await rawHttp(server.httpUrl, method.path, contentType, body, { [encoding]: "gzip" });
          expect(answer.code).to.be.oneOf(["3", "invalid_argument"]);
          expect(answer.message.startsWith(notDecodable(method.input)), answer.message).to.equal(true);
        });
        it(`answers INVALID_ARGUMENT to undecodable protobuf over ${protocol} (${method.kind} method)`, async () => {
          const answer = await rawHttp(server.httpUrl, method.path, contentType, frame(0, undecodable));
          expect(answer.code).to.be.oneOf(["3", "invalid_argument"]);
          expect(answer.message.startsWith(notDecodable(method.input)), answer.message).to.equal(true);
        });
        it(`refuses a frame with reserved flag bits set over ${protocol} (${method.kind} method)`, async () => {
          const answer = await rawHttp(server.httpUrl, method.path, contentType, frame(0x02, Buffer.alloc(0)));
          expect(answer.code).to.be.oneOf(["3", "invalid_argument"]);
          expect(answer.message).to.equal(badFlags("0x02"));
        });
      }
    }
  });

  describe("what errors echo", () => {
    for (const stackName of clientStackNames) {
      it(`cuts a message quoting 10,000 characters of input to 1 KiB, ending in an ellipsis, over ${stackName}`, async () => {
        const client = createClientStack(stackName, server);
        try {
          const long = "a".repeat(10_000);
          const toolError = await expectToolError(
            client.registry.registerTool({
              spec: { name: "echo.bound", inputSchema: { type: "object", properties: { [long]: { type: long } } } },
            }),
            Code.InvalidArgument,
            "RegistrationError",
            'input_schema of "echo.bound" is not a valid JSON Schema',
          );
          expect(Buffer.byteLength(toolError.details)).to.be.at.most(1024);
          expect(toolError.details.endsWith("…")).to.equal(true);
          expect(toolError.details.length).to.be.above(1000);
        } finally {
          client.close();
        }
      });
    }
  });
});

/** Sends one raw gRPC request of `body` bytes to the gRPC port and resolves to its grpc-status and grpc-message. */
async function rawGrpc(address: string, path: string, body: Buffer): Promise<{ status: string; message: string }> {
  const session = http2.connect(`http://${address}`);
  try {
    return await exchange(session, path, body);
  } finally {
    session.close();
  }
}

/** Sends one raw gRPC request of `body` bytes on `session` and resolves to its grpc-status and grpc-message. */
function exchange(
  session: http2.ClientHttp2Session,
  path: string,
  body: Buffer,
): Promise<{ status: string; message: string }> {
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
  });
  const outcome = statusOf(stream);
  stream.end(body);
  return outcome;
}

/** The grpc-status and grpc-message a raw gRPC stream ends with (trailers, or a trailers-only response). */
function statusOf(stream: http2.ClientHttp2Stream): Promise<{ status: string; message: string }> {
  return new Promise((resolve, reject) => {
    let headers: http2.IncomingHttpHeaders = {};
    stream.on("response", (received) => (headers = received));
    stream.on("trailers", (trailers: http2.IncomingHttpHeaders) => (headers = { ...headers, ...trailers }));
    stream.on("data", () => undefined);
    stream.on("end", () =>
      resolve({
        status: String(headers["grpc-status"]),
        message: decodeURIComponent(String(headers["grpc-message"] ?? "")),
      }),
    );
    stream.on("error", reject);
  });
}

/**
 * Sends one raw request over HTTP/2 (cleartext) to the HTTP port and reads the status from wherever
 * its protocol puts it: gRPC trailers, the gRPC-Web trailer frame, the Connect end-of-stream
 * message, or the Connect unary error body.
 */
async function rawHttp(
  baseUrl: string,
  path: string,
  contentType: string,
  body: Buffer,
  extraHeaders: http2.OutgoingHttpHeaders = {},
): Promise<{ httpStatus: number; code: string; message: string }> {
  const {
    status: httpStatus,
    headers,
    body: received,
  } = await postRawHttp2(baseUrl, path, contentType, body, extraHeaders);
  if (contentType === "application/grpc") {
    return {
      httpStatus,
      code: String(headers["grpc-status"]),
      message: decodeURIComponent(String(headers["grpc-message"] ?? "")),
    };
  }
  if (contentType.startsWith("application/grpc-web")) {
    const fields = new Map<string, string>();
    if (headers["grpc-status"] !== undefined) {
      fields.set("grpc-status", String(headers["grpc-status"]));
      fields.set("grpc-message", String(headers["grpc-message"] ?? ""));
    } else {
      // The trailer frame (flag 0x80) carries the trailers as HTTP/1-style header lines.
      for (const line of frameWithFlag(received, 0x80).toString().split("\r\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) fields.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
    }
    return {
      httpStatus,
      code: fields.get("grpc-status") ?? "",
      message: decodeURIComponent(fields.get("grpc-message") ?? ""),
    };
  }
  if (contentType.startsWith("application/connect+")) {
    const end = JSON.parse(frameWithFlag(received, 0x02).toString()) as {
      error?: { code: string; message: string };
    };
    return { httpStatus, code: end.error?.code ?? "", message: end.error?.message ?? "" };
  }
  // A Connect unary success is the response message itself; only an error is JSON.
  if (!String(headers["content-type"]).startsWith("application/json")) return { httpStatus, code: "", message: "" };
  const error = JSON.parse(received.toString()) as { code: string; message: string };
  return { httpStatus, code: error.code, message: error.message };
}
