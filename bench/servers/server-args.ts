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
}

/** Reads `--host`, `--port`, `--path` and `--response-base64` from the command line. */
export function readServerArgs(argv: readonly string[] = process.argv.slice(2)): BenchServerArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "0" },
      path: { type: "string", default: "/toolruntime.v1.RunnerService/ExecuteTool" },
      "response-base64": { type: "string", default: "" },
    },
  });
  return {
    path: values.path,
    host: values.host,
    port: Number(values.port),
    response: Buffer.from(values["response-base64"], "base64"),
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
