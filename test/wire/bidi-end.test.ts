// A provider stream that ends cleanly on the gRPC port ends for both sides: the client sees the
// status, and the server can close at once afterwards.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Client as GrpcClient, credentials, Metadata, status, type StatusObject } from "@grpc/grpc-js";
import { expect } from "chai";
import { ConnectRequestSchema, ConnectResponseSchema } from "../../gen/toolruntime/v1/provider_pb.js";
import { createProvider } from "../../src/providers/create-provider.js";
import { defineTool } from "../../src/tools/define-tool.js";
import { startTestServer } from "../support/test-server.js";

const passThrough = (bytes: Buffer): Buffer => bytes;

describe("A provider stream that ends cleanly on the gRPC port", () => {
  it("gives a raw grpc-js client that half-closes its status", async () => {
    const server = await startTestServer();
    const client = new GrpcClient(server.grpcAddress, credentials.createInsecure());
    try {
      const call = client.makeBidiStreamRequest(
        "/toolruntime.v1.ProviderService/Connect",
        passThrough,
        passThrough,
        new Metadata(),
        { deadline: Date.now() + 10_000 },
      );
      const ended = new Promise<StatusObject>((resolve) => call.on("status", resolve));
      const welcomed = new Promise<void>((resolve) =>
        call.on("data", (bytes: Buffer) => {
          if (fromBinary(ConnectResponseSchema, bytes).message.case === "welcome") resolve();
        }),
      );
      call.write(
        Buffer.from(
          toBinary(
            ConnectRequestSchema,
            create(ConnectRequestSchema, {
              message: { case: "hello", value: { providerName: "leaving", tools: [{ name: "leaving.tool" }] } },
            }),
          ),
        ),
      );
      await welcomed;
      call.end();
      const result = await ended;
      expect(result.code).to.equal(status.OK);
    } finally {
      client.close();
      await server.close(0);
    }
  });

  it("lets the server close at once after a provider drained and left", async () => {
    const server = await startTestServer();
    const provider = createProvider({
      address: server.grpcAddress,
      providerName: "leaving",
      tools: [defineTool({ name: "leaving.tool", handler: () => ({}) })],
    });
    await provider.connected;
    await provider.drain(1000);
    await server.close(0);
  });
});
