import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { serverNodeFlags } from "../../src/server-node-flags.js";

/** A server started as `npm start` runs it (or by another command), once it printed both addresses. */
export interface MainProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** "host:port" of the gRPC port. */
  readonly grpcAddress: string;
  /** "http://host:port" of the HTTP port. */
  readonly httpUrl: string;
  /** Resolves with the exit code; listened for from the start, so an early exit is not missed. */
  readonly exited: Promise<number | null>;
  /** Everything it wrote to stdout and stderr so far. */
  readonly output: () => string;
}

/** How to start the server: the command and its first arguments, and the working directory. */
export interface MainProcessOptions {
  /** Default: this checkout's server, `node dist/src/main.js`. */
  readonly command?: readonly [string, ...string[]];
  readonly cwd?: string;
}

/** Starts the server command on free ports with `args`; rejects if it exits before serving. */
export async function startMainProcess(
  args: readonly string[],
  options: MainProcessOptions = {},
): Promise<MainProcess> {
  // As npm start runs it: with the Node flags the server ships with.
  const [command, ...commandArgs] = options.command ?? [process.execPath, ...serverNodeFlags, "dist/src/main.js"];
  const child = spawn(
    command,
    [...commandArgs, "--grpc-port", "0", "--http-port", "0", "--log-level", "warn", ...args],
    options.cwd === undefined ? {} : { cwd: options.cwd },
  );
  const exited = (once(child, "exit") as Promise<[number | null]>).then(([code]) => code);
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const addresses = await new Promise<{ grpcAddress: string; httpUrl: string }>((resolve, reject) => {
    child.stdout.on("data", () => {
      const grpc = /gRPC: +(\S+)/.exec(output)?.[1];
      const http = /Connect\/gRPC-Web: (http:\/\/\S+)/.exec(output)?.[1];
      if (grpc && http && output.includes("tools:")) resolve({ grpcAddress: grpc, httpUrl: http });
    });
    void exited.then((code) => reject(new Error(`exited with ${code}: ${output}`)));
  });
  return { child, ...addresses, exited, output: () => output };
}
