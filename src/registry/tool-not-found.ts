import { ErrorType, ToolRuntimeError, type ErrorTypeName } from "../errors/tool-runtime-error.js";
import { quote } from "./names.js";
import type { ToolRegistry } from "./tool-registry.js";

/**
 * How long a client is told to wait before calling an offline provider's tool again, in
 * milliseconds: a provider that lost its stream reconnects after 125 to 250 ms, then backs off
 * (the SDKs' default), so a second is long enough for a quick return and short enough not to
 * waste one.
 */
export const offlineProviderRetryAfterMs = 1000;

/**
 * The error for a tool the registry does not hold. When the tool is missing because the provider
 * that serves it is not connected, it is UNAVAILABLE ("ProviderUnavailableError", with
 * {@link offlineProviderRetryAfterMs} as `retry_after_ms`) and names the provider: the call may
 * succeed later, or on another replica. Otherwise it is NOT_FOUND with `errorType` and `message`:
 * retrying the same name will not help.
 */
export function toolNotFound(
  registry: ToolRegistry,
  toolName: string,
  message: string,
  errorType: ErrorTypeName = ErrorType.NotFound,
): ToolRuntimeError {
  const provider = registry.offlineProvider(toolName);
  if (provider === undefined) return new ToolRuntimeError("NOT_FOUND", errorType, message, toolName);
  return new ToolRuntimeError(
    "UNAVAILABLE",
    ErrorType.ProviderUnavailable,
    `tool ${quote(toolName)} is served by provider ${quote(provider)}, which is not connected: retry when it reconnects, or start it`,
    toolName,
    offlineProviderRetryAfterMs,
  );
}
