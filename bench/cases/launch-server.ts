import { fileURLToPath } from "node:url";
import { startServerProcess, type ServerProcess } from "../lib/child-process.js";
import { readyPort } from "../servers/server-args.js";

/** The servers a server-bound case can run against. */
export type ServerKind = "toolruntime" | "grpc-echo" | "connect-echo" | "mcp-noop";

/** A server running in its own process, with the base URL of each port it serves. */
export interface LaunchedServer {
  readonly process: ServerProcess;
  /** Native gRPC port (toolruntime, grpc-echo). */
  readonly grpcUrl?: string;
  /** HTTP port: Connect (toolruntime, connect-echo) or MCP (mcp-noop). */
  readonly httpUrl?: string;
}

/** Options of {@link launchServer}. */
export interface LaunchOptions {
  /** The response the echo servers answer with: a real ExecuteToolResponse, protobuf binary. */
  readonly echoResponse?: Buffer;
  /** Extra node flags, e.g. `--cpu-prof`. */
  readonly nodeFlags?: readonly string[];
}

const script = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url));
const toolruntimeMain = script("../../src/main.js");
const benchServers: Record<Exclude<ServerKind, "toolruntime">, string> = {
  "grpc-echo": script("../servers/grpc-echo-server.js"),
  "connect-echo": script("../servers/connect-echo-server.js"),
  "mcp-noop": script("../servers/mcp-noop-server.js"),
};

function addressAfter(stdout: string, label: string): string | undefined {
  return stdout.match(new RegExp(`${label}\\s+(\\S+)`))?.[1];
}

/** Starts a fresh server process of `kind` on free ports and waits until it serves. */
export async function launchServer(kind: ServerKind, options: LaunchOptions = {}): Promise<LaunchedServer> {
  const nodeFlags = options.nodeFlags ?? [];
  if (kind === "toolruntime") {
    const process = await startServerProcess(
      "node",
      [...nodeFlags, toolruntimeMain, "--grpc-port", "0", "--http-port", "0", "--log-level", "warn"],
      { isReady: (stdout) => /tools:/.test(stdout) },
    );
    const grpc = addressAfter(process.stdout(), "gRPC:");
    const http = addressAfter(process.stdout(), "Connect/gRPC-Web:");
    if (!grpc || !http) {
      await process.stop();
      throw new Error(`toolruntime printed no addresses: ${process.stdout()}`);
    }
    return { process, grpcUrl: `http://${grpc}`, httpUrl: http };
  }
  const args = [...nodeFlags, benchServers[kind]];
  if (options.echoResponse) args.push("--response-base64", options.echoResponse.toString("base64"));
  const process = await startServerProcess("node", args, { isReady: (stdout) => readyPort(stdout) !== undefined });
  const url = `http://127.0.0.1:${readyPort(process.stdout()) ?? 0}`;
  return kind === "grpc-echo" ? { process, grpcUrl: url } : { process, httpUrl: url };
}
