import type { Readable } from "node:stream";

/**
 * The messages of a grpc-js request stream, read one at a time as the consumer pulls them (so
 * grpc-js's flow control still applies), ending when the client half-closes or the call ends.
 *
 * Node's own async iterator of a Readable is not used: it listens for "error", and when the
 * adapter ends the call by emitting its status as an error, that iterator destroys the stream.
 * A stream destroyed while a response message is still being written never runs its final step,
 * so grpc-js never sends the status and the client waits for ever. This reader never destroys
 * the stream: ending the call is left to whoever sends its status.
 */
export async function* readMessages(stream: Readable): AsyncGenerator<Buffer> {
  for (;;) {
    const message = stream.read() as Buffer | null;
    if (message !== null) {
      yield message;
      continue;
    }
    if (stream.readableEnded || stream.destroyed) return;
    await nextReadableEvent(stream);
  }
}

/** Resolves at the stream's next "readable", "end", "close" or "error", removing its listeners. */
function nextReadableEvent(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    const events = ["readable", "end", "close", "error"] as const;
    const settle = (): void => {
      for (const event of events) stream.off(event, settle);
      resolve();
    };
    for (const event of events) stream.on(event, settle);
  });
}
