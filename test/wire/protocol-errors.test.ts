import { Code } from "@connectrpc/connect";
import { Client as GrpcClient, credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
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
