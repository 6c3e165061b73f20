import { expect } from "chai";
import { once } from "node:events";
import http2 from "node:http2";
import net from "node:net";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { startTestServer } from "../support/test-server.js";

const headerTimeoutMs = 300;
const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/** An empty HTTP/2 SETTINGS frame: length 0, type 4, no flags, stream 0. */
const settingsFrame = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);

/** Opens a raw TCP connection to a `host:port` address. */
function connect(address: string): Promise<net.Socket> {
  const { hostname, port } = new URL(`http://${address}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => resolve(socket));
    socket.once("error", reject);
    // The server's SETTINGS and GOAWAY frames are read and dropped.
    socket.on("data", () => undefined);
  });
}

/** Resolves with the milliseconds from `since` until the server closes `socket`. */
async function closedAfter(socket: net.Socket, since: number): Promise<number> {
  socket.on("error", () => undefined);
  if (!socket.closed) await once(socket, "close");
  return performance.now() - since;
}

describe("Connections that never finish their headers", () => {
  let server: RunningServer;
  let httpAddress: string;

  before(async () => {
    server = await startTestServer({ connection: { headerTimeoutMs } });
    httpAddress = new URL(server.httpUrl).host;
  });
  after(async () => {
    await server.close(0);
  });

  for (const port of ["HTTP", "gRPC"] as const) {
    const address = (): string => (port === "HTTP" ? httpAddress : server.grpcAddress);

    it(`closes a connection that sends part of the HTTP/2 preface on the ${port} port`, async () => {
      const started = performance.now();
      const socket = await connect(address());
      socket.write(preface.slice(0, 10));
      expect(await closedAfter(socket, started)).to.be.at.least(headerTimeoutMs - 50);
    });

    it(`closes a connection that sends the preface and SETTINGS but no HEADERS on the ${port} port`, async () => {
      const started = performance.now();
      const socket = await connect(address());
      socket.write(Buffer.concat([Buffer.from(preface), settingsFrame]));
      expect(await closedAfter(socket, started)).to.be.at.least(headerTimeoutMs - 50);
    });

    it(`keeps an HTTP/2 connection that made a call on the ${port} port past the header timeout`, async () => {
      const session = http2.connect(`http://${address()}`);
      try {
        const answer = async (): Promise<unknown> => {
          const stream = session.request(
            port === "HTTP"
              ? { ":path": "/healthz" }
              : {
                  ":method": "POST",
                  ":path": "/grpc.health.v1.Health/Check",
                  "content-type": "application/grpc",
                  te: "trailers",
                },
          );
          stream.end(port === "HTTP" ? undefined : Buffer.from([0, 0, 0, 0, 0]));
          stream.on("data", () => undefined);
          const [headers] = (await once(stream, "response")) as [http2.IncomingHttpHeaders];
          await once(stream, "close");
          return port === "HTTP" ? headers[":status"] : "answered";
        };
        expect(await answer()).to.equal(port === "HTTP" ? 200 : "answered");
        // A silent connection opened after that call is closed by the deadline; the session is not.
        const started = performance.now();
        const silent = await connect(address());
        await closedAfter(silent, started);
        expect(session.closed || session.destroyed).to.equal(false);
        expect(await answer()).to.equal(port === "HTTP" ? 200 : "answered");
      } finally {
        session.destroy();
      }
    });
  }

  it("closes an HTTP/1.1 connection that sends a header line now and then but never ends its headers", async () => {
    const started = performance.now();
    const socket = await connect(httpAddress);
    socket.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n");
    let lines = 0;
    // One more header line every 50 ms: the connection is busy but never completes a request.
    const drip = setInterval(() => {
      lines += 1;
      if (lines <= 40 && !socket.destroyed) socket.write(`X-Drip-${lines}: x\r\n`);
    }, 50);
    try {
      expect(await closedAfter(socket, started)).to.be.at.least(headerTimeoutMs - 50);
      expect(lines).to.be.below(40);
    } finally {
      clearInterval(drip);
    }
  });

  it("answers an HTTP/1.1 request whose headers arrive in time", async () => {
    const socket = await connect(httpAddress);
    let received = "";
    socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
    socket.end("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    await once(socket, "close");
    expect(received).to.match(/^HTTP\/1\.1 200 OK\r\n/);
  });
});
