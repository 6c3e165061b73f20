import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Server, ServerCredentials } from "@grpc/grpc-js";
import { expect } from "chai";
import { pino } from "pino";
import { ConnectRequestSchema, ProviderService } from "../../gen/toolruntime/v1/provider_pb.js";
import { addServiceToGrpcServer } from "../../src/server/grpc-adapter.js";

describe("Bidirectional streams on the gRPC port", () => {
  let server: Server;
  let port: number;

  before(async () => {
    server = new Server();
    addServiceToGrpcServer(
      server,
      ProviderService,
      {
        // Reads the first request, keeps reading the rest as the provider hub does, sends one
        // message and fails at once: the failure comes while that message is still being written.
        async *connect(requests) {
          const iterator = requests[Symbol.asyncIterator]();
          await iterator.next();
          void iterator.next().catch(() => undefined);
          yield { message: { case: "welcome", value: { connectionId: "c-1" } } };
          throw new ConnectError("the provider is gone", Code.Unavailable);
        },
      },
      { logger: pino({ enabled: false }) },
    );
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
  });

  after(() => server.forceShutdown());

  it("sends the status of a stream that fails while its last message is being written and the client still sends", async () => {
    const client = createClient(ProviderService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
    let finishRequests = (): void => undefined;
    const requestsOpen = new Promise<void>((resolve) => (finishRequests = resolve));
    const requests = (async function* () {
      yield create(ConnectRequestSchema, { message: { case: "hello", value: { providerName: "p" } } });
      await requestsOpen;
    })();
    const received: string[] = [];
    let failure: unknown;
    try {
      // A client deadline turns a status that never comes into a failed assertion, not a hang.
      for await (const response of client.connect(requests, { timeoutMs: 5000 })) {
        received.push(response.message.case ?? "none");
      }
    } catch (error) {
      failure = error;
    } finally {
      finishRequests();
    }
    expect(received).to.deep.equal(["welcome"]);
    expect(ConnectError.from(failure).code).to.equal(Code.Unavailable);
    expect(ConnectError.from(failure).rawMessage).to.equal("the provider is gone");
  });
});
