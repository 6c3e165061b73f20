import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { ensureAllowed, isAllowed } from "../auth/permissions.js";
import { abortReasonText } from "../errors/abort-reason.js";
import { checkToolName, ensure } from "../registry/names.js";
import type { ToolRuntime } from "../runtime.js";
import { callerOf, traceParentKey } from "./call-context.js";

/**
 * The RunnerService RPCs over a runtime, written once for every transport. Activating, executing,
 * deactivating and running need the caller's `execute` permission on the tool, and a tool flagged
 * unsafe needs `execute_unsafe` too; discovery only shows the tools the caller may read. Executions
 * go through the execution manager, so they are admitted, recorded and watchable like any run.
 */
export function createRunnerService(runtime: ToolRuntime): ServiceImpl<typeof RunnerService> {
  const { registries, runners, executions } = runtime;

  /** Checks the name and the caller's right to execute the tool. */
  const authorizeExecution = (toolName: string, context: HandlerContext): void => {
    ensure(checkToolName(toolName));
    const caller = callerOf(context);
    ensureAllowed(caller, "execute", toolName);
    if (runners.registry.get(toolName)?.spec.capabilities?.unsafe) ensureAllowed(caller, "execute_unsafe", toolName);
  };
  const callFacts = (context: HandlerContext) => ({
    deadlineMs: context.timeoutMs(),
    caller: callerOf(context).name,
    traceParent: context.values.get(traceParentKey),
  });

  return {
    discoverTools(request, context) {
      const runner = runners.get(request.runner);
      const registry = request.registry === "" ? runner.registry : registries.get(request.registry);
      const caller = callerOf(context);
      const page = runner.discover(registry, { ...request, include: (spec) => isAllowed(caller, "read", spec.name) });
      return { tools: page.tools, nextPageToken: page.nextPageToken };
    },

    activateTool(request, context) {
      authorizeExecution(request.toolName, context);
      return runners.activate(request.runner, request.toolName);
    },

    async executeTool(request, context) {
      authorizeExecution(request.toolName, context);
      const { record } = executions.start({
        runner: runners.get(request.runner),
        requireActive: true,
        toolName: request.toolName,
        inputs: request.inputs ?? {},
        timeoutMs: request.timeoutMs,
        options: request.options,
        ...callFacts(context),
      });
      // The run belongs to this call: when the call goes away, so does the run.
      const onAbort = (): void =>
        void executions.cancel(record.id, abortReasonText(context.signal.reason, "the client went away"));
      context.signal.addEventListener("abort", onAbort, { once: true });
      try {
        // Answered on time even when the run still waits for its handler to stop and rolls back.
        return { executionId: record.id, result: await record.answered };
      } finally {
        context.signal.removeEventListener("abort", onAbort);
      }
    },

    deactivateTool(request, context) {
      authorizeExecution(request.toolName, context);
      return { wasActive: runners.deactivate(request.runner, request.toolName) };
    },

    async *runTool(request, context) {
      authorizeExecution(request.toolName, context);
      const { record } = executions.start({
        runner: runners.createPrivate(),
        requireActive: false,
        toolName: request.toolName,
        inputs: request.inputs ?? {},
        timeoutMs: request.timeoutMs,
        options: request.options,
        ...callFacts(context),
      });
      // When the call ends early (the client left, its deadline passed, or the server shuts down),
      // the run is cancelled and the stream still delivers its last events to whoever is there;
      // with detach_on_disconnect the run goes on and this stream simply stops.
      const detach = request.options?.detachOnDisconnect ?? false;
      const stopWatching = new AbortController();
      const onAbort = (): void => {
        if (detach) stopWatching.abort();
        else if (record.isLive)
          executions.cancel(record.id, abortReasonText(context.signal.reason, "the client went away"));
      };
      context.signal.addEventListener("abort", onAbort, { once: true });
      try {
        for await (const event of executions.watch(record, 0, stopWatching.signal)) yield { event };
      } finally {
        context.signal.removeEventListener("abort", onAbort);
        // Reached with the run live only when the transport stopped reading this stream.
        if (record.isLive && !detach) executions.cancel(record.id, "the client went away");
      }
    },
  };
}
