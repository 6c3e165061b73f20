import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { ExecuteToolRequest, RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import type { ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import type { MaybePromise } from "../async/maybe-promise.js";
import type { StartOutcome, StartRequest } from "../executions/execution-manager.js";
import { allowedNameRanges } from "../auth/allowed-name-ranges.js";
import { ensureAllowed, isAllowed } from "../auth/permissions.js";
import { checkToolName, ensure } from "../registry/names.js";
import { registryNotFound, resolveRegistryName } from "../registry/registry-set.js";
import type { ToolRuntime } from "../runtime.js";
import { callerOf, traceParentKey } from "./call-context.js";
import {
  awaitForCall,
  bindRunToCall,
  cancelInBackground,
  endedRunError,
  endedRunEvents,
  watchForCall,
} from "./call-run.js";
import { defaultConnectionOptions } from "./connection-options.js";
import { fitToolPage } from "./fit-tool-page.js";
import { batchedStream, batchesOfStarted, SettledStream, startableStream } from "./message-batches.js";

/** A RunTool response as the stream yields it: one event. */
type RunEventResponse = { readonly event: RunEvent };
/** A RunTool stream's batches still to come (a run being watched). */
type EventBatches = AsyncIterable<readonly RunEventResponse[]>;

/**
 * The RunnerService RPCs over a runtime, written once for every transport. Activating, executing,
 * deactivating and running need the caller's `execute` permission on the tool, and a tool flagged
 * unsafe needs `execute_unsafe` too; discovery only shows the tools the caller may read. Executions
 * go through the execution manager, so they are admitted, recorded and watchable like any run.
 */
export function createRunnerService(
  runtime: ToolRuntime,
  maxMessageBytes = defaultConnectionOptions.maxMessageBytes,
): ServiceImpl<typeof RunnerService> {
  const { runners, executions } = runtime;
  const { tools: store, activations } = runtime.stores;
  /**
   * With a shared store, brings the default registry's view up to date before a call reads it, so
   * a tool registered (or removed) through any replica is seen here. Nothing to do in memory.
   */
  const syncTools = async (): Promise<void> => {
    if (store.shared) await store.view("");
  };

  /** Checks the name and the caller's right to execute the tool. */
  const authorizeExecution = (toolName: string, context: HandlerContext): void => {
    ensure(checkToolName(toolName));
    const caller = callerOf(context);
    ensureAllowed(caller, "execute", toolName);
    if (runners.registry.get(toolName)?.spec.capabilities?.unsafe) ensureAllowed(caller, "execute_unsafe", toolName);
  };

  /**
   * ExecuteTool with a shared store: the tools and the activation are brought up to date first,
   * without a round trip when this replica's views are known to be current and hold the tool
   * (see ToolStore.currentView and the activation store); a tool or an activation not found here
   * is always looked up in the store, so one added through any replica runs everywhere at once.
   */
  const executeToolShared = async (request: ExecuteToolRequest, context: HandlerContext) => {
    // Refused before anything waits for the store when this replica's writes are behind.
    executions.refuseWhenBehind(request.toolName, context.timeoutMs());
    if (store.currentView("")?.get(request.toolName) === undefined) await syncTools();
    authorizeExecution(request.toolName, context);
    const syncing = activations.sync(request.runner, request.toolName);
    if (syncing) await syncing;
    return executeResponse(await executions.startRun(executeRequest(request, context)), context);
  };
  const executeRequest = (request: ExecuteToolRequest, context: HandlerContext): StartRequest => ({
    runner: runners.get(request.runner),
    requireActive: true,
    awaitsResult: true,
    toolName: request.toolName,
    inputs: request.inputs ?? {},
    timeoutMs: request.timeoutMs,
    options: request.options,
    // Written out, not spread: a spread in a literal takes V8's slow generic path.
    deadlineMs: context.timeoutMs(),
    caller: callerOf(context).name,
    traceParent: context.values.get(traceParentKey),
  });
  /** The response to ExecuteTool once its run started: at once when the run is over already. */
  const executeResponse = (
    { record, deduplicated }: StartOutcome,
    context: HandlerContext,
  ): MaybePromise<{ executionId: string; result: ToolResult }> => {
    // A run this call created ends with the call; one it attached to (same idempotency key)
    // belongs to the call that created it and goes on. A run that is over already (its handler
    // returned a value) has nothing to bind: on the HTTP port a binding is a listener added to
    // and removed from the call's AbortSignal, an EventTarget, which costs microseconds.
    if (deduplicated || !record.isLive) {
      const answered = awaitForCall(record, context, !deduplicated);
      return answered instanceof Promise
        ? answered.then((result) => ({ executionId: record.id, result }))
        : { executionId: record.id, result: answered };
    }
    const unbind = bindRunToCall(executions, record, context);
    const answered = async () => {
      try {
        return { executionId: record.id, result: await awaitForCall(record, context, true) };
      } finally {
        unbind();
      }
    };
    return answered();
  };

  return {
    async discoverTools(request, context) {
      const runner = runners.get(request.runner);
      await syncTools();
      const registry = request.registry === "" ? runner.registry : await store.view(request.registry);
      if (!registry) throw registryNotFound(resolveRegistryName(request.registry));
      const caller = callerOf(context);
      const page = runner.discover(registry, {
        ...request,
        within: allowedNameRanges(caller, "read"),
        include: (spec) => isAllowed(caller, "read", spec.name),
      });
      return fitToolPage(page, maxMessageBytes);
    },

    async activateTool(request, context) {
      await syncTools();
      authorizeExecution(request.toolName, context);
      return activations.activate(request.runner, request.toolName);
    },

    // Not async: in memory a run of a handler that returns a value is over when startRun returns,
    // and the response is had without a promise (each async layer of a unary call was a promise
    // and a turn of the microtask queue before the response could be sent).
    executeTool(request, context) {
      if (store.shared) return executeToolShared(request, context);
      authorizeExecution(request.toolName, context);
      const starting = executions.startRun(executeRequest(request, context));
      return starting instanceof Promise
        ? starting.then((started) => executeResponse(started, context))
        : executeResponse(starting, context);
    },

    async deactivateTool(request, context) {
      await syncTools();
      authorizeExecution(request.toolName, context);
      return { wasActive: await activations.deactivate(request.runner, request.toolName) };
    },

    // Batched (see message-batches.ts): the events a run records in one turn go out together. In
    // memory its start is synchronous: a run that ended inside start is a settled stream, which
    // the gRPC adapter writes and ends without a generator or a promise.
    runTool(request, context) {
      // A detached run outlives this call, so the call's deadline does not bound it.
      const detach = request.options?.detachOnDisconnect ?? false;
      // When the call ends early (the client left, its deadline passed, or the server shuts down),
      // a run this call created is cancelled (a deadline ends it as a TimeoutError) and the stream
      // still delivers its last events to whoever is there. A detached run, or an earlier run this
      // call attached to by its idempotency key, goes on and this stream simply stops.
      const follow = ({ record, deduplicated }: StartOutcome): SettledStream<RunEventResponse> | EventBatches => {
        const owned = !deduplicated && !detach;
        // A run that ended inside start has every event recorded: one batch, no watch.
        const events = owned ? endedRunEvents(record) : undefined;
        if (events) {
          return new SettledStream(
            events.map((event) => ({ event })),
            () => endedRunError(record, context),
          );
        }
        return (async function* () {
          const unbind = owned && record.isLive ? bindRunToCall(executions, record, context) : undefined;
          try {
            for await (const events of watchForCall(executions, record, 0, context, owned)) {
              yield events.map((event) => ({ event }));
            }
          } finally {
            unbind?.();
            // Reached with the run live only when the transport stopped reading this stream.
            if (record.isLive && owned) cancelInBackground(executions, record.id, "the client went away");
          }
        })();
      };
      const start = (): SettledStream<RunEventResponse> | EventBatches => {
        authorizeExecution(request.toolName, context);
        const starting = executions.startRun({
          runner: runners.createPrivate(),
          requireActive: false,
          awaitsResult: true,
          toolName: request.toolName,
          inputs: request.inputs ?? {},
          timeoutMs: request.timeoutMs,
          options: request.options,
          deadlineMs: detach ? undefined : context.timeoutMs(),
          callTimeoutMs: context.timeoutMs(),
          caller: callerOf(context).name,
          traceParent: context.values.get(traceParentKey),
        });
        if (!(starting instanceof Promise)) return follow(starting);
        return (async function* () {
          yield* batchesOfStarted(follow(await starting));
        })();
      };
      if (!store.shared) return startableStream(start);
      return batchedStream(async function* () {
        await syncTools();
        yield* batchesOfStarted(start());
      });
    },
  };
}
