import { invalidRequest } from "../errors/tool-runtime-error.js";

/**
 * The longest duration the API accepts in any `*_ms` field of a request, in milliseconds: one day.
 * It stays far below 2^31 − 1 ms, past which Node fires a timer at once instead of late.
 */
export const maxDurationMs = 86_400_000;

/**
 * Checks one requested duration, in milliseconds. Throws INVALID_ARGUMENT (error type
 * "InvalidRequestError") naming the field and the maximum when `value` is longer than
 * {@link maxDurationMs}, negative or not an integer.
 *
 * @param field the field as the API spells it, e.g. "options.queue_timeout_ms"
 * @param toolName the tool concerned, for the ToolError; "" when none
 */
export function checkDurationMs(field: string, value: number, toolName = ""): void {
  if (Number.isInteger(value) && value >= 0 && value <= maxDurationMs) return;
  throw invalidRequest(
    `${field} ${value} is out of range: the maximum is ${maxDurationMs} ms (one day); use 0 for the default`,
    toolName,
  );
}
