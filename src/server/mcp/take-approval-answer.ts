import { Code } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Identity } from "../../auth/permissions.js";
import { invalidRequest } from "../../errors/tool-runtime-error.js";
import type { ToolRuntime } from "../../runtime.js";
import { decideFromMcp, readApprovalAnswer } from "./mcp-approval.js";
import type { ApprovalTarget } from "./mcp-approval-tokens.js";
import { codeOfJsonRpcError, okCode } from "./mcp-request-outcome.js";
import { toMcpError } from "./to-mcp-error.js";

/** How the endpoint answers the POST that carried a client's answer. */
export interface ApprovalAnswerReply {
  /** 202 when taken (decided, or moot: decided before), or the status of the refusal. */
  readonly status: number;
  /** The status code of the outcome (0 for OK). */
  readonly code: number;
  /** The JSON-RPC error of a refusal. */
  readonly error?: { readonly code: number; readonly message: string; readonly data?: unknown };
}

/**
 * Takes a 2025-era client's answer to an approval question: the JSON-RPC response to the
 * `elicitation/create` request whose id named `target` (see toApprovalRequestId). It arrives in a
 * POST of its own, on any replica, and is decided through decideFromMcp as `caller`'s decision,
 * with the same checks as ApproveExecution; the call that asked follows the run and answers with
 * its result. An error response (the client could not ask) decides nothing: the run waits for
 * ApproveExecution or its approval timeout.
 */
export async function takeApprovalAnswer(
  runtime: ToolRuntime,
  caller: Identity,
  target: ApprovalTarget,
  message: { readonly result?: unknown; readonly error?: unknown },
  allowSelfApproval: boolean,
  logger: Logger,
): Promise<ApprovalAnswerReply> {
  if (message.error !== undefined) return { status: 202, code: okCode };
  let toolName = "";
  try {
    const answer = readApprovalAnswer(message.result);
    if (answer === undefined) {
      throw invalidRequest(
        `the answer to the approval question of execution "${target.executionId}" is not an elicitation result: send { action, content }`,
      );
    }
    const record = await runtime.executions.getRun(target.executionId);
    toolName = record.toolName;
    await decideFromMcp(runtime.executions, caller, record, target.inputsDigest, answer, allowSelfApproval);
    return { status: 202, code: okCode };
  } catch (error) {
    const refusal = toMcpError(error, logger, toolName);
    const code = codeOfJsonRpcError(refusal);
    return {
      status: httpStatusOf(code),
      code,
      error: { code: refusal.code, message: refusal.message, data: refusal.data },
    };
  }
}

function httpStatusOf(code: Code): number {
  switch (code) {
    case Code.InvalidArgument:
      return 400;
    case Code.PermissionDenied:
      return 403;
    case Code.NotFound:
      return 404;
    case Code.FailedPrecondition:
      return 409;
    default:
      return 500;
  }
}
