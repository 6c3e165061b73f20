import { create, toBinary } from "@bufbuild/protobuf";
import { spawn } from "node:child_process";
import { once } from "node:events";
import http2 from "node:http2";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { RunToolRequestSchema } from "../../gen/toolruntime/v1/runner_pb.js";

/** What a flood saw once every call beyond the ones the server holds was answered. */
export interface FloodReport {
  /** Calls that ended with a status, by gRPC code. */
  readonly codes: Record<string, number>;
  /** The distinct status messages of the ended calls. */
  readonly messages: string[];
  /** Calls still open (the server holds them). */
  readonly open: number;
}

/** A flood running in its own process, so that its client work does not slow the server's event loop. */
export interface Flood {
  /** Resolves once `total - expectedOpen` calls have a status. */
  readonly report: Promise<FloodReport>;
  /** Cancels the open calls and waits for the process to exit. */
  release(): Promise<void>;
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
): Flood {
  const child = spawn(process.execPath, [
    fileURLToPath(import.meta.url),
    url,
    String(connections),
    String(callsEach),
    toolName,
    String(expectedOpen),
  ]);
  const exited = once(child, "exit");
  let errors = "";
  child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  const report = new Promise<FloodReport>((resolve, reject) => {
    lines.once("line", (line) => resolve(JSON.parse(line) as FloodReport));
    void exited.then(() => reject(new Error(`the flood exited before its report: ${errors}`)));
  });
  return {
    report,
    async release() {
      child.stdin.end("release\n");
      await exited;
    },
  };
}

/** The child: floods, reports on stdout, then waits for "release" on stdin. */
async function runFlood(args: readonly string[]): Promise<void> {
  const [url = "", connections = "1", callsEach = "1", toolName = "", expectedOpen = "0"] = args;
  const message = toBinary(RunToolRequestSchema, create(RunToolRequestSchema, { toolName }));
  const frame = Buffer.alloc(5 + message.byteLength);
  frame.writeUInt32BE(message.byteLength, 1);
  frame.set(message, 5);
  const total = Number(connections) * Number(callsEach);
  const codes: Record<string, number> = {};
  const messages = new Set<string>();
  let ended = 0;
  let reported = false;
  const sessions = Array.from({ length: Number(connections) }, () => http2.connect(url));
  const streams: http2.ClientHttp2Stream[] = [];
  const onStatus = (headers: http2.IncomingHttpHeaders): void => {
    const code = headers["grpc-status"];
    if (code === undefined) return;
    codes[String(code)] = (codes[String(code)] ?? 0) + 1;
    messages.add(decodeURIComponent(String(headers["grpc-message"] ?? "")));
    ended += 1;
    if (!reported && ended === total - Number(expectedOpen)) {
      reported = true;
      process.stdout.write(`${JSON.stringify({ codes, messages: [...messages], open: total - ended })}\n`);
    }
  };
  for (const session of sessions) {
    session.on("error", () => undefined);
    for (let index = 0; index < Number(callsEach); index += 1) {
      const stream = session.request({
        ":method": "POST",
        ":path": "/toolruntime.v1.RunnerService/RunTool",
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("response", onStatus);
      stream.on("trailers", onStatus);
      stream.on("data", () => undefined);
      stream.on("error", () => undefined);
      stream.end(frame);
      streams.push(stream);
    }
  }
  for await (const line of createInterface({ input: process.stdin })) if (line === "release") break;
  for (const stream of streams) stream.close(http2.constants.NGHTTP2_CANCEL);
  for (const session of sessions) session.destroy();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runFlood(process.argv.slice(2));
