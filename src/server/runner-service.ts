import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { runLifecycle } from "../runner/run-lifecycle.js";
import type { ToolRuntime } from "../runtime.js";

/** The RunnerService RPCs over a runtime, written once for every transport. */
export function createRunnerService(runtime: ToolRuntime): ServiceImpl<typeof RunnerService> {
  const { registries, runners } = runtime;
  return {
    discoverTools(request) {
      const runner = runners.get(request.runner);
      const registry = request.registry === "" ? runner.registry : registries.get(request.registry);
      const page = runner.discover(registry, request);
      return { tools: page.tools, nextPageToken: page.nextPageToken };
    },

    activateTool(request) {
      return runners.activate(request.runner, request.toolName);
    },

    async executeTool(request, context) {
      const runner = runners.get(request.runner);
      return runner.execute(request.toolName, request.inputs ?? {}, {
        timeoutMs: request.timeoutMs,
        deadlineMs: context.timeoutMs(),
        signal: context.signal,
      });
    },

    deactivateTool(request) {
      return { wasActive: runners.deactivate(request.runner, request.toolName) };
    },

    async *runTool(request, context: HandlerContext) {
      const events = runLifecycle(runners, {
        toolName: request.toolName,
        inputs: request.inputs ?? {},
        timeoutMs: request.timeoutMs,
        deadlineMs: context.timeoutMs(),
        signal: context.signal,
        heartbeatIntervalMs: runtime.heartbeatIntervalMs,
      });
      for await (const event of events) yield { event };
    },
  };
}
