import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { expect } from "chai";
import { once } from "node:events";
import http2 from "node:http2";
import { Writable } from "node:stream";
import { pino, type Logger } from "pino";
import { RunnerService, RunToolRequestSchema } from "../../gen/toolruntime/v1/runner_pb.js";
import { create, toBinary } from "@bufbuild/protobuf";
import { startTestServer } from "../support/test-server.js";
import { testToolEvents } from "../support/test-tools.js";

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly rpc?: string;
  readonly code?: string;
}

/** A logger at the info level that keeps its lines, and resolves with the first RunTool call's line. */
function runToolCallLog(): { logger: Logger; callLogged: Promise<LogLine>; lines: LogLine[] } {
  const lines: LogLine[] = [];
  let markLogged: (line: LogLine) => void = () => undefined;
  const callLogged = new Promise<LogLine>((resolve) => (markLogged = resolve));
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split("\n")) {
        if (text === "") continue;
        const line = JSON.parse(text) as LogLine;
        lines.push(line);
        if (line.msg === "call" && line.rpc === "toolruntime.v1.RunnerService/RunTool") markLogged(line);
      }
      done();
    },
  });
  return { logger: pino({ level: "info" }, destination), callLogged, lines };
}

describe("Streams their client drops", () => {
  it("ends as CANCELLED a RunTool stream on the HTTP port whose client stopped reading, then reset it", async () => {
    const { logger, callLogged } = runToolCallLog();
    const server = await startTestServer({ logger });
    // A window of 1 KiB that the client never opens further: the server's write of the run's
    // events (about 400 KB) waits for a 'drain' that never comes.
    const session = http2.connect(server.httpUrl, { settings: { initialWindowSize: 1024 } });
    try {
      session.on("error", () => undefined);
      const chatty = once(testToolEvents, "chatty");
      const stream = session.request({
        ":method": "POST",
        ":path": "/toolruntime.v1.RunnerService/RunTool",
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("error", () => undefined);
      stream.pause();
      const request = toBinary(RunToolRequestSchema, create(RunToolRequestSchema, { toolName: "test.chatty" }));
      const frame = Buffer.alloc(5 + request.length);
      frame.writeUInt32BE(request.length, 1);
      frame.set(request, 5);
      stream.end(frame);
      await chatty;
      // The run ended in its turn, and its events were written then: the write now waits.
      await new Promise((resolve) => setImmediate(resolve));
      stream.close(http2.constants.NGHTTP2_CANCEL);
      expect((await callLogged).code).to.equal("CANCELLED");
    } finally {
      session.destroy();
      await server.close(0);
    }
  });

  for (const protocol of ["grpc", "connect"] as const) {
    it(`counts a unary ExecuteTool its client cancels over ${protocol} as CANCELLED, not OK`, async () => {
      const server = await startTestServer();
      try {
        const transport =
          protocol === "grpc"
            ? createGrpcTransport({ baseUrl: `http://${server.grpcAddress}` })
            : createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" });
        const runner = createClient(RunnerService, transport);
        await runner.activateTool({ toolName: "test.wait_for_cancel" });
        const leave = new AbortController();
        const waiting = once(testToolEvents, "waiting");
        const aborted = once(testToolEvents, "aborted");
        const call = runner.executeTool({ toolName: "test.wait_for_cancel" }, { signal: leave.signal }).then(
          () => 0,
          (error: unknown) => ConnectError.from(error).code as number,
        );
        await waiting;
        leave.abort();
        expect(await call).to.equal(Code.Canceled);
        // The run ends, and the call is counted, in the turn its handler saw the abort: before
        // the server reads the next request (the metrics').
        await aborted;
        const lines = (await (await fetch(`${server.httpUrl}/metrics`)).text())
          .split("\n")
          .filter((line) => line.startsWith("toolruntime_rpc_requests_total") && line.includes('method="ExecuteTool"'));
        expect(lines.some((line) => line.includes('code="CANCELLED"'))).to.equal(true, lines.join("\n"));
        expect(lines.some((line) => line.includes('code="OK"'))).to.equal(false, lines.join("\n"));
      } finally {
        await server.close(0);
      }
    });
  }

  for (const protocol of ["connect", "grpc_web"] as const) {
    it(`counts and logs a RunTool stream dropped over ${protocol} as CANCELLED, with no internal error`, async () => {
      // The call's log line is written once its stream is over on the server.
      const { logger, callLogged, lines } = runToolCallLog();
      const server = await startTestServer({ logger });
      try {
        const transport =
          protocol === "connect"
            ? createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" })
            : createGrpcWebTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" });
        const runner = createClient(RunnerService, transport);
        const leave = new AbortController();
        const aborted = once(testToolEvents, "aborted");
        const stream = (async () => {
          for await (const response of runner.runTool(
            { toolName: "test.wait_for_cancel", inputs: {} },
            { signal: leave.signal },
          )) {
            if (response.event?.event.case === "progress") leave.abort();
          }
        })().catch(() => undefined);
        await stream;
        await aborted;
        expect((await callLogged).code).to.equal("CANCELLED");
        expect(lines.filter((line) => line.level >= 50).map((line) => line.msg)).to.deep.equal([]);
        const metrics = await (await fetch(`${server.httpUrl}/metrics`)).text();
        const runToolLines = metrics
          .split("\n")
          .filter((line) => line.includes('method="RunTool"') && line.startsWith("toolruntime_rpc_requests_total"));
        expect(runToolLines.some((line) => line.includes('code="CANCELLED"'))).to.equal(true, runToolLines.join("\n"));
        expect(runToolLines.some((line) => line.includes('code="INTERNAL"'))).to.equal(false, runToolLines.join("\n"));
      } finally {
        await server.close(0);
      }
    });
  }
});
