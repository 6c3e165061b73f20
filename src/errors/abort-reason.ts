/**
 * Why an AbortSignal aborted, as a phrase for messages: its Error's message (a ConnectError's raw
 * message, without the bracketed code), or `fallback` when the reason says nothing (no reason, a
 * bare AbortError, an empty message).
 */
export function abortReasonText(reason: unknown, fallback: string): string {
  if (reason instanceof Error && reason.name !== "AbortError" && reason.message !== "") {
    return "rawMessage" in reason && typeof reason.rawMessage === "string" ? reason.rawMessage : reason.message;
  }
  return fallback;
}
