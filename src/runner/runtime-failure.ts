import type { ErrorTypeName } from "../errors/tool-runtime-error.js";

/**
 * A run's failure that the runtime itself describes, with one of its own error types, when it
 * happens inside a handler's place: a provider tool's inputs that cannot be delivered to the
 * provider (InputValidationError), or its output that cannot be forwarded (OutputValidationError).
 * executeTool reports the type and the details as they are, unlike a handler's throw.
 */
export class RuntimeFailure extends Error {
  override readonly name = "RuntimeFailure";

  /**
   * @param errorType the `ToolError.error_type` of the failed result
   * @param details the whole message: lowercase, names the subject in quotes, says what would fix it
   */
  constructor(
    readonly errorType: ErrorTypeName,
    readonly details: string,
  ) {
    super(details);
  }
}
