import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { connect, constants, createServer, type IncomingHttpHeaders } from "node:http2";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import {
  RegisterToolRequestSchema,
  RegisterToolResponseSchema,
  RegistryService,
} from "../../gen/toolruntime/v1/registry_pb.js";
import {
  ActivateToolRequestSchema,
  ExecuteToolRequestSchema,
  RunnerService,
} from "../../gen/toolruntime/v1/runner_pb.js";
import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { launchServer, type LaunchedServer } from "../../bench/cases/launch-server.js";
import { toolSpecFor } from "../../bench/inproc/tool-specs.js";
import { pathOf } from "../../bench/lib/grpc-bytes-client.js";
import { frameMessage } from "../../bench/lib/grpc-frame.js";
import { callOnce, inFlightOn, sendAll } from "../../bench/lib/http2-grpc-client.js";
import {
  openHttp2GrpcConnections,
  streamLimitOf,
  type Http2GrpcClients,
} from "../../bench/lib/http2-grpc-connections.js";
import { scrapeMetrics, valueOf } from "../../bench/lib/metrics-text.js";

const registerPath = pathOf(RegistryService.method.registerTool);
const executePath = pathOf(RunnerService.method.executeTool);
const activatePath = pathOf(RunnerService.method.activateTool);

function registerBody(spec: ToolSpec): Buffer {
  return Buffer.from(toBinary(RegisterToolRequestSchema, create(RegisterToolRequestSchema, { spec })));
}

function hostPort(url: string | undefined): string {
  if (!url) throw new Error("the server has no gRPC port");
  return url.replace(/^http:\/\//, "");
}

/** One call sent without the client under test: the response headers and whether they ended the stream. */
async function rawCall(address: string, path: string, body: Buffer) {
  const session = connect(`http://${address}`);
  try {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
    });
    stream.end(frameMessage(body));
    const [headers, flags] = (await once(stream, "response")) as [IncomingHttpHeaders, number];
    stream.resume();
    await once(stream, "close");
    return { headers, endedStream: (flags & constants.NGHTTP2_FLAG_END_STREAM) !== 0 };
  } finally {
    session.destroy();
  }
}

/** Waits until the server's metrics show `runs` executions in flight; throws after 10 s. */
async function runsInFlight(httpUrl: string, runs: number): Promise<void> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const running = valueOf(await scrapeMetrics(httpUrl), "toolruntime_executions_in_flight");
    if (running >= runs) return;
    if (performance.now() > deadline) throw new Error(`${running} of ${runs} runs in flight after 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("The bench's node:http2 gRPC client", function () {
  this.timeout(30_000);

  describe("against a bare grpc-echo server", () => {
    // Larger than HTTP/2's default 16 KiB frame, so every response spans several DATA frames (and
    // small enough for the server's command line, which carries it in base64).
    const response = randomBytes(60_000);
    let server: LaunchedServer;
    let clients: Http2GrpcClients;

    before(async () => {
      server = await launchServer("grpc-echo", { echoPath: registerPath, echoResponse: response });
      clients = await openHttp2GrpcConnections(hostPort(server.grpcUrl), 2);
    });
    after(async () => {
      clients?.close();
      await server?.stop();
    });

    it("reassembles every response that spans DATA frames, byte for byte", async () => {
      const bodies = Array.from({ length: 40 }, (_, index) => registerBody(toolSpecFor(index)));
      const sent = await sendAll(clients, registerPath, bodies, 8);
      expect(sent.failed).to.deep.equal([]);
      expect(sent.responses).to.have.length(40);
      for (const answer of sent.responses) expect(answer?.equals(response)).to.equal(true);
      expect(sent.elapsedMs).to.be.greaterThan(0);
      expect(sent.clientCpuMs).to.be.greaterThan(0);
    });

    it("reports a trailers-only UNIMPLEMENTED for a path the server does not serve", async () => {
      const path = "/toolruntime.v1.RegistryService/NoSuchMethod";
      const raw = await rawCall(hostPort(server.grpcUrl), path, Buffer.alloc(0));
      expect(raw.endedStream, "a trailers-only response").to.equal(true);
      expect(raw.headers["grpc-status"]).to.equal("12");

      const sent = await sendAll(clients, path, [Buffer.alloc(0)], 1);
      expect(sent.responses[0]).to.equal(undefined);
      expect(sent.failed).to.deep.equal([
        { index: 0, code: 12, details: `The server does not implement the method ${path}` },
      ]);
    });
  });

  describe("against a toolruntime", () => {
    let server: LaunchedServer;
    let clients: Http2GrpcClients;

    before(async () => {
      server = await launchServer("toolruntime");
      clients = await openHttp2GrpcConnections(hostPort(server.grpcUrl), 2);
    });
    after(async () => {
      clients?.close();
      await server?.stop();
    });

    it("decodes RegisterToolResponses of distinct tools, in the order of the bodies", async () => {
      const specs = Array.from({ length: 30 }, (_, index) => toolSpecFor(index));
      const sent = await sendAll(clients, registerPath, specs.map(registerBody), 4);
      expect(sent.failed).to.deep.equal([]);
      const names = sent.responses.map((bytes) => fromBinary(RegisterToolResponseSchema, bytes!).spec?.name);
      expect(names).to.deep.equal(specs.map((spec) => spec.name));
    });

    it("reports ALREADY_EXISTS, trailers-only, with the server's message for a name registered twice", async () => {
      const body = registerBody(toolSpecFor(1000));
      await callOnce(clients, registerPath, body);
      const raw = await rawCall(hostPort(server.grpcUrl), registerPath, body);
      expect(raw.endedStream, "a trailers-only response").to.equal(true);
      expect(raw.headers["grpc-status"]).to.equal("6");

      const sent = await sendAll(clients, registerPath, [body, registerBody(toolSpecFor(1001))], 2);
      expect(sent.failed).to.deep.equal([
        {
          index: 0,
          code: 6,
          details: `tool "${toolSpecFor(1000).name}" is already registered in registry "default": choose another name, or remove it first`,
        },
      ]);
      expect(sent.responses[1]).to.be.instanceOf(Buffer);
    });

    it("percent-decodes the message of INVALID_ARGUMENT for a name with a space and a non-ASCII letter", async () => {
      const spec = toolSpecFor(2000);
      spec.name = "Fs Réad";
      const error = await callOnce(clients, registerPath, registerBody(spec)).then(
        () => expect.fail("the call succeeded"),
        (rejection: { code: number; details: string }) => rejection,
      );
      expect(error.code).to.equal(3);
      expect(error.details).to.match(/^tool name "Fs Réad" is invalid: use 2 to 8 segments separated by "\."/);
    });

    it("keeps no more calls in flight on a connection than the server's stream limit (100 by default)", async () => {
      const connection = clients.connections[0]!;
      expect(streamLimitOf(connection)).to.equal(100);
      expect(inFlightOn(connection, 150)).to.equal(100);
      const specs = Array.from({ length: 300 }, (_, index) => toolSpecFor(3000 + index));
      const sent = await sendAll(clients, registerPath, specs.map(registerBody), 150);
      expect(sent.failed).to.deep.equal([]);
    });
  });

  describe("when the server goes away", () => {
    it("rejects opening connections to a port nobody listens on, naming the error", async () => {
      const peer = createServer();
      peer.listen(0, "127.0.0.1");
      await once(peer, "listening");
      const address = `127.0.0.1:${(peer.address() as AddressInfo).port}`;
      peer.close();
      await once(peer, "close");
      const error = await openHttp2GrpcConnections(address, 2).then(
        () => expect.fail("the connections opened"),
        (rejection: Error) => rejection,
      );
      expect(error.message).to.include("ECONNREFUSED");
    });

    it("fails every call in flight with UNAVAILABLE when the server process dies, and every later call at once", async () => {
      const server = await launchServer("toolruntime");
      const address = hostPort(server.grpcUrl);
      const clients = await openHttp2GrpcConnections(address, 2);
      try {
        const sleep = Buffer.from(
          toBinary(
            ExecuteToolRequestSchema,
            create(ExecuteToolRequestSchema, { toolName: "builtin.sleep", inputs: { ms: 600_000 } }),
          ),
        );
        const activate = create(ActivateToolRequestSchema, { toolName: "builtin.sleep" });
        await callOnce(clients, activatePath, Buffer.from(toBinary(ActivateToolRequestSchema, activate)));
        const pending = sendAll(clients, executePath, [sleep, sleep, sleep, sleep], 2);
        await runsInFlight(server.httpUrl!, 4);
        process.kill(server.process.pid, "SIGKILL");
        const sent = await pending;
        expect(sent.responses.filter((response) => response !== undefined)).to.deep.equal([]);
        expect(sent.failed.map((call) => call.index).sort()).to.deep.equal([0, 1, 2, 3]);
        for (const call of sent.failed) {
          expect(call.code).to.equal(14);
          expect(call.details).to.include(address);
        }

        const later = await sendAll(clients, executePath, [sleep, sleep], 2);
        expect(later.failed.map((call) => call.code)).to.deep.equal([14, 14]);
        expect(later.failed[0]?.details).to.include(address);
      } finally {
        clients.close();
        await server.stop();
      }
    });

    it("fails the calls a GOAWAY refused with UNAVAILABLE, naming its error code", async () => {
      // A peer that answers the first stream with GOAWAY(ENHANCE_YOUR_CALM, last stream 0): no
      // stream of the connection was or will be processed.
      const peer = createServer();
      peer.on("stream", (stream) => {
        stream.on("error", () => {}); // the refused stream's own reset, expected here
        stream.session?.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM, 0);
      });
      peer.listen(0, "127.0.0.1");
      await once(peer, "listening");
      const address = `127.0.0.1:${(peer.address() as AddressInfo).port}`;
      const clients = await openHttp2GrpcConnections(address, 1);
      try {
        const sent = await sendAll(clients, registerPath, [Buffer.alloc(3), Buffer.alloc(3), Buffer.alloc(3)], 3);
        expect(sent.failed.map((call) => call.code)).to.deep.equal([14, 14, 14]);
        for (const call of sent.failed) expect(call.details).to.include(`${address} sent GOAWAY (ENHANCE_YOUR_CALM`);
      } finally {
        clients.close();
        peer.close();
      }
    });
  });
});
