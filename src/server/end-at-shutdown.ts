import type { HandlerContext } from "@connectrpc/connect";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { callCancellation } from "./call-context.js";
import type { ShutdownNotice } from "./shutdown-notice.js";

/** How the message of every stream that shutdown ends begins. */
export const shuttingDownMessage = "the server is shutting down";

/**
 * The UNAVAILABLE a stream ends with when shutdown ends it: `retry` tells the client how to pick
 * up where it was, against another replica or the restarted server.
 */
export function endedByShutdown(retry: string): ToolRuntimeError {
  return new ToolRuntimeError("UNAVAILABLE", ErrorType.Unavailable, `${shuttingDownMessage}: ${retry}`);
}

/**
 * A stream with nothing in progress to finish (a watch of the registry, of the runs): it ends
 * when its call does, or as soon as shutdown begins, with {@link endedByShutdown}, so that it
 * neither holds the server's drain for the whole grace period nor ends with an OK that a client
 * cannot tell from a normal end. `stream` gets a signal aborted at either and must end quietly
 * when it aborts; whatever it throws passes through.
 */
export async function* endAtShutdown<T>(
  notice: ShutdownNotice,
  context: HandlerContext,
  retry: string,
  stream: (signal: AbortSignal) => AsyncIterable<T>,
): AsyncGenerator<T> {
  const ends = new AbortController();
  const call = callCancellation(context);
  const stopHearingCall = call.onAbort((reason) => ends.abort(reason));
  const stopHearingShutdown = notice.onBegin(() => ends.abort(endedByShutdown(retry)));
  try {
    yield* stream(ends.signal);
  } finally {
    stopHearingCall();
    stopHearingShutdown();
  }
  // A call that its client ended first ends as the pipeline ends such calls (CANCELLED).
  if (notice.begun && !call.aborted) throw endedByShutdown(retry);
}
