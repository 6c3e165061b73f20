import { create } from "@bufbuild/protobuf";
import type { CallToolResult, InputRequiredResult } from "@modelcontextprotocol/server";
import { ExecutionOptionsSchema } from "../../../gen/toolruntime/v1/execution_pb.js";
import { isOwner } from "../../auth/execution-access.js";
import { ensureAllowed } from "../../auth/permissions.js";
import { ErrorType, invalidRequest, ToolRuntimeError } from "../../errors/tool-runtime-error.js";
import { inputsDigest } from "../../executions/inputs-digest.js";
import { checkToolName, ensure, quote } from "../../registry/names.js";
import type { ToolRuntime } from "../../runtime.js";
import { followMcpRun } from "./follow-mcp-run.js";
import { approvalInputKey, decideFromMcp, mayApproveOwnRun, readApprovalAnswer } from "./mcp-approval.js";
import { parseRequestState } from "./mcp-approval-tokens.js";
import { mcpMeta } from "./mcp-meta.js";
import type { McpToolCall } from "./mcp-tool-call.js";

/**
 * Runs a tools/call as an ordinary execution: the caller needs `execute` on the tool (and
 * `execute_unsafe` for an unsafe one, which also needs `_meta["io.toolruntime/acknowledge_unsafe"]`),
 * and the run goes through the execution manager like a RunTool (admission, approval, idempotency,
 * timeouts, retries, audit). When the request has a progress token, the run's progress, queueing,
 * approval and retries become progress notifications, numbered by event sequence. A cancelled or
 * dropped request cancels the run it started. When the run awaits approval, its caller may approve
 * it (the self-approval rule) and the client can be asked (`call.approval`), the client is asked
 * (see followMcpRun).
 * Throws (before the run starts) what the manager throws: INVALID_ARGUMENT, NOT_FOUND,
 * PERMISSION_DENIED, FAILED_PRECONDITION, RESOURCE_EXHAUSTED.
 */
export async function callMcpTool(
  runtime: ToolRuntime,
  call: McpToolCall,
): Promise<CallToolResult | InputRequiredResult> {
  const { executions, runners } = runtime;
  const name = call.name;
  ensure(checkToolName(name));
  if (runtime.stores.tools.shared) await runtime.stores.tools.view("");
  ensureAllowed(call.caller, "execute", name);
  const capabilities = runners.registry.get(name)?.spec.capabilities;
  if (capabilities?.unsafe) ensureAllowed(call.caller, "execute_unsafe", name);
  if (call.retry) return await resumeMcpCall(runtime, call, call.retry);
  const meta = call.meta ?? {};
  const { record, deduplicated } = await executions.startRun({
    runner: runners.createPrivate(),
    requireActive: false,
    awaitsResult: true,
    toolName: name,
    inputs: call.arguments ?? {},
    timeoutMs: readTimeoutMs(meta[mcpMeta.timeoutMs], name),
    options: create(ExecutionOptionsSchema, {
      acknowledgeUnsafe: meta[mcpMeta.acknowledgeUnsafe] === true,
      idempotencyKey: readString(meta[mcpMeta.idempotencyKey], mcpMeta.idempotencyKey, name),
    }),
    caller: call.caller.name,
  });
  const ask =
    call.approval !== undefined &&
    capabilities?.humanApprovalRequired === true &&
    mayApproveOwnRun(call.caller, record, call.allowSelfApproval)
      ? call.approval
      : undefined;
  return await followMcpRun(runtime, record, call, { owned: !deduplicated, afterSequence: 0, ask });
}

/**
 * The retry of a 2026-07-28 call that asked for approval: decides the run with the client's answer
 * (through decideFromMcp, like ApproveExecution; a run decided meanwhile keeps that decision) and
 * follows it to its result. The retry must come from the run's owner with the same tool and
 * inputs: the requestState is only a pointer to the run, checked again here.
 */
async function resumeMcpCall(
  runtime: ToolRuntime,
  call: McpToolCall,
  retry: NonNullable<McpToolCall["retry"]>,
): Promise<CallToolResult | InputRequiredResult> {
  const state = parseRequestState(retry.requestState, call.name);
  const record = await runtime.executions.getRun(state.executionId);
  if (!isOwner(call.caller, record)) {
    throw new ToolRuntimeError(
      "PERMISSION_DENIED",
      ErrorType.PermissionDenied,
      `identity ${quote(call.caller.name)} did not start execution ${quote(record.id)}: only the call that started a run may be retried with its requestState`,
      call.name,
    );
  }
  if (
    record.toolName !== call.name ||
    state.inputsDigest !== record.inputsDigest ||
    inputsDigest(call.arguments ?? {}) !== record.inputsDigest
  ) {
    throw invalidRequest(
      `requestState names execution ${quote(record.id)} of ${quote(record.toolName)} with other inputs: retry the call with the arguments it was made with`,
      call.name,
    );
  }
  const answer = readApprovalAnswer(retry.inputResponses?.[approvalInputKey]);
  if (answer) {
    await decideFromMcp(runtime.executions, call.caller, record, state.inputsDigest, answer, call.allowSelfApproval);
  }
  // Asked once: without an answer, the run waits for ApproveExecution or its approval timeout.
  return await followMcpRun(runtime, record, call, {
    owned: state.owned,
    afterSequence: state.afterSequence,
    ask: undefined,
  });
}

function readTimeoutMs(value: unknown, toolName: string): number {
  if (value === undefined) return 0;
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 86_400_000) return value;
  throw invalidRequest(
    `_meta ${quote(mcpMeta.timeoutMs)} must be a whole number of milliseconds from 0 to 86400000`,
    toolName,
  );
}

function readString(value: unknown, key: string, toolName: string): string {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  throw invalidRequest(`_meta ${quote(key)} must be a string`, toolName);
}
