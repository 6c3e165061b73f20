import {
  activateNoop,
  checkConnectExecute,
  checkGrpcExecute,
  checkGrpcRunTool,
  checkMcpCall,
  type CheckResult,
  type LoadRequest,
} from "./checks.js";
import type { H2loadRun } from "../lib/h2load.js";
import type { ServerKind } from "./launch-server.js";
import type { CounterScope } from "./server-counters.js";
import {
  connectJsonHeaders,
  connectProtoHeaders,
  grpcHeaders,
  mcpHeaders,
  noopToolName,
  requestBodies,
} from "./request-bodies.js";

/** The server-bound measurements, one server process each. */
export type VariantId =
  | "grpc-echo"
  | "grpc-echo-stream"
  | "toolruntime-grpc"
  | "connect-echo-proto"
  | "toolruntime-connect-proto"
  | "connect-echo-json"
  | "toolruntime-connect-json"
  | "toolruntime-runtool"
  | "mcp-noop"
  | "toolruntime-mcp";

/** One server under h2load load: what to start, what to send, how to check it answers correctly. */
export interface WireVariant {
  readonly id: VariantId;
  /** What the row shows, e.g. "toolruntime ExecuteTool, gRPC port". */
  readonly title: string;
  readonly server: ServerKind;
  /** Which of the server's ports the load goes to. */
  readonly port: "grpc" | "http";
  readonly path: string;
  readonly headers: readonly string[];
  readonly body: Buffer;
  /** HTTP/1.1 (the MCP SDK's transport) rather than HTTP/2. */
  readonly http1: boolean;
  /** h2load connections and requests in flight on each; their product is the concurrency. */
  readonly clients: number;
  readonly streamsPerClient: number;
  /**
   * The server's counters the window is checked against (toolruntime only: the baselines keep none);
   * see server-counters.ts.
   */
  readonly scope?: CounterScope;
  /** Readies the server (activation) and checks one call with a real client and with the load's body. */
  readonly check: (baseUrl: string, load: LoadRequest) => Promise<CheckResult>;
}

/** The h2load run of `variant` against `url` for a given duration: its body, headers and concurrency. */
export function loadRunOf(
  variant: WireVariant,
  url: string,
  files: { readonly bodyFile: string; readonly logFile: string },
): (durationS: number) => H2loadRun {
  return (durationS) => ({
    url,
    bodyFile: files.bodyFile,
    headers: variant.headers,
    clients: variant.clients,
    streamsPerClient: variant.streamsPerClient,
    durationS,
    http1: variant.http1,
    logFile: files.logFile,
  });
}

const executePath = "/toolruntime.v1.RunnerService/ExecuteTool";
const runToolPath = "/toolruntime.v1.RunnerService/RunTool";
// 64 calls in flight everywhere: 4 HTTP/2 connections of 16 streams, or 64 HTTP/1.1 connections.
const h2 = { http1: false, clients: 4, streamsPerClient: 16 } as const;
const h1 = { http1: true, clients: 64, streamsPerClient: 1 } as const;

function runnerScope(method: string, protocol: string): CounterScope {
  return { rpc: { service: "toolruntime.v1.RunnerService", method, protocol }, tool: noopToolName };
}

/** Every server-bound variant, baselines included. */
export const wireVariants: readonly WireVariant[] = [
  {
    id: "grpc-echo",
    title: "bare grpc-js echo (fixed ExecuteToolResponse)",
    server: "grpc-echo",
    port: "grpc",
    path: executePath,
    headers: grpcHeaders,
    body: requestBodies.grpcExecute,
    ...h2,
    check: (baseUrl, load) => checkGrpcExecute(baseUrl, load),
  },
  {
    id: "grpc-echo-stream",
    title: "bare grpc-js stream (a fixed RunTool stream's six events, call.write each)",
    server: "grpc-echo",
    port: "grpc",
    path: runToolPath,
    headers: grpcHeaders,
    body: requestBodies.grpcRunTool,
    ...h2,
    check: (baseUrl, load) => checkGrpcRunTool(baseUrl, load),
  },
  {
    id: "toolruntime-grpc",
    title: "toolruntime ExecuteTool builtin.noop, gRPC port",
    server: "toolruntime",
    port: "grpc",
    path: executePath,
    headers: grpcHeaders,
    body: requestBodies.grpcExecute,
    ...h2,
    scope: runnerScope("ExecuteTool", "grpc"),
    check: async (baseUrl, load) => {
      await activateNoop(baseUrl, "grpc");
      return checkGrpcExecute(baseUrl, load);
    },
  },
  {
    id: "connect-echo-proto",
    title: "bare connect-node echo, Connect binary",
    server: "connect-echo",
    port: "http",
    path: executePath,
    headers: connectProtoHeaders,
    body: requestBodies.connectProtoExecute,
    ...h2,
    check: (baseUrl, load) => checkConnectExecute(baseUrl, "connect-proto", load),
  },
  {
    id: "toolruntime-connect-proto",
    title: "toolruntime ExecuteTool, HTTP port, Connect binary",
    server: "toolruntime",
    port: "http",
    path: executePath,
    headers: connectProtoHeaders,
    body: requestBodies.connectProtoExecute,
    ...h2,
    scope: runnerScope("ExecuteTool", "connect"),
    check: async (baseUrl, load) => {
      await activateNoop(baseUrl, "connect-proto");
      return checkConnectExecute(baseUrl, "connect-proto", load);
    },
  },
  {
    id: "connect-echo-json",
    title: "bare connect-node echo, Connect JSON",
    server: "connect-echo",
    port: "http",
    path: executePath,
    headers: connectJsonHeaders,
    body: requestBodies.connectJsonExecute,
    ...h2,
    check: (baseUrl, load) => checkConnectExecute(baseUrl, "connect-json", load),
  },
  {
    id: "toolruntime-connect-json",
    title: "toolruntime ExecuteTool, HTTP port, Connect JSON",
    server: "toolruntime",
    port: "http",
    path: executePath,
    headers: connectJsonHeaders,
    body: requestBodies.connectJsonExecute,
    ...h2,
    scope: runnerScope("ExecuteTool", "connect"),
    check: async (baseUrl, load) => {
      await activateNoop(baseUrl, "connect-json");
      return checkConnectExecute(baseUrl, "connect-json", load);
    },
  },
  {
    id: "toolruntime-runtool",
    title: "toolruntime RunTool stream builtin.noop, gRPC port",
    server: "toolruntime",
    port: "grpc",
    path: runToolPath,
    headers: grpcHeaders,
    body: requestBodies.grpcRunTool,
    ...h2,
    scope: runnerScope("RunTool", "grpc"),
    check: (baseUrl, load) => checkGrpcRunTool(baseUrl, load),
  },
  {
    id: "mcp-noop",
    title: "MCP TypeScript SDK tools/call noop (stateless Streamable HTTP, HTTP/1.1)",
    server: "mcp-noop",
    port: "http",
    path: "/mcp",
    headers: mcpHeaders,
    body: requestBodies.mcpCall,
    ...h1,
    check: (baseUrl, load) => checkMcpCall(`${baseUrl}/mcp`, load),
  },
  {
    id: "toolruntime-mcp",
    title: "toolruntime tools/call builtin.noop through /mcp (stateless 2025-11-25, HTTP/1.1)",
    server: "toolruntime",
    port: "http",
    path: "/mcp",
    headers: mcpHeaders,
    body: requestBodies.mcpCallNoop,
    ...h1,
    scope: { tool: noopToolName },
    check: (baseUrl, load) => checkMcpCall(`${baseUrl}/mcp`, load, "builtin.noop"),
  },
];
