/** Why a call's signal aborted, as a phrase for messages ("the call was cancelled by the client"). */
export function abortReasonText(signal: AbortSignal): string {
  const reason = signal.reason as unknown;
  if (reason instanceof Error && reason.name !== "AbortError" && reason.message !== "") {
    // A ConnectError's message starts with its code in brackets; the raw message reads better.
    return "rawMessage" in reason && typeof reason.rawMessage === "string" ? reason.rawMessage : reason.message;
  }
  return "the client went away";
}
