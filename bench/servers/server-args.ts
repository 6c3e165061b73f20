import { parseArgs } from "node:util";

/** Arguments every bench server takes: where to listen and the response body to answer with. */
export interface BenchServerArgs {
  /** The one unary method path the grpc-echo server answers (default RunnerService/ExecuteTool). */
  readonly path: string;
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** The response message, protobuf binary (empty when not given). */
  readonly response: Buffer;
  /** The server-streaming method path the grpc-echo server answers with `streamResponses`. */
  readonly streamPath: string;
  /** The messages of that stream, protobuf binary, in order (none when not given: no such method). */
  readonly streamResponses: readonly Buffer[];
}

/**
 * Reads `--host`, `--port`, `--path`, `--response-base64`, `--stream-path` and
 * `--stream-responses-base64` (messages separated by commas) from the command line.
 */
export function readServerArgs(argv: readonly string[] = process.argv.slice(2)): BenchServerArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "0" },
      path: { type: "string", default: "/toolruntime.v1.RunnerService/ExecuteTool" },
      "response-base64": { type: "string", default: "" },
      "stream-path": { type: "string", default: "/toolruntime.v1.RunnerService/RunTool" },
      "stream-responses-base64": { type: "string", default: "" },
    },
  });
  const streamed = values["stream-responses-base64"];
  return {
    path: values.path,
    host: values.host,
    port: Number(values.port),
    response: Buffer.from(values["response-base64"], "base64"),
    streamPath: values["stream-path"],
    streamResponses: streamed === "" ? [] : streamed.split(",").map((text) => Buffer.from(text, "base64")),
  };
}

/** Prints the line the bench waits for: `{"ready":true,"port":N}`. */
export function announceReady(port: number): void {
  process.stdout.write(`${JSON.stringify({ ready: true, port })}\n`);
}

/** The port in a bench server's ready line, or undefined while it has not printed it. */
export function readyPort(stdout: string): number | undefined {
  const line = stdout.split("\n").find((text) => text.startsWith('{"ready":true'));
  if (!line) return undefined;
  return (JSON.parse(line) as { port: number }).port;
}

/** Exits cleanly on SIGTERM and SIGINT after `close` finishes. */
export function exitOnSignals(close: () => Promise<void> | void): void {
  const stop = (): void => {
    void Promise.resolve(close()).finally(() => process.exit(0));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}
