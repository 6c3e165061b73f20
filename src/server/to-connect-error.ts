import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { ToolErrorSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, isToolRuntimeError, type ErrorTypeName, type StatusCode } from "../errors/tool-runtime-error.js";

const codes: Record<StatusCode, Code> = {
  CANCELLED: Code.Canceled,
  INVALID_ARGUMENT: Code.InvalidArgument,
  DEADLINE_EXCEEDED: Code.DeadlineExceeded,
  NOT_FOUND: Code.NotFound,
  ALREADY_EXISTS: Code.AlreadyExists,
  PERMISSION_DENIED: Code.PermissionDenied,
  UNAUTHENTICATED: Code.Unauthenticated,
  RESOURCE_EXHAUSTED: Code.ResourceExhausted,
  FAILED_PRECONDITION: Code.FailedPrecondition,
  OUT_OF_RANGE: Code.OutOfRange,
  UNAVAILABLE: Code.Unavailable,
  INTERNAL: Code.Internal,
};

// error_type for statuses that the transport raised rather than the service.
const errorTypesByCode: Partial<Record<Code, ErrorTypeName>> = {
  [Code.Canceled]: ErrorType.Cancelled,
  [Code.DeadlineExceeded]: ErrorType.Timeout,
  [Code.ResourceExhausted]: ErrorType.ResourceExhausted,
  [Code.InvalidArgument]: ErrorType.InvalidRequest,
  [Code.Unavailable]: ErrorType.Unavailable,
};

/**
 * The one place that turns what a service threw into an RPC status (DESIGN.md §5): a domain error
 * keeps its code and message; a transport error keeps its code; anything else is a bug, answered
 * with INTERNAL and a generic message while the cause goes to the log. Every result carries a
 * ToolError detail, and no message echoes more than {@link maxEchoBytes} of what a client sent.
 */
export function toConnectError(thrown: unknown, logger: Logger, toolName = ""): ConnectError {
  if (isToolRuntimeError(thrown)) {
    return withToolError(thrown.details, codes[thrown.code], thrown.errorType, thrown.toolName, thrown.retryAfterMs);
  }
  const [toolError] = thrown instanceof ConnectError ? thrown.findDetails(ToolErrorSchema) : [];
  // An INTERNAL error made here already (only this module gives a ConnectError a ToolError): its
  // cause was logged under the reference its message names, which must stay the one the client
  // gets. A call's error passes here more than once (the call pipeline, then the gRPC adapter).
  if (thrown instanceof ConnectError && toolError && thrown.code === Code.Internal) return thrown;
  if (thrown instanceof ConnectError && thrown.code !== Code.Internal && thrown.code !== Code.Unknown) {
    if (toolError) {
      if (Buffer.byteLength(thrown.rawMessage) <= maxEchoBytes && Buffer.byteLength(toolError.toolName) <= maxEchoBytes)
        return thrown;
      return withToolError(
        thrown.rawMessage,
        thrown.code,
        toolError.errorType as ErrorTypeName,
        toolError.toolName,
        toolError.retryAfterMs,
      );
    }
    const errorType = errorTypesByCode[thrown.code] ?? ErrorType.InvalidRequest;
    return withToolError(thrown.rawMessage, thrown.code, errorType, toolName);
  }
  const reference = randomUUID();
  logger.error({ err: thrown, reference }, "internal error");
  return withToolError(
    `internal error (reference ${reference}): see the server log`,
    Code.Internal,
    ErrorType.Internal,
    toolName,
  );
}

/**
 * The most an error's message (and its ToolError's `details` and `tool_name`) carries, in UTF-8
 * bytes: a message quoting a client's input (a schema, a name) stays far below the header limits
 * of gRPC clients (8 KiB of metadata by default), since it travels in `grpc-message` and twice in
 * `grpc-status-details-bin`.
 */
export const maxEchoBytes = 1024;

/** `text` cut to at most {@link maxEchoBytes} UTF-8 bytes, on a character boundary, ending in "…". */
function bounded(text: string): string {
  if (Buffer.byteLength(text) <= maxEchoBytes) return text;
  const ellipsis = "…";
  let kept = "";
  let bytes = Buffer.byteLength(ellipsis);
  for (const character of text) {
    bytes += Buffer.byteLength(character);
    if (bytes > maxEchoBytes) break;
    kept += character;
  }
  return kept + ellipsis;
}

function withToolError(
  unboundedDetails: string,
  code: Code,
  errorType: ErrorTypeName,
  unboundedToolName: string,
  retryAfterMs = 0,
): ConnectError {
  const details = bounded(unboundedDetails);
  const toolName = bounded(unboundedToolName);
  return new ConnectError(details, code, undefined, [
    { desc: ToolErrorSchema, value: create(ToolErrorSchema, { toolName, errorType, details, retryAfterMs }) },
  ]);
}
