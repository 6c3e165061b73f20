// The public API of the toolruntime package.
export { defineTool, isDefinedTool } from "./tools/define-tool.js";
export type { DefinedTool, ToolCapabilityFlags, ToolDefinitionInit } from "./tools/define-tool.js";
export type { ProgressReport, ToolContext, ToolHandler } from "./registry/tool-definition.js";
export { builtinTools } from "./tools/builtin-tools.js";
export { ToolRegistry } from "./registry/tool-registry.js";
export type {
  ListToolsQuery,
  ToolPage,
  ToolRegistration,
  ToolRegistryOptions,
  ToolSummary,
} from "./registry/tool-registry.js";
export { RegistrySet } from "./registry/registry-set.js";
export { ToolRunner } from "./runner/tool-runner.js";
export type { ExecuteCallOptions, ToolRunnerOptions } from "./runner/tool-runner.js";
export { RunnerSet } from "./runner/runner-set.js";
export { createToolRuntime } from "./runtime.js";
export type { ToolRuntime, ToolRuntimeOptions } from "./runtime.js";
export { startServer, defaultMaxMessageBytes } from "./server/tool-runtime-server.js";
export type { RunningServer, ServerOptions } from "./server/tool-runtime-server.js";
export { ErrorType, ToolRuntimeError, isToolRuntimeError } from "./errors/tool-runtime-error.js";
export type { ErrorTypeName, StatusCode } from "./errors/tool-runtime-error.js";
export { loadToolModule } from "./load-tools.js";
export { createProvider } from "./providers/create-provider.js";
export type { Provider, ProviderOptions } from "./providers/create-provider.js";
export { ProviderHub } from "./providers/provider-hub.js";
export { ExecutionManager } from "./executions/execution-manager.js";
export type { ExecutionManagerOptions, ExecutionLimits, StartRequest } from "./executions/execution-manager.js";
export type { CheckpointHooks } from "./registry/tool-definition.js";
export type { RunInfo, RunObserver } from "./runner/run-observer.js";
