import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Server, ServerCredentials } from "@grpc/grpc-js";
import { expect } from "chai";
import { Writable } from "node:stream";
import { pino } from "pino";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { createToolRuntime, type ToolRuntime } from "../../src/runtime.js";
import { wrapService } from "../../src/server/call-pipeline.js";
import { addServiceToGrpcServer } from "../../src/server/grpc-adapter.js";
import { createRegistryService } from "../../src/server/registry-service.js";
import { builtinTools } from "../../src/tools/builtin-tools.js";

/**
 * A bug in a service is answered INTERNAL with a reference, and its cause is logged under that
 * reference. On the gRPC port the error crosses the call pipeline and then the adapter: the
 * reference the client gets must be the one logged with the cause, once.
 */
describe("INTERNAL errors on the gRPC port", () => {
  const lines: string[] = [];
  let runtime: ToolRuntime;
  let server: Server;
  let port: number;

  before(async () => {
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString().split("\n").filter(Boolean));
        done();
      },
    });
    const logger = pino({ level: "info" }, destination);
    runtime = createToolRuntime({ tools: builtinTools });
    const broken = {
      ...createRegistryService(runtime),
      getTool() {
        throw new TypeError("secret database password is hunter2");
      },
      // eslint-disable-next-line require-yield
      async *watchTools() {
        await Promise.resolve();
        throw new TypeError("secret stream password is swordfish");
      },
    };
    server = new Server();
    const pipeline = { logger, isClosing: () => false, authenticate: createAuthenticator([]), observers: [] };
    addServiceToGrpcServer(server, RegistryService, wrapService(RegistryService, broken, pipeline), { logger });
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
  });

  after(() => {
    server.forceShutdown();
    runtime.close();
  });

  /** The reference the client got, and the log lines that name it or any reference. */
  function referenceOf(caught: unknown): { reference: string; internalLines: string[] } {
    const error = ConnectError.from(caught);
    expect(error.code).to.equal(Code.Internal);
    const reference = /reference ([0-9a-f-]{36})/.exec(error.rawMessage)?.[1] ?? "missing";
    return { reference, internalLines: lines.filter((line) => line.includes('"msg":"internal error"')) };
  }

  it("logs a unary call's bug once, under the reference the client gets", async () => {
    lines.length = 0;
    const client = createClient(RegistryService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
    const caught = await client.getTool({ name: "builtin.echo" }).then(
      () => undefined,
      (error: unknown) => error,
    );
    const { reference, internalLines } = referenceOf(caught);
    expect(internalLines).to.have.length(1);
    expect(internalLines[0]).to.contain(reference).and.to.contain("hunter2");
  });

  it("logs a stream's bug once, under the reference the client gets", async () => {
    lines.length = 0;
    const client = createClient(RegistryService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
    let caught: unknown;
    try {
      for await (const change of client.watchTools({})) void change;
    } catch (error) {
      caught = error;
    }
    const { reference, internalLines } = referenceOf(caught);
    expect(internalLines).to.have.length(1);
    expect(internalLines[0]).to.contain(reference).and.to.contain("swordfish");
  });
});
