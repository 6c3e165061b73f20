import { ErrorType, type ErrorTypeName } from "../errors/tool-runtime-error.js";

/** An error type a handler declared: one of the runtime's handler types, or a name of its own. */
export type DeclaredErrorType = ErrorTypeName | (string & { readonly declared?: never });

/** How a provider's own error type must be spelled: a letter, then up to 63 letters, digits, "_" or ".". */
const ownTypePattern = /^[A-Za-z][A-Za-z0-9_.]{0,63}$/;

/** The runtime's error types: only it gives them, apart from the two a handler's failure may be. */
const runtimeTypes: ReadonlySet<string> = new Set(Object.values(ErrorType));

/**
 * A handler's failure that arrives already described, with its error type: a run that failed in a
 * tool provider. executeTool reports it as it reports a handler that throws in process ("handler of
 * TOOL failed: DETAILS"), with the declared type instead of "HandlerError" when there is one.
 */
export class DeclaredFailure extends Error {
  override readonly name = "DeclaredFailure";

  private constructor(
    readonly errorType: DeclaredErrorType,
    readonly details: string,
  ) {
    super(details);
  }

  /**
   * The failure for `errorType` and `details` as a provider sent them. Empty or "HandlerError" is a
   * handler that threw; "OutputValidationError" is output that is not JSON; a well-formed name that
   * is not one of the runtime's types is kept. Any other type is the runtime's to give, so it is
   * reported as "HandlerError" with the declared type leading the details.
   */
  static of(errorType: string, details: string): DeclaredFailure {
    const text = details === "" ? "(no details)" : details;
    if (errorType === "" || errorType === ErrorType.Handler) return new DeclaredFailure(ErrorType.Handler, text);
    if (errorType === ErrorType.OutputValidation) return new DeclaredFailure(ErrorType.OutputValidation, text);
    if (ownTypePattern.test(errorType) && !runtimeTypes.has(errorType)) return new DeclaredFailure(errorType, text);
    const shown = errorType.length > 64 ? `${errorType.slice(0, 61)}...` : errorType;
    return new DeclaredFailure(ErrorType.Handler, `${shown}: ${text}`);
  }
}
