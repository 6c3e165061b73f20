/**
 * Why a protobuf message could not be decoded, in words for the client: a stack that ran out is
 * nesting too deep for this server; a RangeError of the reader is bytes that end before the
 * field they were reading does ("premature EOF"); anything else is protobuf-es's own message
 * (a recursion limit, invalid UTF-8, a bad wire type…).
 */
export function decodeFailureReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error instanceof RangeError) {
    if (/call stack/i.test(error.message)) return "it is nested too deeply";
    return `it is truncated: a field runs past the end of the message (${error.message})`;
  }
  return error.message;
}
