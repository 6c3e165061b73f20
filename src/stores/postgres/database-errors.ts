import { ErrorType, ToolRuntimeError } from "../../errors/tool-runtime-error.js";

/**
 * SQLSTATE classes that mean the database cannot serve now, not that a statement is wrong:
 * 08 connection exception, 53 insufficient resources, 57 operator intervention (shutdown,
 * cancel), 58 system error. Retrying later can succeed.
 */
const unavailableClasses = new Set(["08", "53", "57", "58"]);

/** Node socket errors the pg client surfaces when the server is unreachable or goes away. */
const socketCodes = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND"]);

/**
 * Messages of the plain Errors pg and pg-pool raise for a connection that dropped or never came:
 * a dropped connection, a closed pool, a statement whose answer did not come in time (query_timeout)
 * and a pool whose connections were all busy for the whole wait.
 */
const unavailableMessages =
  /Connection terminated|connection timeout|Client has encountered a connection error|Cannot use a pool after calling end|Query read timeout|timeout exceeded when trying to connect|Client was closed and is not queryable/i;

/** Whether `error` says the database is unreachable or not serving, rather than a bad statement. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (socketCodes.has(code) || unavailableClasses.has(code.slice(0, 2)))) return true;
  return unavailableMessages.test(error.message);
}

/**
 * Whether the connection that raised `error` is broken and must not go back to the pool: every
 * unavailability but a pool's "timeout exceeded when trying to connect", which no connection raised.
 */
export function isBrokenConnection(error: unknown): boolean {
  return isDatabaseUnavailable(error) && !/timeout exceeded when trying to connect/i.test((error as Error).message);
}

/**
 * The error a call gets while the database is unavailable: UNAVAILABLE, naming the (masked) store
 * URL, so a client knows to retry and an operator knows where to look.
 */
export function databaseUnavailable(maskedUrl: string, cause?: unknown): ToolRuntimeError {
  const reason = cause instanceof Error ? `: ${describe(cause)}` : "";
  return new ToolRuntimeError(
    "UNAVAILABLE",
    ErrorType.Unavailable,
    `the store at ${maskedUrl} is unavailable${reason}; retry later (the server recovers by itself when it returns)`,
  );
}

/** The store's budget for one operation ran out before it answered. */
export function storeTimedOut(maskedUrl: string, budgetMs: number): ToolRuntimeError {
  return new ToolRuntimeError(
    "UNAVAILABLE",
    ErrorType.Unavailable,
    `the store at ${maskedUrl} is unavailable: it did not answer within ${budgetMs} ms; retry later (the server recovers by itself when it returns)`,
  );
}

/** The call's deadline passed before the store could answer; nothing was written. */
export function storeDeadlinePassed(maskedUrl: string): ToolRuntimeError {
  return new ToolRuntimeError(
    "DEADLINE_EXCEEDED",
    ErrorType.Timeout,
    `the call's deadline passed before the store at ${maskedUrl} answered; nothing was written`,
  );
}

/** Whether `error` is the database refusing a write whose call's deadline passed (see check_deadline). */
export function isDeadlinePassed(error: unknown): boolean {
  const failure = error as { code?: string; message?: string };
  return failure.code === "P0001" && failure.message === "deadline passed";
}

/** pg-pool's message for a full pool says nothing of the store: say what happened. */
function describe(error: Error): string {
  if (/timeout exceeded when trying to connect/i.test(error.message)) {
    return "every connection of this replica's pool stayed busy for the whole wait (the replica is overloaded)";
  }
  return error.message;
}
