// The public API of the provider SDK (`toolruntime/provider`, also published on its own as
// `toolruntime-provider`): a provider serves tools to a remote server from its own process. It
// loads no server code, so it installs with the SDK's few dependencies only.
export { createProvider } from "./providers/create-provider.js";
export type { Provider, ProviderOptions } from "./providers/create-provider.js";
export { defineTool, isDefinedTool } from "./tools/define-tool.js";
export type { DefinedTool, ToolCapabilityFlags, ToolDefinitionInit } from "./tools/define-tool.js";
export type { CheckpointHooks, ProgressReport, ToolContext, ToolHandler } from "./registry/tool-definition.js";
export { ErrorType, ToolRuntimeError, isToolRuntimeError } from "./errors/tool-runtime-error.js";
export type { ErrorTypeName, StatusCode } from "./errors/tool-runtime-error.js";
