import { create, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { spawn } from "node:child_process";
import { once } from "node:events";
import http2 from "node:http2";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { RunToolRequestSchema } from "../../gen/toolruntime/v1/runner_pb.js";

/** What a flood saw once every call beyond the ones the server holds was settled. */
export interface FloodReport {
  /** Calls that ended with a status, by gRPC code. */
  readonly codes: Record<string, number>;
  /** The distinct status messages of the ended calls. */
  readonly messages: string[];
  /**
   * Calls that ended without a gRPC status, by cause: `rst:N` for a stream reset with HTTP/2 error
   * code N (REFUSED_STREAM is 7), `goaway` for a stream the server's GOAWAY left unprocessed,
   * `error` for a connection that failed under the stream, `closed` for any other end.
   */
  readonly resets: Record<string, number>;
  /** Calls still open (the server holds them). */
  readonly open: number;
  /** Milliseconds from the first request to this report. */
  readonly settledMs: number;
}

/** A flood running in its own process, so that its client work does not slow the server's event loop. */
export interface Flood {
  /** Resolves once `total - expectedOpen` calls are settled (a status, or a reset). */
  readonly report: Promise<FloodReport>;
  /** Resolves once every call is settled (the held ones too), before any release. */
  readonly finished: Promise<FloodReport>;
  /** Resolves once the child has opened its connections and is about to send the calls. */
  readonly started: Promise<void>;
  /** Cancels the open calls and waits for the process to exit. */
  release(): Promise<void>;
}

/** What {@link startFlood} sends. */
export interface FloodOptions {
  /** Inputs of every RunTool call. Default: none. */
  readonly inputs?: JsonObject;
}

/**
 * Starts `connections` HTTP/2 connections to `url` (either port: raw gRPC over cleartext HTTP/2)
 * each opening `callsEach` RunTool calls of `toolName` at once, from a child process.
 */
export function startFlood(
  url: string,
  connections: number,
  callsEach: number,
  toolName: string,
  expectedOpen: number,
  options: FloodOptions = {},
): Flood {
  const child = spawn(process.execPath, [
    fileURLToPath(import.meta.url),
    url,
    String(connections),
    String(callsEach),
    toolName,
    String(expectedOpen),
    JSON.stringify(options.inputs ?? {}),
  ]);
  const exited = once(child, "exit");
  let errors = "";
  child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  let markStarted: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const reports: FloodReport[] = [];
  const waiting: { index: number; resolve: (report: FloodReport) => void }[] = [];
  lines.on("line", (line) => {
    if (line === "started") return markStarted();
    reports.push(JSON.parse(line) as FloodReport);
    for (const wait of waiting) if (reports[wait.index]) wait.resolve(reports[wait.index]!);
  });
  // The child reports twice when it expects calls to stay open (at the threshold, then when all
  // settled), once otherwise.
  const nthReport = (index: number): Promise<FloodReport> =>
    new Promise<FloodReport>((resolve, reject) => {
      waiting.push({ index, resolve });
      void exited.then(() => reject(new Error(`the flood exited before its report: ${errors}`)));
    });
  const report = nthReport(0);
  const finished = expectedOpen > 0 ? nthReport(1) : report;
  // Either may never be awaited.
  report.catch(() => undefined);
  finished.catch(() => undefined);
  return {
    report,
    finished,
    started,
    async release() {
      child.stdin.end("release\n");
      await exited;
    },
  };
}

/** The child: floods, reports on stdout, then waits for "release" on stdin. */
async function runFlood(args: readonly string[]): Promise<void> {
  const [url = "", connections = "1", callsEach = "1", toolName = "", expectedOpen = "0", inputs = "{}"] = args;
  const request = create(RunToolRequestSchema, { toolName, inputs: JSON.parse(inputs) as JsonObject });
  const message = toBinary(RunToolRequestSchema, request);
  const frame = Buffer.alloc(5 + message.byteLength);
  frame.writeUInt32BE(message.byteLength, 1);
  frame.set(message, 5);
  const total = Number(connections) * Number(callsEach);
  const codes: Record<string, number> = {};
  const resets: Record<string, number> = {};
  const messages = new Set<string>();
  let settled = 0;
  let startedAt = 0;
  let released = false;
  const write = (): void => {
    const settledMs = Math.round(performance.now() - startedAt);
    process.stdout.write(
      `${JSON.stringify({ codes, messages: [...messages], resets, open: total - settled, settledMs })}\n`,
    );
  };
  const settle = (): void => {
    settled += 1;
    if (settled === total - Number(expectedOpen)) write();
    if (settled === total && Number(expectedOpen) > 0) write();
  };
  const sessions = Array.from({ length: Number(connections) }, () => http2.connect(url));
  await Promise.all(
    sessions.map((session) => {
      session.on("error", () => undefined);
      return once(session, "connect").catch(() => undefined);
    }),
  );
  process.stdout.write("started\n");
  startedAt = performance.now();
  const streams: http2.ClientHttp2Stream[] = [];
  for (const session of sessions) {
    for (let index = 0; index < Number(callsEach); index += 1) {
      let done = false;
      const onStatus = (headers: http2.IncomingHttpHeaders): void => {
        const code = headers["grpc-status"];
        if (code === undefined || done) return;
        done = true;
        codes[String(code)] = (codes[String(code)] ?? 0) + 1;
        messages.add(decodeURIComponent(String(headers["grpc-message"] ?? "")));
        settle();
      };
      let cause = "closed";
      const stream = session.request({
        ":method": "POST",
        ":path": "/toolruntime.v1.RunnerService/RunTool",
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("response", onStatus);
      stream.on("trailers", onStatus);
      stream.on("data", () => undefined);
      stream.on("error", (error: NodeJS.ErrnoException) => {
        cause = error.code === "ERR_HTTP2_GOAWAY_SESSION" ? "goaway" : "error";
      });
      stream.on("close", () => {
        if (done || released) return;
        done = true;
        const rstCode = stream.rstCode ?? http2.constants.NGHTTP2_NO_ERROR;
        if (rstCode !== http2.constants.NGHTTP2_NO_ERROR && cause !== "goaway") cause = `rst:${rstCode}`;
        resets[cause] = (resets[cause] ?? 0) + 1;
        settle();
      });
      stream.end(frame);
      streams.push(stream);
    }
  }
  for await (const line of createInterface({ input: process.stdin })) if (line === "release") break;
  released = true;
  for (const stream of streams) stream.close(http2.constants.NGHTTP2_CANCEL);
  for (const session of sessions) session.destroy();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runFlood(process.argv.slice(2));
