import type { JsonObject } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  ExecutionState,
  type ExecutionService,
  type StartExecutionRequest,
} from "../../gen/toolruntime/v1/execution_pb.js";
import type { MaybePromise } from "../async/maybe-promise.js";
import type { StartOutcome } from "../executions/execution-manager.js";
import {
  ensureExecutionAccess,
  mayReadExecution,
  type ExecutionAccess,
  type ExecutionAccessOptions,
} from "../auth/execution-access.js";
import { ensureAllowed } from "../auth/permissions.js";
import type { ExecutionRecord } from "../executions/execution-record.js";
import { checkToolName, ensure } from "../registry/names.js";
import type { ToolRuntime } from "../runtime.js";
import { callCancellation, callerOf, traceParentKey } from "./call-context.js";
import { watchForCall } from "./call-run.js";
import { endAtShutdown } from "./end-at-shutdown.js";
import { batchedStream } from "./message-batches.js";
import { listExecutionsPage } from "./list-executions-page.js";
import { ShutdownNotice } from "./shutdown-notice.js";
import { followExecutions } from "./watch-executions.js";

/** Features this server offers, as GetCapabilities lists them. */
const features = [
  "detached-runs",
  "reattach",
  "approvals",
  "retries",
  "checkpoints",
  "idempotency-keys",
  "streamed-output",
  "admission-control",
];

/**
 * The ExecutionService RPCs over a runtime, written once for every transport. Starting and
 * cancelling need `execute` on the tool (and `execute_unsafe` for unsafe tools), watching, getting
 * and listing need `read`, deciding an approval needs `approve`. A run belongs to the identity that
 * started it: another's run needs `executions.read_all` to be seen and `executions.cancel_all` to be
 * cancelled, and its owner may not approve it unless `access.allowSelfApproval`. WatchExecutions
 * ends with UNAVAILABLE once `shutdown` begins (default: a notice that never does); a stream of
 * one run (WatchExecution) follows its run through the grace period instead (see watchForCall).
 */
export function createExecutionService(
  runtime: ToolRuntime,
  maxMessageBytes: number,
  access: ExecutionAccessOptions = {},
  shutdown = new ShutdownNotice(),
): ServiceImpl<typeof ExecutionService> {
  const { runners, executions } = runtime;

  /** The record of `id`, when the caller may have that access to it. */
  const recordFor = async (id: string, kind: ExecutionAccess, context: HandlerContext): Promise<ExecutionRecord> => {
    const record = await executions.getRun(id);
    ensureExecutionAccess(callerOf(context), kind, record, access);
    return record;
  };

  /** Checks a StartExecution and starts its run. */
  const startRun = (request: StartExecutionRequest, context: HandlerContext): MaybePromise<StartOutcome> => {
    ensure(checkToolName(request.toolName));
    const caller = callerOf(context);
    ensureAllowed(caller, "execute", request.toolName);
    if (runners.registry.get(request.toolName)?.spec.capabilities?.unsafe) {
      ensureAllowed(caller, "execute_unsafe", request.toolName);
    }
    return executions.startRun({
      runner: runners.createPrivate(),
      requireActive: false,
      toolName: request.toolName,
      inputs: request.inputs ?? {},
      timeoutMs: request.timeoutMs,
      options: request.options,
      caller: caller.name,
      traceParent: context.values.get(traceParentKey),
      callTimeoutMs: context.timeoutMs(),
    });
  };
  // In memory the record is read as soon as start returns: the run cannot have ended by then
  // (see StartRequest.awaitsResult), so the response shows it as it started.
  const startResponse = ({ record, deduplicated }: StartOutcome) => ({ execution: record.toProto(), deduplicated });
  /** StartExecution with a shared store: its registry view is brought up to date, so a tool registered anywhere runs. */
  const startExecutionShared = async (request: StartExecutionRequest, context: HandlerContext) => {
    ensure(checkToolName(request.toolName));
    // Refused before anything waits for the store when this replica's writes are behind.
    runtime.executions.refuseWhenBehind(request.toolName, context.timeoutMs());
    // Without a round trip when the view is current and holds the tool (see ToolStore.currentView).
    if (runtime.stores.tools.currentView("")?.get(request.toolName) === undefined) await runtime.stores.tools.view("");
    return startResponse(await startRun(request, context));
  };

  return {
    // Not async in memory: the response is had without a promise (see startRun below).
    startExecution(request, context) {
      if (runtime.stores.tools.shared) return startExecutionShared(request, context);
      const starting = startRun(request, context);
      return starting instanceof Promise ? starting.then(startResponse) : startResponse(starting);
    },

    // Batched (see message-batches.ts), like RunTool: a backlog or a turn's events go out together.
    watchExecution(request, context) {
      return batchedStream(async function* () {
        const record = await recordFor(request.executionId, "read", context);
        for await (const events of watchForCall(executions, record, Number(request.afterSequence), context, false)) {
          yield events.map((event) => ({ event }));
        }
      });
    },

    watchExecutions(request, context) {
      const retry = "watch again against another replica or the restarted server, which sends the live runs again";
      return endAtShutdown(shutdown, context, retry, async function* (signal) {
        if (request.toolName !== "") ensure(checkToolName(request.toolName));
        const caller = callerOf(context);
        const feed = followExecutions(executions, {
          include: (record) =>
            (request.toolName === "" || record.toolName === request.toolName) && mayReadExecution(caller, record),
          signal,
          heartbeatIntervalMs: executions.limits.heartbeatIntervalMs,
        });
        for await (const item of feed) {
          if (item.kind === "execution") yield { execution: item.execution };
          else if (item.kind === "caughtUp") yield { caughtUp: true };
          else yield {};
        }
      });
    },

    async getExecution(request, context) {
      const record = await recordFor(request.executionId, "read", context);
      return {
        execution: record.toProto(),
        ...(request.includeInputs ? { inputs: record.init.inputs as JsonObject } : {}),
      };
    },

    listExecutions(request, context) {
      if (request.toolName !== "") ensure(checkToolName(request.toolName));
      const caller = callerOf(context);
      return listExecutionsPage(executions, request, (record) => mayReadExecution(caller, record), maxMessageBytes);
    },

    async cancelExecution(request, context) {
      const record = await recordFor(request.executionId, "cancel", context);
      const cancelled = await executions.cancelRun(
        record.id,
        `cancelled by ${callerOf(context).name}`,
        context.timeoutMs(),
      );
      return { execution: cancelled.toProto() };
    },

    async approveExecution(request, context) {
      const record = await recordFor(request.executionId, "approve", context);
      const decided = await executions.decideRun(
        record.id,
        true,
        request.inputsDigest,
        callerOf(context).name,
        request.comment,
        context.timeoutMs(),
      );
      return { execution: (await afterDecision(decided, context)).toProto() };
    },

    async rejectExecution(request, context) {
      const record = await recordFor(request.executionId, "reject", context);
      const decided = await executions.decideRun(
        record.id,
        false,
        request.inputsDigest,
        callerOf(context).name,
        request.comment,
        context.timeoutMs(),
      );
      return { execution: (await afterDecision(decided, context)).toProto() };
    },

    getCapabilities() {
      const limits = executions.limits;
      return {
        maxConcurrentRuns: limits.maxConcurrentRuns,
        maxQueuedRuns: limits.maxQueuedRuns,
        defaultQueueTimeoutMs: limits.defaultQueueTimeoutMs,
        defaultApprovalTimeoutMs: limits.defaultApprovalTimeoutMs,
        defaultTimeoutMs: runners.defaultTimeoutMs,
        heartbeatIntervalMs: limits.heartbeatIntervalMs,
        retainedExecutions: limits.retainedExecutions,
        retentionMs: BigInt(limits.retentionMs),
        retainedBytes: BigInt(limits.retainedBytes),
        maxMessageBytes,
        features,
      };
    },
  };
}

/**
 * The record once its run took the decision in: the run waiting for it goes on in a later step
 * (queued or running once approved, failed once rejected), and the answer is "the run's record
 * after the decision". Waits for the record's next change while it still awaits approval, for a
 * second at most (a mirror of a run another replica owns changes when that replica writes), or
 * until the call is over; then answers with the record as it stands.
 */
async function afterDecision(record: ExecutionRecord, context: HandlerContext): Promise<ExecutionRecord> {
  const call = callCancellation(context);
  let stopListening: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const givenUp = new Promise<"given up">((resolve) => {
    stopListening = call.onAbort(() => resolve("given up"));
    timer = setTimeout(() => resolve("given up"), maxWaitForDecisionMs);
  });
  try {
    while (record.isLive && record.state === ExecutionState.AWAITING_APPROVAL && !call.aborted) {
      if ((await Promise.race([record.changed(), givenUp])) === "given up") break;
    }
  } finally {
    stopListening?.();
    clearTimeout(timer);
  }
  return record;
}

/** Longest wait of an approval's answer for its run to take the decision in. */
const maxWaitForDecisionMs = 1000;
