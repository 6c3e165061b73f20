import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import { Client, Server, ServerCredentials, credentials, type ServiceDefinition } from "@grpc/grpc-js";
import { expect } from "chai";
import { useChurnMapForStreams, watchGrpcSessions } from "../../src/server/http2-stream-table.js";

/** Sends `count` GET requests on one session, `parallel` at a time; resolves to their statuses. */
async function requestMany(session: http2.ClientHttp2Session, count: number, parallel: number): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next += 1;
      statuses.push(
        await new Promise<number>((resolve, reject) => {
          const request = session.request({ ":path": "/" });
          let status = 0;
          request.on("response", (headers) => (status = Number(headers[":status"])));
          request.on("error", reject);
          request.on("close", () => resolve(status));
          request.resume();
          request.end();
        }),
      );
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return statuses;
}

describe("useChurnMapForStreams", () => {
  it("takes over a new session's streams on this Node, and the session serves, resets and closes streams as before", async () => {
    const adopted: boolean[] = [];
    const serverStreams: http2.ServerHttp2Stream[] = [];
    const server = http2.createServer();
    server.on("session", (session) => adopted.push(useChurnMapForStreams(session)));
    server.on("stream", (stream, headers) => {
      if (headers[":path"] === "/hold") {
        serverStreams.push(stream);
        return;
      }
      stream.respond({ ":status": 200 });
      stream.end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const client = http2.connect(`http://127.0.0.1:${port}`);
    try {
      // 600 streams on one session: their Map is renewed many times over.
      const statuses = await requestMany(client, 600, 16);
      expect(statuses).to.have.length(600);
      expect(new Set(statuses)).to.deep.equal(new Set([200]));
      expect(adopted).to.deep.equal([true]);

      // A stream the client resets is found by its id and closed on the server.
      const held = client.request({ ":path": "/hold" });
      held.on("error", () => undefined);
      while (serverStreams.length < 1) await new Promise((resolve) => setImmediate(resolve));
      const firstClosed = new Promise((resolve) => serverStreams[0]?.once("close", resolve));
      held.close(http2.constants.NGHTTP2_CANCEL);
      await firstClosed;

      // Destroying the session closes every stream it holds (Node walks them with forEach).
      const open = Array.from({ length: 5 }, () => {
        const request = client.request({ ":path": "/hold" });
        request.on("error", () => undefined);
        return request;
      });
      while (serverStreams.length < 1 + open.length) await new Promise((resolve) => setImmediate(resolve));
      const allClosed = Promise.all(
        serverStreams.slice(1).map((stream) => new Promise((resolve) => stream.once("close", resolve))),
      );
      serverStreams[1]?.session?.destroy();
      await allClosed;
      expect(serverStreams.every((stream) => stream.destroyed)).to.equal(true);
    } finally {
      client.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("leaves a session alone when its internals are not the expected shape", () => {
    const session = Object.assign(Object.create(null) as object, {
      [Symbol("state")]: { streams: new Map([[1, {}]]), pendingStreams: new Set() },
    });
    expect(useChurnMapForStreams(session as unknown as http2.Http2Session)).to.equal(false);
    expect(useChurnMapForStreams({} as http2.Http2Session)).to.equal(false);
  });
});

describe("watchGrpcSessions", () => {
  it("sees every session of a grpc-js connection injector, whose streams then use a ChurnMap", async () => {
    const server = new Server();
    const definition: ServiceDefinition = {
      Echo: {
        path: "/test.Echo/Echo",
        requestStream: false,
        responseStream: false,
        requestSerialize: (bytes: Buffer) => bytes,
        requestDeserialize: (bytes: Buffer) => bytes,
        responseSerialize: (bytes: Buffer) => bytes,
        responseDeserialize: (bytes: Buffer) => bytes,
      },
    };
    server.addService(definition, {
      Echo: (call: { request: Buffer }, callback: (error: null, value: Buffer) => void) => callback(null, call.request),
    });
    const adopted: boolean[] = [];
    expect(watchGrpcSessions(server, (session) => adopted.push(useChurnMapForStreams(session)))).to.equal(true);
    const injector = server.createConnectionInjector(ServerCredentials.createInsecure());
    const listener = net.createServer((socket) => injector.injectConnection(socket));
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const { port } = listener.address() as AddressInfo;
    const client = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
    try {
      const answers = await Promise.all(
        Array.from(
          { length: 200 },
          (_, index) =>
            new Promise<string>((resolve, reject) =>
              client.makeUnaryRequest(
                "/test.Echo/Echo",
                (bytes: Buffer) => bytes,
                (bytes: Buffer) => bytes,
                Buffer.from(`call ${index}`),
                (error, value) => (error ? reject(error) : resolve(String(value))),
              ),
            ),
        ),
      );
      expect(answers).to.deep.equal(Array.from({ length: 200 }, (_, index) => `call ${index}`));
      expect(adopted).to.deep.equal([true]);
    } finally {
      client.close();
      injector.destroy();
      server.forceShutdown();
      await new Promise((resolve) => listener.close(resolve));
    }
  });

  it("reports false for a server without the method it wraps", () => {
    expect(watchGrpcSessions({} as Server, () => undefined)).to.equal(false);
  });
});
