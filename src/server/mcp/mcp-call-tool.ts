import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { ExecutionOptionsSchema } from "../../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../../gen/toolruntime/v1/run_event_pb.js";
import type { ToolResult } from "../../../gen/toolruntime/v1/tool_pb.js";
import { ensureAllowed, type Identity } from "../../auth/permissions.js";
import { invalidRequest } from "../../errors/tool-runtime-error.js";
import type { ExecutionRecord } from "../../executions/execution-record.js";
import { checkToolName, ensure, quote } from "../../registry/names.js";
import type { ToolRuntime } from "../../runtime.js";
import { cancelInBackground } from "../call-run.js";
import { mcpMeta } from "./mcp-meta.js";
import { toCallToolResult } from "./to-call-tool-result.js";
import { toProgressMessage } from "./to-progress-message.js";

/** One MCP `tools/call`, as the gateway sees it. */
export interface McpToolCall {
  readonly name: string;
  readonly arguments: unknown;
  /** The request's `_meta`: the progress token and toolruntime's own keys (see mcpMeta). */
  readonly meta: Readonly<Record<string, unknown>> | undefined;
  readonly caller: Identity;
  /** Aborts when the client cancels the request or drops it. */
  readonly signal: AbortSignal;
  /** Sends a `notifications/progress` related to the request. */
  readonly notifyProgress: (params: {
    progressToken: string | number;
    progress: number;
    message: string;
  }) => Promise<void>;
}

/**
 * Runs a tools/call as an ordinary execution: the caller needs `execute` on the tool (and
 * `execute_unsafe` for an unsafe one, which also needs `_meta["io.toolruntime/acknowledge_unsafe"]`),
 * and the run goes through the execution manager like a RunTool (admission, approval, idempotency,
 * timeouts, retries, audit). When the request has a progress token, the run's progress, queueing,
 * approval and retries become progress notifications, numbered by event sequence. A cancelled or
 * dropped request cancels the run it started. Throws (before the run starts) what the manager
 * throws: INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION, RESOURCE_EXHAUSTED.
 */
export async function callMcpTool(runtime: ToolRuntime, call: McpToolCall): Promise<CallToolResult> {
  const { executions, runners } = runtime;
  const name = call.name;
  ensure(checkToolName(name));
  if (runtime.stores.tools.shared) await runtime.stores.tools.view("");
  ensureAllowed(call.caller, "execute", name);
  if (runners.registry.get(name)?.spec.capabilities?.unsafe) ensureAllowed(call.caller, "execute_unsafe", name);
  const meta = call.meta ?? {};
  const { record, deduplicated } = await executions.startRun({
    runner: runners.createPrivate(),
    requireActive: false,
    toolName: name,
    inputs: call.arguments ?? {},
    timeoutMs: readTimeoutMs(meta[mcpMeta.timeoutMs], name),
    options: create(ExecutionOptionsSchema, {
      acknowledgeUnsafe: meta[mcpMeta.acknowledgeUnsafe] === true,
      idempotencyKey: readString(meta[mcpMeta.idempotencyKey], mcpMeta.idempotencyKey, name),
    }),
    caller: call.caller.name,
  });
  const owned = !deduplicated;
  const onAbort = (): void => {
    if (owned && record.isLive) cancelInBackground(executions, record.id, "the MCP client cancelled the call");
  };
  if (call.signal.aborted) onAbort();
  else call.signal.addEventListener("abort", onAbort, { once: true });
  const token = meta["progressToken"];
  const progress =
    typeof token === "string" || typeof token === "number" ? forwardProgress(runtime, record, token, call) : undefined;
  try {
    const result = await (owned ? record.answered : untilAnsweredOrAborted(record, call.signal));
    await progress?.drain();
    return toCallToolResult(record.id, result);
  } finally {
    progress?.stop();
    call.signal.removeEventListener("abort", onAbort);
  }
}

/** Forwards the run's events as progress notifications until drained or stopped. */
function forwardProgress(runtime: ToolRuntime, record: ExecutionRecord, token: string | number, call: McpToolCall) {
  const stop = new AbortController();
  let seen = 0;
  let needed = Number.POSITIVE_INFINITY;
  const forward = async (event: RunEvent): Promise<void> => {
    const message = toProgressMessage(event, record.toolName);
    if (message === undefined) return;
    // A client that left makes the notification fail; the run's end is decided elsewhere.
    await call
      .notifyProgress({ progressToken: token, progress: Number(event.sequence), message })
      .catch(() => undefined);
  };
  const pump = (async () => {
    for await (const event of runtime.executions.watch(record, 0, stop.signal)) {
      seen += 1;
      await forward(event);
      if (seen >= needed) break;
    }
  })();
  return {
    /** Sends what the run logged so far, so every progress notification precedes the result. */
    async drain(): Promise<void> {
      needed = record.events.length;
      if (seen >= needed) stop.abort();
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
