import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { ExecuteToolRequestSchema, RunToolRequestSchema } from "../../gen/toolruntime/v1/runner_pb.js";
import { frameMessage } from "../lib/grpc-frame.js";

/** The tool every server-bound case runs. */
export const noopToolName = "builtin.noop";

const executeRequest = create(ExecuteToolRequestSchema, { toolName: noopToolName, inputs: {} });

/** The request bodies h2load sends, each encoded once before the load. */
export const requestBodies = {
  /** gRPC: one length-prefixed ExecuteToolRequest. */
  grpcExecute: frameMessage(toBinary(ExecuteToolRequestSchema, executeRequest)),
  /** Connect unary, binary: the bare ExecuteToolRequest. */
  connectProtoExecute: Buffer.from(toBinary(ExecuteToolRequestSchema, executeRequest)),
  /** Connect unary, JSON: the ExecuteToolRequest as JSON. */
  connectJsonExecute: Buffer.from(toJsonString(ExecuteToolRequestSchema, executeRequest)),
  /** gRPC: one length-prefixed RunToolRequest for the whole lifecycle stream. */
  grpcRunTool: frameMessage(
    toBinary(RunToolRequestSchema, create(RunToolRequestSchema, { toolName: noopToolName, inputs: {} })),
  ),
  /** MCP: a JSON-RPC `tools/call` of the peer's no-op tool. */
  mcpCall: Buffer.from(
    JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "noop", arguments: {} } }),
  ),
  /** MCP: a JSON-RPC `tools/call` of toolruntime's builtin.noop through its /mcp gateway. */
  mcpCallNoop: Buffer.from(
    JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: noopToolName, arguments: {} } }),
  ),
} as const;

/** Headers of a gRPC call, as h2load sends them. */
export const grpcHeaders = ["content-type: application/grpc", "te: trailers"] as const;
/** Headers of a Connect unary call in binary. */
export const connectProtoHeaders = ["content-type: application/proto"] as const;
/** Headers of a Connect unary call in JSON. */
export const connectJsonHeaders = ["content-type: application/json"] as const;
/** Headers of an MCP Streamable HTTP POST. */
export const mcpHeaders = ["content-type: application/json", "accept: application/json, text/event-stream"] as const;
