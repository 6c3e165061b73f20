import { ErrorType, ToolRuntimeError, type ErrorTypeName } from "../errors/tool-runtime-error.js";
import { quote } from "./names.js";
import type { ToolRegistry } from "./tool-registry.js";

/**
 * The NOT_FOUND error for a tool the registry does not hold. When the tool is missing because the
 * provider that serves it is not connected, the message says so and names the provider; otherwise
 * it is `message`.
 */
export function toolNotFound(
  registry: ToolRegistry,
  toolName: string,
  message: string,
  errorType: ErrorTypeName = ErrorType.NotFound,
): ToolRuntimeError {
  const provider = registry.offlineProvider(toolName);
  const details =
    provider === undefined
      ? message
      : `tool ${quote(toolName)} is served by provider ${quote(provider)}, which is not connected: start the provider, or wait until it reconnects`;
  return new ToolRuntimeError("NOT_FOUND", errorType, details, toolName);
}
