import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type { Client as GrpcClient } from "@grpc/grpc-js";
import { expect } from "chai";
import { protoPath as healthProtoPath } from "grpc-health-check";
import { once, setMaxListeners } from "node:events";
import http2 from "node:http2";
import net from "node:net";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import type { RunningServer } from "../../src/server/tool-runtime-server.js";
import { expectToolError } from "../support/expect-error.js";
import { createGrpcJsClient } from "../support/grpc-js-client.js";
import { startFlood } from "../support/flood-client.js";
import { createProtoLoaderClient } from "../support/proto-loader-client.js";
import { postMcp } from "../support/mcp-post.js";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

type HealthClient = GrpcClient & {
  Check(request: { service: string }, callback: (error: Error | null, response?: { status: string }) => void): void;
};

const refusalMessage = (limit: number): string =>
  `the server has ${limit} calls in flight, its limit: retry with backoff, or raise --max-calls-in-flight`;

/** Milliseconds a grpc.health.v1 Check takes to answer SERVING. */
async function timeHealthCheck(health: HealthClient): Promise<number> {
  const started = performance.now();
  const status = await new Promise<string>((resolve, reject) =>
    health.Check({ service: "" }, (error, response) => (error ? reject(error) : resolve(response?.status ?? ""))),
  );
  expect(status).to.equal("SERVING");
  return performance.now() - started;
}

/** Milliseconds GET /healthz takes to answer 200. */
async function timeHealthz(httpUrl: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${httpUrl}/healthz`);
  expect(response.status).to.equal(200);
  await response.text();
  return performance.now() - started;
}

describe("Load shedding over the wire", () => {
  const limit = 40;
  let server: RunningServer;
  let health: HealthClient;

  before(async () => {
    server = await startTestServer({ connection: { maxCallsInFlight: limit, maxConnections: 64 } });
    health = createProtoLoaderClient(healthProtoPath, "grpc.health.v1.Health", server.grpcAddress) as HealthClient;
  });
  after(async () => {
    health.close();
    await server.close(0);
  });

  /**
   * Floods one port with `connections` × `callsEach` RunTool calls of a tool that holds its call
   * until cancelled, from another process; while the flood is taken in, checks /healthz and
   * grpc.health.v1 Check one after the other until the flood has its answers: each must answer
   * in under a second. Then exactly `limit` calls are held and every other one was refused with
   * RESOURCE_EXHAUSTED.
   */
  async function flood(url: string, connections: number, callsEach: number): Promise<void> {
    const flood = startFlood(url, connections, callsEach, "test.wait_for_cancel", limit);
    try {
      let answered = false;
      void flood.report.finally(() => (answered = true));
      const latencies: number[] = [];
      do latencies.push(await timeHealthz(server.httpUrl), await timeHealthCheck(health));
      while (!answered);
      const report = await flood.report;
      expect(report.open).to.equal(limit);
      expect(report.codes).to.deep.equal({ [String(Code.ResourceExhausted)]: connections * callsEach - limit });
      expect(report.messages).to.deep.equal([refusalMessage(limit)]);
      expect(Math.max(...latencies)).to.be.below(1000);
    } finally {
      await flood.release();
    }
  }

  it("counts requests to /mcp against the same limit, refusing them with 429 past it", async () => {
    const slots = 2;
    const small = await startTestServer({ connection: { maxCallsInFlight: slots } });
    const mcp = (body: unknown, signal?: AbortSignal) => postMcp(`${small.httpUrl}/mcp`, body, signal);
    const hold = new AbortController();
    try {
      let waitingRuns = 0;
      const allWaiting = new Promise<void>((resolve) => {
        const onWaiting = (): void => {
          waitingRuns += 1;
          if (waitingRuns < slots) return;
          testToolEvents.off("waiting", onWaiting);
          resolve();
        };
        testToolEvents.on("waiting", onWaiting);
      });
      // Two tools/call that wait until cancelled hold both slots.
      const held = Array.from({ length: slots }, (_, index) =>
        mcp(
          { jsonrpc: "2.0", id: index, method: "tools/call", params: { name: "test.wait_for_cancel", arguments: {} } },
          hold.signal,
        ).catch(() => undefined),
      );
      await allWaiting;
      const refused = await mcp({ jsonrpc: "2.0", id: 9, method: "tools/list", params: {} });
      expect(refused.status).to.equal(429);
      const body = (await refused.json()) as { error: { code: number; message: string } };
      expect(body.error.message).to.equal(refusalMessage(slots));
      // An RPC is refused too: the slots are the server's.
      const rpc = await fetch(`${small.httpUrl}/toolruntime.v1.RegistryService/ListTools`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      expect(rpc.status).to.equal(429);
      hold.abort();
      await Promise.all(held);
    } finally {
      hold.abort();
      await small.close(0);
    }
  });

  it("takes no call slot for a call whose request body has not all arrived, so others are served on both ports", async () => {
    const slots = 3;
    const small = await startTestServer({ connection: { maxCallsInFlight: slots } });
    const session = http2.connect(small.httpUrl);
    const grpcJs = createGrpcJsClient(RegistryService, small.grpcAddress);
    try {
      // As many calls as there are slots, each sending its headers and one byte of the 100 it announces.
      const withheld = Array.from({ length: slots }, () => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/toolruntime.v1.RegistryService/ListTools",
          "content-type": "application/json",
          "content-length": "100",
        });
        stream.on("error", () => undefined);
        stream.write("{");
        return stream;
      });
      // On the same connection, so the server has taken in the calls above first.
      const complete = session.request({
        ":method": "POST",
        ":path": "/toolruntime.v1.RegistryService/ListTools",
        "content-type": "application/json",
      });
      const chunks: Buffer[] = [];
      complete.on("data", (chunk: Buffer) => chunks.push(chunk));
      const responded = once(complete, "response") as Promise<[http2.IncomingHttpHeaders]>;
      const ended = once(complete, "end");
      complete.end("{}");
      const [headers] = await responded;
      await ended;
      expect(headers[":status"]).to.equal(200);
      expect(Buffer.concat(chunks).toString()).to.contain('"name":"builtin.echo"');
      // The limit is the server's, both ports': the gRPC port has its slots too.
      const listed = await grpcJs.client.listTools({});
      expect(listed.tools.map((tool) => tool.name)).to.include("builtin.echo");
      for (const stream of withheld) stream.close(http2.constants.NGHTTP2_CANCEL);
    } finally {
      grpcJs.close();
      session.destroy();
      await small.close(0);
    }
  });

  it("advertises at most 100 concurrent streams per HTTP/2 connection on both ports by default", async () => {
    for (const url of [server.httpUrl, `http://${server.grpcAddress}`]) {
      const session = http2.connect(url);
      try {
        await once(session, "remoteSettings");
        expect(session.remoteSettings.maxConcurrentStreams, url).to.equal(100);
      } finally {
        session.close();
      }
    }
  });

  it("holds the limit on the HTTP port under 4 HTTP/2 connections × 75 calls, and health answers in under 1 s", async () => {
    await flood(server.httpUrl, 4, 75);
  });

  it("holds the limit on the gRPC port under 4 HTTP/2 connections × 75 calls, and health answers in under 1 s", async () => {
    await flood(`http://${server.grpcAddress}`, 4, 75);
  });

  describe("refusal on every protocol", () => {
    const release = new AbortController();
    setMaxListeners(0, release.signal);
    let held: Promise<unknown>[] = [];

    before(async () => {
      // Fill every slot with calls that wait until they are released.
      const runner = createClient(
        RunnerService,
        createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "2", useBinaryFormat: true }),
      );
      const started: Promise<void>[] = [];
      held = Array.from({ length: limit }, () => {
        let markStarted: () => void = () => undefined;
        started.push(new Promise<void>((resolve) => (markStarted = resolve)));
        return (async () => {
          for await (const response of runner.runTool(
            { toolName: "test.wait_for_cancel", inputs: {} },
            { signal: release.signal },
          )) {
            if (response.event?.event.case === "progress") markStarted();
          }
        })().catch(() => undefined);
      });
      await Promise.all(started);
    });
    after(async () => {
      release.abort();
      await Promise.all(held);
    });

    const transports = {
      "grpc-js on the gRPC port": () => undefined,
      "gRPC on the HTTP port": () => createGrpcTransport({ baseUrl: server.httpUrl }),
      "Connect binary over HTTP/2": () =>
        createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "2", useBinaryFormat: true }),
      "Connect JSON over HTTP/1.1": () => createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }),
      "gRPC-Web over HTTP/1.1": () => createGrpcWebTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }),
    };
    for (const [name, makeTransport] of Object.entries(transports)) {
      it(`refuses unary and streaming calls beyond the limit over ${name} with RESOURCE_EXHAUSTED and a ToolError`, async () => {
        const transport = makeTransport();
        const grpcJs = transport ? undefined : createGrpcJsClient(RunnerService, server.grpcAddress);
        const runner = transport ? createClient(RunnerService, transport) : grpcJs!.client;
        try {
          await expectToolError(
            runner.executeTool({ toolName: "builtin.echo", inputs: {} }),
            Code.ResourceExhausted,
            "ResourceExhaustedError",
            refusalMessage(limit),
          );
          await expectToolError(
            (async () => {
              for await (const response of runner.runTool({ toolName: "builtin.echo", inputs: {} })) void response;
            })(),
            Code.ResourceExhausted,
            "ResourceExhaustedError",
            refusalMessage(limit),
          );
        } finally {
          grpcJs?.close();
        }
      });
    }

    it("still answers /healthz, /readyz and /metrics while full", async () => {
      for (const path of ["/healthz", "/readyz", "/metrics"]) {
        const response = await fetch(`${server.httpUrl}${path}`);
        expect(response.status, path).to.equal(200);
        await response.text();
      }
    });
  });
});

describe("Connection bound over the wire", () => {
  let server: RunningServer;

  before(async () => {
    server = await startTestServer({ connection: { maxConnections: 2 } });
  });
  after(async () => {
    await server.close(0);
  });

  for (const port of ["HTTP", "gRPC"] as const) {
    it(`closes a connection beyond maxConnections on the ${port} port and keeps the others`, async () => {
      const address = port === "HTTP" ? new URL(server.httpUrl) : new URL(`http://${server.grpcAddress}`);
      const open = (): Promise<net.Socket> =>
        new Promise((resolve, reject) => {
          const socket = net.connect(Number(address.port), address.hostname, () => resolve(socket));
          socket.once("error", reject);
        });
      const kept = [await open(), await open()];
      // The server has accepted both once a third connection is seen: it is closed at once.
      const third = await open().catch(() => undefined);
      if (third) await new Promise((resolve) => third.once("close", resolve));
      try {
        for (const socket of kept) expect(socket.destroyed).to.equal(false);
      } finally {
        for (const socket of kept) socket.destroy();
      }
    });
  }
});
