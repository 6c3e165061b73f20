import { Code, ConnectError } from "@connectrpc/connect";
import { inputRequired, type CallToolResult, type InputRequiredResult } from "@modelcontextprotocol/server";
import { ExecutionState } from "../../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../../gen/toolruntime/v1/tool_pb.js";
import type { ExecutionRecord } from "../../executions/execution-record.js";
import type { ToolRuntime } from "../../runtime.js";
import { cancelInBackground } from "../call-run.js";
import { approvalElicitation, approvalInputKey } from "./mcp-approval.js";
import { toApprovalRequestId, toRequestState } from "./mcp-approval-tokens.js";
import { mcpMeta } from "./mcp-meta.js";
import type { McpApprovalChannel, McpToolCall } from "./mcp-tool-call.js";
import { toCallToolResult } from "./to-call-tool-result.js";
import { toProgressNotification } from "./to-progress-notification.js";

/** How a tools/call request follows its run. */
export interface FollowOptions {
  /** Whether this call started the run: then a cancelled or dropped request cancels it. */
  readonly owned: boolean;
  /** Forward the events after this sequence number (those before were forwarded by an earlier request). */
  readonly afterSequence: number;
  /** How to ask the client to approve the run when it awaits approval; undefined: do not ask. */
  readonly ask: McpApprovalChannel | undefined;
}

/**
 * Follows a run for one tools/call request until its answer: forwards its events as progress
 * notifications (when the request has a progress token), asks the client for approval through
 * `ask` when the run awaits it, and answers with the run's result. On the 2026-07-28 channel the
 * question is the answer: an `input_required` result whose `requestState` lets the retry pick the
 * run up again (the run goes on meanwhile, awaiting its approval).
 */
export async function followMcpRun(
  runtime: ToolRuntime,
  record: ExecutionRecord,
  call: McpToolCall,
  options: FollowOptions,
): Promise<CallToolResult | InputRequiredResult> {
  const { owned, ask } = options;
  const onAbort = (): void => {
    if (owned && record.isLive) cancelInBackground(runtime.executions, record.id, "the MCP client cancelled the call");
  };
  if (call.signal.aborted) onAbort();
  else call.signal.addEventListener("abort", onAbort, { once: true });
  const ended = new AbortController();
  let pause: (event: RunEvent) => void = () => undefined;
  const paused = new Promise<RunEvent>((resolve) => (pause = resolve));
  const token = call.meta?.["progressToken"];
  const progress = typeof token === "string" || typeof token === "number" ? token : undefined;

  const onEvent = async (event: RunEvent): Promise<void> => {
    if (progress !== undefined) {
      const notification = toProgressNotification(event, record.toolName);
      // A client that left makes the notification fail; the run's end is decided elsewhere.
      if (notification !== undefined) {
        await call.notifyProgress({ progressToken: progress, ...notification }).catch(() => undefined);
      }
    }
    if (ask === undefined || event.event.case !== "awaitingApproval") return;
    // A replayed event of a run decided since then asks nothing.
    if (record.state !== ExecutionState.AWAITING_APPROVAL || record.decision !== undefined) return;
    if (ask.kind === "input_required") return pause(event);
    const target = { executionId: record.id, inputsDigest: event.event.value.inputsDigest };
    const question = approvalElicitation(record.toolName, record.id, target.inputsDigest, record.init.inputs);
    // Unanswered or undeliverable, the question leaves the run to ApproveExecution or its timeout.
    await ask.send(toApprovalRequestId(target), question).catch(() => undefined);
  };
  const events =
    progress !== undefined || ask !== undefined
      ? followEvents(runtime, record, options.afterSequence, onEvent)
      : undefined;
  try {
    const answered = owned
      ? record.answered
      : untilAnsweredOrAborted(record, AbortSignal.any([call.signal, ended.signal]));
    const outcome = await Promise.race([answered.then((result) => ({ result })), paused.then((event) => ({ event }))]);
    if ("event" in outcome) {
      const sequence = Number(outcome.event.event.case === "awaitingApproval" ? outcome.event.sequence : 0n);
      await events?.drain(sequence);
      return askToApprove(record, outcome.event, owned);
    }
    await events?.drain(record.events.length);
    return toCallToolResult(record.id, outcome.result);
  } finally {
    events?.stop();
    ended.abort();
    call.signal.removeEventListener("abort", onAbort);
  }
}

/** The 2026-07-28 `input_required` result asking the client to approve the run `event` announced. */
function askToApprove(record: ExecutionRecord, event: RunEvent, owned: boolean): InputRequiredResult {
  const inputsDigest = event.event.case === "awaitingApproval" ? event.event.value.inputsDigest : record.inputsDigest;
  const question = approvalElicitation(record.toolName, record.id, inputsDigest, record.init.inputs);
  return {
    ...inputRequired({
      inputRequests: { [approvalInputKey]: inputRequired.elicit(question) },
      requestState: toRequestState({
        executionId: record.id,
        inputsDigest,
        afterSequence: Number(event.sequence),
        owned,
      }),
    }),
    _meta: { [mcpMeta.executionId]: record.id },
  };
}

/** Hands each event of the run after `afterSequence` to `onEvent`, in order, until drained or stopped. */
function followEvents(
  runtime: ToolRuntime,
  record: ExecutionRecord,
  afterSequence: number,
  onEvent: (event: RunEvent) => Promise<void>,
) {
  const stop = new AbortController();
  let last = afterSequence;
  let needed = Number.POSITIVE_INFINITY;
  const pump = (async () => {
    for await (const event of runtime.executions.watch(record, afterSequence, stop.signal)) {
      last = Number(event.sequence);
      await onEvent(event);
      if (last >= needed) break;
    }
  })();
  return {
    /** Hands over the events up to sequence `upTo`, so every notification precedes the answer. */
    async drain(upTo: number): Promise<void> {
      needed = upTo;
      if (last >= needed) stop.abort();
      await pump;
    },
    stop: () => stop.abort(),
  };
}

/** The run's answer, or a cancelled result when the call ends first (a run it attached to goes on). */
async function untilAnsweredOrAborted(record: ExecutionRecord, signal: AbortSignal): Promise<ToolResult> {
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(new ConnectError("the MCP client cancelled the call", Code.Canceled));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([record.answered, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
