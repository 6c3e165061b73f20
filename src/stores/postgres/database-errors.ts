import { ErrorType, ToolRuntimeError } from "../../errors/tool-runtime-error.js";

/**
 * SQLSTATE classes that mean the database cannot serve now, not that a statement is wrong:
 * 08 connection exception, 53 insufficient resources, 57 operator intervention (shutdown,
 * cancel), 58 system error. Retrying later can succeed.
 */
const unavailableClasses = new Set(["08", "53", "57", "58"]);

/** Node socket errors the pg client surfaces when the server is unreachable or goes away. */
const socketCodes = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND"]);

/** Whether `error` says the database is unreachable or not serving, rather than a bad statement. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (socketCodes.has(code) || unavailableClasses.has(code.slice(0, 2)))) return true;
  // pg reports a dropped connection and a closed pool with plain Errors and these messages.
  return /Connection terminated|connection timeout|Client has encountered a connection error|Cannot use a pool after calling end/i.test(
    error.message,
  );
}

/**
 * The error a call gets while the database is unavailable: UNAVAILABLE, naming the (masked) store
 * URL, so a client knows to retry and an operator knows where to look.
 */
export function databaseUnavailable(maskedUrl: string, cause?: unknown): ToolRuntimeError {
  const reason = cause instanceof Error ? `: ${cause.message}` : "";
  return new ToolRuntimeError(
    "UNAVAILABLE",
    ErrorType.Unavailable,
    `the store at ${maskedUrl} is unavailable${reason}; retry later (the server recovers by itself when it returns)`,
  );
}
