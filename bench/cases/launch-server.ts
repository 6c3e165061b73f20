import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serverNodeFlags } from "../../src/server-node-flags.js";
import { startServerProcess, type ServerProcess } from "../lib/child-process.js";
import { readyPort } from "../servers/server-args.js";

/** The servers a server-bound case can run against. */
export type ServerKind = "toolruntime" | "grpc-echo" | "connect-echo" | "mcp-noop";

/** A server running in its own process, with the base URL of each port it serves. */
export interface LaunchedServer {
  readonly process: ServerProcess;
  /** Native gRPC port (toolruntime, grpc-echo). */
  readonly grpcUrl?: string;
  /** HTTP port: Connect (toolruntime, connect-echo) or MCP (mcp-noop); toolruntime's serves /metrics. */
  readonly httpUrl?: string;
  /** The file the toolruntime's stdout (its banner and log) goes to, in a directory removed at stop. */
  readonly logFile?: string;
  /** Stops the server (SIGTERM, then SIGKILL after `graceMs`, default 3 s) and removes its log. */
  readonly stop: (graceMs?: number) => Promise<void>;
}

/** Options of {@link launchServer}. */
export interface LaunchOptions {
  /** The response the echo servers answer with: a real response message, protobuf binary. */
  readonly echoResponse?: Buffer;
  /** The messages of the grpc-echo server's RunTool stream: a real RunTool stream's events. */
  readonly echoStream?: readonly Buffer[];
  /** The one unary path the grpc-echo server answers; default RunnerService/ExecuteTool. */
  readonly echoPath?: string;
  /** Extra node flags, e.g. `--cpu-prof` (the toolruntime gets them after the flags it ships with). */
  readonly nodeFlags?: readonly string[];
}

const script = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url));
const toolruntimeMain = script("../../src/main.js");
const benchServers: Record<Exclude<ServerKind, "toolruntime">, string> = {
  "grpc-echo": script("../servers/grpc-echo-server.js"),
  "connect-echo": script("../servers/connect-echo-server.js"),
  "mcp-noop": script("../servers/mcp-noop-server.js"),
};

/**
 * The toolruntime's command-line arguments in the bench: free ports, nothing else. Every other
 * setting is the default as shipped, the log level too (info: a line per call and per run, and an
 * audit record per run, all on stdout).
 */
export const toolruntimeArgs = ["--grpc-port", "0", "--http-port", "0"] as const;

/** This process's environment without the toolruntime's settings (TOOLRUNTIME_*), so none leaks in. */
function defaultEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TOOLRUNTIME_")));
}

function addressAfter(stdout: string, label: string): string | undefined {
  return stdout.match(new RegExp(`${label}\\s+(\\S+)`))?.[1];
}

async function launchToolruntime(options: LaunchOptions): Promise<LaunchedServer> {
  const logDir = await mkdtemp(join(tmpdir(), "toolruntime-bench-log-"));
  const logFile = join(logDir, "stdout.log");
  const removeLog = (): Promise<void> => rm(logDir, { recursive: true, force: true });
  let process: ServerProcess;
  try {
    // As shipped: with the Node flags `npm start` passes.
    const nodeFlags = [...serverNodeFlags, ...(options.nodeFlags ?? [])];
    process = await startServerProcess("node", [...nodeFlags, toolruntimeMain, ...toolruntimeArgs], {
      isReady: (stdout) => /\n {2}tools:.*\n/.test(stdout),
      stdoutFile: logFile,
      env: defaultEnvironment(),
    });
  } catch (error) {
    await removeLog();
    throw error;
  }
  const stop = async (graceMs?: number): Promise<void> => {
    await process.stop(graceMs);
    await removeLog();
  };
  const grpc = addressAfter(process.stdout(), "gRPC:");
  const http = addressAfter(process.stdout(), "Connect/gRPC-Web:");
  if (!grpc || !http) {
    const banner = process.stdout();
    await stop();
    throw new Error(`toolruntime printed no addresses: ${banner}`);
  }
  return { process, grpcUrl: `http://${grpc}`, httpUrl: http, logFile, stop };
}

/** Starts a fresh server process of `kind` on free ports and waits until it serves. */
export async function launchServer(kind: ServerKind, options: LaunchOptions = {}): Promise<LaunchedServer> {
  if (kind === "toolruntime") return launchToolruntime(options);
  const args = [...(options.nodeFlags ?? []), benchServers[kind]];
  if (options.echoResponse) args.push("--response-base64", options.echoResponse.toString("base64"));
  if (options.echoPath) args.push("--path", options.echoPath);
  if (options.echoStream?.length) {
    args.push("--stream-responses-base64", options.echoStream.map((message) => message.toString("base64")).join(","));
  }
  const process = await startServerProcess("node", args, { isReady: (stdout) => readyPort(stdout) !== undefined });
  const url = `http://127.0.0.1:${readyPort(process.stdout()) ?? 0}`;
  const stop = (graceMs?: number): Promise<void> => process.stop(graceMs);
  return kind === "grpc-echo" ? { process, grpcUrl: url, stop } : { process, httpUrl: url, stop };
}
