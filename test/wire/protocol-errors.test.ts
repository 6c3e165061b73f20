import { Code } from "@connectrpc/connect";
import { Client as GrpcClient, credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
import http2 from "node:http2";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { clientStackNames, createClientStack } from "../support/client-stacks.js";
import { expectToolError } from "../support/expect-error.js";
import { startTestServer } from "../support/test-server.js";

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
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
    });
    const outcome = new Promise<{ status: string; message: string }>((resolve, reject) => {
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
    stream.end(body);
    return await outcome;
  } finally {
    session.close();
  }
}
