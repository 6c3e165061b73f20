import { Code, ConnectError, createClient, createContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { once } from "node:events";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import net from "node:net";
import { readFile } from "node:fs/promises";
import tls from "node:tls";
import { pino } from "pino";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { createConnectNodeHandler } from "../../src/server/connect-node-handler.js";
import { defaultConnectionOptions } from "../../src/server/connection-options.js";
import { createTestPki } from "../support/certificates.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

/** A server of GetTool alone, with what each of its calls saw, in the order they came. */
interface GetToolServer {
  readonly url: string;
  /** Each call's request signal (what the handler's context signal is linked to), as the router got it. */
  readonly requestSignals: AbortSignal[];
  /** Each call's request closing on the server (after the handler heard of it: listeners run first). */
  readonly requestsClosed: Promise<unknown>[];
  close(): Promise<void>;
}

/** Serves a GetTool that answers at once, unless the tool's name is "wait": then when its signal aborts. */
async function startGetToolServer(): Promise<GetToolServer> {
  const requestSignals: AbortSignal[] = [];
  const requestsClosed: Promise<unknown>[] = [];
  const handler = createConnectNodeHandler({
    logger: pino({ enabled: false }),
    contextValues: () => createContextValues(),
    routes: (router) => {
      router.service(RegistryService, {
        getTool: async (request, context) => {
          if (request.name === "wait")
            await new Promise((resolve) => context.signal.addEventListener("abort", resolve, { once: true }));
          return { spec: { name: request.name } };
        },
      });
      router.handlers.forEach((handler: UniversalHandler, index) => {
        router.handlers[index] = Object.assign((request: UniversalServerRequest) => {
          requestSignals.push(request.signal);
          return handler(request);
        }, handler);
      });
    },
  });
  const server = http2.createServer((request, response) => {
    requestsClosed.push(once(request, "close"));
    handler(request, response);
  });
  // The client's session stays open between calls; closing the server ends it.
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requestSignals,
    requestsClosed,
    close: async () => {
      server.close();
      for (const session of sessions) session.destroy();
      await once(server, "close");
    },
  };
}

describe("Requests to the HTTP port (Connect handler, MCP)", () => {
  it("leaves a completed call's request signal alone, and aborts a call's request signal as Canceled when its HTTP/2 client resets it", async () => {
    const server = await startGetToolServer();
    try {
      const registry = createClient(
        RegistryService,
        createConnectTransport({ baseUrl: server.url, httpVersion: "2", useBinaryFormat: true }),
      );
      const response = await registry.getTool({ name: "done" });
      expect(response.spec?.name).to.equal("done");
      await server.requestsClosed[0];
      expect(server.requestSignals[0]?.aborted).to.equal(false);

      const leave = new AbortController();
      const call = registry.getTool({ name: "wait" }, { signal: leave.signal });
      while (server.requestSignals.length < 2) await new Promise((resolve) => setImmediate(resolve));
      leave.abort();
      const refusal = await call.then(
        () => undefined,
        (error: unknown) => ConnectError.from(error),
      );
      expect(refusal?.code).to.equal(Code.Canceled);
      await server.requestsClosed[1];
      const signal = server.requestSignals[1];
      expect(signal?.aborted).to.equal(true);
      const reason = ConnectError.from(signal?.reason);
      expect(reason.code).to.equal(Code.Canceled);
      expect(reason.rawMessage).to.equal("the HTTP/2 stream was closed before the response ended (0x8)");
    } finally {
      await server.close();
    }
  });

  for (const httpVersion of ["1.1", "2"] as const) {
    it(`cancels the run of an ExecuteTool whose HTTP/${httpVersion} client leaves mid-run`, async () => {
      const server = await startTestServer();
      try {
        const runner = createClient(RunnerService, createConnectTransport({ baseUrl: server.httpUrl, httpVersion }));
        await runner.activateTool({ toolName: "test.wait_for_cancel" });
        const leave = new AbortController();
        const waiting = once(testToolEvents, "waiting");
        const aborted = once(testToolEvents, "aborted");
        const call = runner
          .executeTool({ toolName: "test.wait_for_cancel", inputs: {} }, { signal: leave.signal })
          .catch((error: unknown) => ConnectError.from(error));
        await waiting;
        leave.abort();
        expect(((await call) as ConnectError).code).to.equal(Code.Canceled);
        const [, reason] = (await aborted) as [string, string];
        expect(reason).to.match(/cancel/i);
      } finally {
        await server.close(0);
      }
    });
  }

  it("answers 400 to requests that name no valid authority, on Connect and MCP, and goes on serving", async () => {
    const server = await startTestServer();
    try {
      const port = Number(new URL(server.httpUrl).port);
      const body = "{}";
      const cases = [
        // Without Host, the adapter connect-node ships threw inside the request event and ended the process.
        `POST /toolruntime.v1.RegistryService/ListTools HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
        `POST /toolruntime.v1.RegistryService/ListTools HTTP/1.1\r\nhost: [::1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
        // The MCP SDK answered 500 (an internal error) to this.
        `POST /mcp HTTP/1.1\r\nhost: [::1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
      ];
      for (const request of cases) {
        const answer = await exchangeRaw(port, request);
        expect(answer, request).to.match(/^HTTP\/1\.1 400 /);
        expect(answer, request).to.contain("the request names no valid authority");
      }

      const registry = createClient(
        RegistryService,
        createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }),
      );
      const listed = await registry.listTools({});
      expect(listed.tools.map((tool) => tool.name)).to.include("builtin.echo");
      const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
      const mcpRefusals = metrics
        .split("\n")
        .filter((line) => line.startsWith("toolruntime_rpc_requests_total") && line.includes('service="mcp"'));
      expect(mcpRefusals).to.have.length(1);
      expect(mcpRefusals[0]).to.contain('code="INVALID_ARGUMENT"').and.match(/ 1$/);
    } finally {
      await server.close(0);
    }
  });

  it("serves HTTP/1.1 requests whose target is in absolute form, and answers 400 to one that is no URL", async () => {
    const server = await startTestServer();
    try {
      const port = Number(new URL(server.httpUrl).port);
      const origin = `http://127.0.0.1:${port}`;
      const listTools = await exchangeRaw(
        port,
        `POST ${origin}/toolruntime.v1.RegistryService/ListTools HTTP/1.1\r\nhost: elsewhere\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}`,
      );
      expect(listTools).to.match(/^HTTP\/1\.1 200 /);
      expect(listTools).to.contain('"name":"builtin.echo"');
      const healthz = await exchangeRaw(port, `GET ${origin}/healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`);
      expect(healthz).to.match(/^HTTP\/1\.1 200 /);
      const broken = await exchangeRaw(
        port,
        `GET http://[::1/healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
      );
      expect(broken).to.match(/^HTTP\/1\.1 400 /);
      expect(broken).to.contain("the request target is not a valid URL");
    } finally {
      await server.close(0);
    }
  });

  it("ends an HTTP/2 connection that broke the protocol and went silent, so it holds no connection slot", async () => {
    const server = await startTestServer({
      connection: { ...defaultConnectionOptions, keepaliveTimeMs: 100, keepaliveTimeoutMs: 100, maxConnections: 1 },
    });
    try {
      const port = Number(new URL(server.httpUrl).port);
      const socket = net.connect(port, "127.0.0.1");
      await once(socket, "connect");
      socket.on("error", () => undefined);
      const headers = literalHeaders([
        [":method", "POST"],
        [":scheme", "http"],
        [":authority", `127.0.0.1:${port}`],
        [":path", "/toolruntime.v1.RegistryService/ListTools"],
        ["content-type", "application/json"],
      ]);
      socket.write(
        Buffer.concat([
          Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
          frame(0x4, 0, 0, Buffer.alloc(0)),
          frame(0x1, 0x4, 1, headers),
          // DATA larger than the 16 KiB frame size both sides start with: a connection error.
          frame(0x0, 0, 1, Buffer.alloc(20_000)),
        ]),
      );
      // The server answers with GOAWAY (FRAME_SIZE_ERROR) and reads no more; the client then vanishes.
      await new Promise<void>((resolve) => {
        let received = Buffer.alloc(0);
        socket.on("data", (data: Buffer) => {
          received = Buffer.concat([received, data]);
          for (let at = 0; at + 9 <= received.length; at += 9 + received.readUIntBE(at, 3)) {
            if (received[at + 3] === 0x7) resolve();
          }
        });
      });
      socket.destroy();
      // With its only connection slot held, the port closes every new connection as it arrives.
      const deadline = performance.now() + 5_000;
      let status = 0;
      while (status !== 200 && performance.now() < deadline) {
        status = await fetch(`${server.httpUrl}/healthz`).then(
          (response) => response.status,
          () => 0,
        );
      }
      expect(status).to.equal(200);
    } finally {
      await server.close(0);
    }
  });

  it("pings a quiet HTTP/2 connection again after each answer, and closes it once it has had no stream for the idle time", async () => {
    const server = await startTestServer({
      connection: {
        ...defaultConnectionOptions,
        keepaliveTimeMs: 100,
        keepaliveTimeoutMs: 2_000,
        maxConnectionIdleMs: 400,
      },
    });
    const session = http2.connect(server.httpUrl);
    try {
      let pings = 0;
      session.on("ping", () => (pings += 1));
      const goaway = once(session, "goaway");
      const request = session.request({ ":method": "GET", ":path": "/healthz" });
      request.resume();
      request.end();
      await once(request, "close");
      await goaway;
      // One ping at each 100 ms of quiet until the 400 ms without a stream: at least three.
      expect(pings).to.be.at.least(3);
    } finally {
      session.destroy();
      await server.close(0);
    }
  });

  it("closes an idle HTTP/1.1 keep-alive connection over TLS after the idle time", async () => {
    const pki = await createTestPki();
    const server = await startTestServer({
      tls: { certFile: pki.serverCertFile, keyFile: pki.serverKeyFile },
      connection: { ...defaultConnectionOptions, maxConnectionIdleMs: 300 },
    });
    try {
      const { port } = new URL(server.httpUrl);
      const socket = tls.connect({
        host: "127.0.0.1",
        port: Number(port),
        ca: await readFile(pki.caFile),
        servername: "localhost",
        ALPNProtocols: ["http/1.1"],
      });
      await once(socket, "secureConnect");
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      const closed = once(socket, "close");
      socket.write("GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n");
      await closed;
      expect(Buffer.concat(chunks).toString()).to.match(/^HTTP\/1\.1 200 /);
    } finally {
      await server.close(0);
    }
  });

  it("delivers the refusal of a call whose body is over the limit while the server is full", async () => {
    const server = await startTestServer({
      connection: { ...defaultConnectionOptions, maxCallsInFlight: 1, maxMessageBytes: 1024 },
    });
    try {
      const runner = createClient(RunnerService, createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "2" }));
      await runner.activateTool({ toolName: "test.wait_for_cancel" });
      const leave = new AbortController();
      const waiting = once(testToolEvents, "waiting");
      const held = runner
        .executeTool({ toolName: "test.wait_for_cancel", inputs: {} }, { signal: leave.signal })
        .catch(() => undefined);
      await waiting;
      const body = JSON.stringify({ toolName: "builtin.echo", inputs: { pad: "x".repeat(8_000) } });
      const answer = await exchangeRaw(
        Number(new URL(server.httpUrl).port),
        `POST /toolruntime.v1.RunnerService/ExecuteTool HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      );
      expect(answer).to.match(/^HTTP\/1\.1 429 /);
      expect(answer).to.contain('"code":"resource_exhausted"');
      leave.abort();
      await held;
    } finally {
      await server.close(0);
    }
  });
});

/** Sends `request` as it is on a fresh connection and returns all that comes back until the server closes it. */
async function exchangeRaw(port: number, request: string): Promise<string> {
  const socket = net.connect(port, "127.0.0.1");
  await once(socket, "connect");
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  socket.write(request);
  await once(socket, "close");
  return Buffer.concat(chunks).toString();
}

/** An HTTP/2 frame. */
function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}

/** A header block of literal fields without indexing, names and values under 127 bytes (RFC 7541 §6.2.2). */
function literalHeaders(fields: readonly (readonly [string, string])[]): Buffer {
  return Buffer.concat(
    fields.flatMap(([name, value]) => [
      Buffer.from([0x00, name.length]),
      Buffer.from(name),
      Buffer.from([value.length]),
      Buffer.from(value),
    ]),
  );
}
