import { Code, type ConnectError } from "@connectrpc/connect";
import { ToolErrorSchema } from "../../gen/toolruntime/v1/tool_pb.js";

const statusNames: Readonly<Record<Code, string>> = {
  [Code.Canceled]: "CANCELLED",
  [Code.Unknown]: "UNKNOWN",
  [Code.InvalidArgument]: "INVALID_ARGUMENT",
  [Code.DeadlineExceeded]: "DEADLINE_EXCEEDED",
  [Code.NotFound]: "NOT_FOUND",
  [Code.AlreadyExists]: "ALREADY_EXISTS",
  [Code.PermissionDenied]: "PERMISSION_DENIED",
  [Code.ResourceExhausted]: "RESOURCE_EXHAUSTED",
  [Code.FailedPrecondition]: "FAILED_PRECONDITION",
  [Code.Aborted]: "ABORTED",
  [Code.OutOfRange]: "OUT_OF_RANGE",
  [Code.Unimplemented]: "UNIMPLEMENTED",
  [Code.Internal]: "INTERNAL",
  [Code.Unavailable]: "UNAVAILABLE",
  [Code.DataLoss]: "DATA_LOSS",
  [Code.Unauthenticated]: "UNAUTHENTICATED",
};

/** The canonical gRPC name of a status code, for example "NOT_FOUND". */
export function grpcStatusName(code: Code): string {
  return statusNames[code] ?? `CODE_${String(code)}`;
}

/**
 * Describes a failed call for stderr: the status code name, the server's message, the ToolError's
 * error_type and tool decoded from the status details, and a hint when the fix is on the client.
 */
export function describeRpcError(error: ConnectError, call: string, address: string): string {
  const lines = [`toolruntime: ${call} on "${address}" failed with ${grpcStatusName(error.code)}: ${error.rawMessage}`];
  const [toolError] = error.findDetails(ToolErrorSchema);
  if (toolError !== undefined) {
    lines.push(`  error type: ${toolError.errorType}`);
    if (toolError.toolName !== "") lines.push(`  tool: ${toolError.toolName}`);
  }
  const hint = hintFor(error.code, address);
  if (hint !== undefined) lines.push(`  hint: ${hint}`);
  return `${lines.join("\n")}\n`;
}

function hintFor(code: Code, address: string): string | undefined {
  switch (code) {
    case Code.Unavailable:
      return `check that a toolruntime server listens on "${address}" (start one with "toolruntime"), or pass --address HOST:PORT; use the --tls-* flags if it serves TLS`;
    case Code.Unauthenticated:
    case Code.PermissionDenied:
      return "pass a valid token with --token or TOOLRUNTIME_TOKEN";
    default:
      return undefined;
  }
}
