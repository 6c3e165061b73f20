import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { ensureAllowed, isAllowed } from "../auth/permissions.js";
import { checkToolName, ensure } from "../registry/names.js";
import { runLifecycle } from "../runner/run-lifecycle.js";
import type { ToolRuntime } from "../runtime.js";
import { callerOf, traceParentKey } from "./call-context.js";

/**
 * The RunnerService RPCs over a runtime, written once for every transport. Activating, executing,
 * deactivating and running need the caller's `execute` permission on the tool, and a tool flagged
 * unsafe needs `execute_unsafe` too; discovery only shows the tools the caller may read.
 */
export function createRunnerService(runtime: ToolRuntime): ServiceImpl<typeof RunnerService> {
  const { registries, runners } = runtime;

  /** Checks the name and the caller's right to execute the tool. */
  const authorizeExecution = (toolName: string, context: HandlerContext): void => {
    ensure(checkToolName(toolName));
    const caller = callerOf(context);
    ensureAllowed(caller, "execute", toolName);
    if (runners.registry.get(toolName)?.spec.capabilities?.unsafe) ensureAllowed(caller, "execute_unsafe", toolName);
  };
  const callOptions = (context: HandlerContext) => ({
    deadlineMs: context.timeoutMs(),
    signal: context.signal,
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
      const runner = runners.get(request.runner);
      return runner.execute(request.toolName, request.inputs ?? {}, {
        timeoutMs: request.timeoutMs,
        ...callOptions(context),
      });
    },

    deactivateTool(request, context) {
      authorizeExecution(request.toolName, context);
      return { wasActive: runners.deactivate(request.runner, request.toolName) };
    },

    async *runTool(request, context) {
      authorizeExecution(request.toolName, context);
      const events = runLifecycle(runners, {
        toolName: request.toolName,
        inputs: request.inputs ?? {},
        timeoutMs: request.timeoutMs,
        heartbeatIntervalMs: runtime.heartbeatIntervalMs,
        ...callOptions(context),
      });
      for await (const event of events) yield { event };
    },
  };
}
