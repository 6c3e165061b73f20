import { ExecutionManager, type ExecutionManagerOptions } from "./executions/execution-manager.js";
import { ProviderHub, type ProviderHubOptions } from "./providers/provider-hub.js";
import { RegistrySet, type RegistrySetOptions } from "./registry/registry-set.js";
import { RunnerSet, type RunnerSetOptions } from "./runner/runner-set.js";
import type { DefinedTool } from "./tools/define-tool.js";

/** Options of {@link createToolRuntime}. */
export interface ToolRuntimeOptions {
  /** Tools with handlers to register in the default registry at start. */
  readonly tools?: readonly DefinedTool[];
  /** Limits of the registries. */
  readonly registries?: RegistrySetOptions;
  /** Timeouts and limits of the runners. */
  readonly runners?: RunnerSetOptions;
  /** Interval of HEARTBEAT events on long streams, in milliseconds. Default 15,000. */
  readonly heartbeatIntervalMs?: number;
  /** Admission limits, timeouts and retention of runs. */
  readonly executions?: ExecutionManagerOptions;
  /** Heartbeat and failure timing of tool providers. */
  readonly providers?: ProviderHubOptions;
}

/** The transport-free core of a server: its registries and runners. */
export interface ToolRuntime {
  readonly registries: RegistrySet;
  readonly runners: RunnerSet;
  readonly executions: ExecutionManager;
  readonly providers: ProviderHub;
  readonly heartbeatIntervalMs: number;
  /** Releases what the runtime holds (subscriptions). */
  close(): void;
}

/**
 * Creates the registries and runners and registers `tools`. Throws the registration error of a
 * tool that cannot be registered (a duplicate name, say).
 */
export function createToolRuntime(options: ToolRuntimeOptions = {}): ToolRuntime {
  const registries = new RegistrySet(options.registries);
  const runners = new RunnerSet(registries.default, options.runners);
  for (const tool of options.tools ?? []) {
    registries.default.register({ spec: tool.spec, handler: tool.handler, hooks: tool.hooks });
  }
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? 15_000;
  const executions = new ExecutionManager({ heartbeatIntervalMs, ...options.executions });
  return {
    registries,
    runners,
    executions,
    providers: new ProviderHub(registries.default, options.providers),
    heartbeatIntervalMs,
    close: () => {
      runners.close();
      executions.close();
    },
  };
}
