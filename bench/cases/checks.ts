import { fromBinary, fromJsonString } from "@bufbuild/protobuf";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ExecuteToolResponseSchema,
  RunToolResponseSchema,
  type ExecuteToolResponse,
} from "../../gen/toolruntime/v1/runner_pb.js";
import { unframeMessages } from "../lib/grpc-frame.js";
import { replayHttp1, replayHttp2, type ReplayedResponse } from "../lib/replay.js";
import { runnerClient, type ClientProtocol } from "../lib/runner-clients.js";
import { noopToolName } from "./request-bodies.js";

/** What a check learned about one call of a case. */
export interface CheckResult {
  /** Messages (events) in one response: 1 for unary calls. */
  readonly messagesPerCall: number;
  /** The response message as the server encoded it (protobuf cases). */
  readonly responseMessage?: Buffer;
  /** The messages of a stream as the server encoded them, in order (RunTool). */
  readonly streamMessages?: readonly Buffer[];
}

/** The exact request h2load will send. */
export interface LoadRequest {
  readonly url: string;
  readonly headers: readonly string[];
  readonly body: Buffer;
}

function fail(what: string, response: ReplayedResponse, why: string): never {
  const preview = response.body.subarray(0, 300).toString("utf8");
  throw new Error(
    `${what}: ${why} (HTTP ${response.status}, trailers ${JSON.stringify(response.trailers)}) ${preview}`,
  );
}

function grpcStatusOf(response: ReplayedResponse): string | undefined {
  // A call that fails before any message may put grpc-status in the headers ("trailers-only").
  const status = response.trailers["grpc-status"] ?? response.headers["grpc-status"];
  return Array.isArray(status) ? status[0] : status;
}

function expectSuccess(what: string, response: ExecuteToolResponse | undefined): void {
  if (!response?.result?.success) {
    throw new Error(`${what}: the run did not succeed: ${JSON.stringify(response?.result?.error ?? response)}`);
  }
}

/** Activates the no-op tool in the default runner, as the ExecuteTool cases require. */
export async function activateNoop(baseUrl: string, protocol: ClientProtocol): Promise<void> {
  await runnerClient(baseUrl, protocol).activateTool({ toolName: noopToolName });
}

/**
 * Checks unary ExecuteTool on a gRPC port: a real connect-node gRPC client gets a successful
 * result, and the body h2load sends gets grpc-status 0 and a successful result.
 */
export async function checkGrpcExecute(baseUrl: string, load: LoadRequest): Promise<CheckResult> {
  expectSuccess("gRPC client", await runnerClient(baseUrl, "grpc").executeTool({ toolName: noopToolName, inputs: {} }));
  const replayed = await replayHttp2(load.url, load.headers, load.body);
  if (replayed.status !== 200 || grpcStatusOf(replayed) !== "0") fail("gRPC replay", replayed, "not grpc-status 0");
  const frames = unframeMessages(replayed.body);
  const frame = frames[0];
  if (frames.length !== 1 || frame === undefined) fail("gRPC replay", replayed, `${frames.length} messages`);
  expectSuccess("gRPC replay", fromBinary(ExecuteToolResponseSchema, frame.message));
  return { messagesPerCall: 1, responseMessage: Buffer.from(frame.message) };
}

/**
 * Checks unary ExecuteTool over the Connect protocol (binary or JSON): a real connect-node Connect
 * client gets a successful result, and so does the body h2load sends.
 */
export async function checkConnectExecute(
  baseUrl: string,
  protocol: Exclude<ClientProtocol, "grpc">,
  load: LoadRequest,
): Promise<CheckResult> {
  const client = runnerClient(baseUrl, protocol);
  expectSuccess(`${protocol} client`, await client.executeTool({ toolName: noopToolName, inputs: {} }));
  const replayed = await replayHttp2(load.url, load.headers, load.body);
  if (replayed.status !== 200) fail(`${protocol} replay`, replayed, "not HTTP 200");
  const response =
    protocol === "connect-proto"
      ? fromBinary(ExecuteToolResponseSchema, replayed.body)
      : fromJsonString(ExecuteToolResponseSchema, replayed.body.toString("utf8"));
  expectSuccess(`${protocol} replay`, response);
  return { messagesPerCall: 1 };
}

/**
 * Checks the RunTool stream on a gRPC port: a real client receives events ending with one
 * successful COMPLETED, and so does the body h2load sends (with grpc-status 0). Returns the number
 * of events per run and the replayed run's messages.
 */
export async function checkGrpcRunTool(baseUrl: string, load: LoadRequest): Promise<CheckResult> {
  const cases: string[] = [];
  for await (const message of runnerClient(baseUrl, "grpc").runTool({ toolName: noopToolName, inputs: {} })) {
    cases.push(message.event?.event.case ?? "none");
    const completed = message.event?.event.case === "completed" ? message.event.event.value : undefined;
    if (completed && !completed.result?.success)
      throw new Error(`RunTool client: run failed ${JSON.stringify(completed.result?.error)}`);
  }
  if (cases[cases.length - 1] !== "completed") throw new Error(`RunTool client: events ${cases.join(", ")}`);
  const replayed = await replayHttp2(load.url, load.headers, load.body);
  if (replayed.status !== 200 || grpcStatusOf(replayed) !== "0") fail("RunTool replay", replayed, "not grpc-status 0");
  const frames = unframeMessages(replayed.body);
  const events = frames.map((frame) => fromBinary(RunToolResponseSchema, frame.message).event);
  const last = events[events.length - 1]?.event;
  if (last?.case !== "completed" || !last.value.result?.success) {
    fail("RunTool replay", replayed, `the last of ${events.length} events is not a successful COMPLETED`);
  }
  if (events.length !== cases.length) {
    throw new Error(`RunTool: the client saw ${cases.length} events, the replay ${events.length}`);
  }
  return { messagesPerCall: events.length, streamMessages: frames.map((frame) => Buffer.from(frame.message)) };
}

/**
 * Checks an MCP server (the peer, or toolruntime's /mcp with `toolName` "builtin.noop"): the SDK's own client (initialize, then tools/call) gets a result that is
 * not an error, and the JSON-RPC body h2load sends gets a JSON-RPC result, not an error.
 */
export async function checkMcpCall(url: string, load: LoadRequest, toolName = "noop"): Promise<CheckResult> {
  const client = new McpClient({ name: "toolruntime-bench", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const result = await client.callTool({ name: toolName, arguments: {} });
    if (result.isError) throw new Error(`MCP client: tools/call failed: ${JSON.stringify(result)}`);
  } finally {
    await client.close();
  }
  const replayed = await replayHttp1(load.url, load.headers, load.body);
  if (replayed.status !== 200) fail("MCP replay", replayed, "not HTTP 200");
  // A JSON body, or an event stream whose last data line is the answer (the SDK's 2025-era stateless
  // serving, behind toolruntime's /mcp, answers with a stream).
  const text = replayed.body.toString("utf8");
  const json = text.trimStart().startsWith("{")
    ? text
    : (text
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .at(-1)
        ?.slice("data:".length) ?? "");
  const answer = JSON.parse(json) as { result?: { isError?: boolean }; error?: unknown };
  if (answer.error !== undefined || answer.result === undefined || answer.result.isError === true) {
    fail("MCP replay", replayed, "not a successful JSON-RPC result");
  }
  return { messagesPerCall: 1 };
}
