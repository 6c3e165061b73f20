import type { ServerDuplexStream, ServerWritableStream } from "@grpc/grpc-js";
import { sendPaced, type CallPacer } from "./call-pacer.js";
import { grpcFramePrefixBytes } from "../codec/fast-binary.js";
import { framesOf, frameWriterFor, messagesOfFrames, type FrameWriter } from "./grpc-frame-writer.js";

/** A grpc-js server call that sends a stream of messages. */
export type StreamingCall = ServerWritableStream<Buffer, Buffer> | ServerDuplexStream<Buffer, Buffer>;

/**
 * Most bytes of messages written together: the HTTP/2 stream's default buffer (16 KiB), so that
 * a long batch (a watcher catching up on a backlog) still meets flow control and the pacer's
 * per-turn budget in bounded steps.
 */
export const maxBytesPerWrite = 16 * 1024;

/**
 * Sends a batch of messages of `call`, in order; gives false when the call was cancelled before
 * every message was sent (nothing more should be sent), true otherwise: at once when the batch went
 * out in one write that needed no wait (the pacer let it go, the stream's buffer took it), as a
 * promise otherwise.
 */
export type BatchSender = ((batch: readonly unknown[]) => boolean | Promise<boolean>) & {
  /**
   * Ends the call with OK once what was sent is on its way: through the FrameWriter when it can
   * (FrameWriter.endsAtOnce), which spares grpc-js's stream its end (a `Writable` ending: its
   * state, `final` and `finish` on later ticks) for the status it sends in the end; `call.end()`
   * otherwise.
   */
  readonly end: () => void;
};

/**
 * Creates the sender of `call`'s batches (see message-batches.ts). Each message is encoded with
 * `encode`; the messages of a batch are written together, up to {@link maxBytesPerWrite} per write,
 * through a FrameWriter (one HTTP/2 write for all of them) when grpc-js allows one, and otherwise
 * one `call.write` each, as before. Every write is paced (CallPacer.send) and, when the stream's
 * buffer is full, waits until the client reads (or leaves) before the next. With `encodeFrames`
 * (the messages as consecutive gRPC frames in one buffer, up to the one that brings their bytes to
 * `untilBytes`: see toFramedBinaryFast), a batch bound for the FrameWriter is encoded straight into
 * the buffer it writes; without it, each message is encoded with `encode` and then framed.
 */
export function createBatchSender(
  call: StreamingCall,
  encode: (message: unknown) => Buffer,
  pacer: CallPacer | undefined,
  encodeFrames?: (messages: readonly unknown[], untilBytes: number) => Buffer,
): BatchSender {
  const writer = frameWriterFor(call);
  const framesFor =
    encodeFrames ??
    ((batch: readonly unknown[], untilBytes: number): Buffer => {
      const encoded: Buffer[] = [];
      let bytes = 0;
      for (const message of batch) {
        encoded.push(encode(message));
        bytes += (encoded.at(-1) as Buffer).byteLength;
        if (bytes >= untilBytes) break;
      }
      return framesOf(encoded, bytes);
    });

  // One message through grpc-js, waiting for drain when its buffer is full.
  const writeOne = async (bytes: Buffer): Promise<void> => {
    let writable = true;
    const sending = sendPaced(pacer, () => {
      if (!call.cancelled) writable = call.write(bytes);
    });
    if (sending) await sending;
    if (!writable) await waitForDrain(call);
  };

  // `count` framed messages in one write; through grpc-js, in order, when the writer cannot take
  // them now. Undefined when the write is done and nothing need be awaited; else what to await.
  const writeTogether = (direct: FrameWriter, frames: Buffer, count: number): Promise<void> | undefined => {
    let wait: (() => Promise<void>) | undefined;
    const sending = sendPaced(pacer, () => {
      if (call.cancelled) return;
      if (direct.ready()) {
        if (!direct.write(frames, count)) wait = () => direct.drained();
        return;
      }
      let writable = true;
      for (const message of messagesOfFrames(frames)) writable = call.write(message);
      if (!writable) wait = () => waitForDrain(call);
    });
    if (!sending) return wait?.();
    return sending.then(() => wait?.());
  };

  // Whether `frames` hold the whole batch of `count` messages and go in one write: each message
  // within the call's limit, all of them (the prefixes left out) under maxBytesPerWrite.
  const framesFitOneWrite = (direct: FrameWriter, frames: Buffer, count: number): boolean => {
    if (frames.length - count * grpcFramePrefixBytes >= maxBytesPerWrite) return false;
    let framed = 0;
    for (let at = 0; at < frames.length; framed++) {
      const length = frames.readUInt32BE(at + 1);
      if (!direct.fits(length)) return false;
      at += grpcFramePrefixBytes + length;
    }
    return framed === count;
  };

  // A batch that fits in one write is encoded once and written at once: the common case (a run's
  // events recorded in one turn), sent without a promise unless the pacer or the stream makes it
  // wait. Any other batch goes in steps (sendInSteps), with the messages already encoded.
  const send = (batch: readonly unknown[]): boolean | Promise<boolean> => {
    if (call.cancelled) return false;
    if (batch.length === 0) return true;
    if (!writer) return sendInSteps(batch, []);
    const frames = framesFor(batch, maxBytesPerWrite);
    if (!framesFitOneWrite(writer, frames, batch.length)) return sendInSteps(batch, messagesOfFrames(frames));
    const waiting = writeTogether(writer, frames, batch.length);
    return waiting ? waiting.then(() => true) : true;
  };
  const end = (): void => {
    if (writer?.endsAtOnce()) writer.endOk();
    else call.end();
  };
  return Object.assign(send, { end });

  async function sendInSteps(batch: readonly unknown[], encoded: readonly Buffer[]): Promise<boolean> {
    let together: Buffer[] = [];
    let togetherBytes = 0;
    const flush = async (): Promise<void> => {
      if (!writer || together.length === 0) return;
      const [messages, bytes] = [together, togetherBytes];
      together = [];
      togetherBytes = 0;
      await writeTogether(writer, framesOf(messages, bytes), messages.length);
    };
    for (const [index, message] of batch.entries()) {
      if (call.cancelled) return false;
      const bytes = encoded[index] ?? encode(message);
      if (writer?.fits(bytes.byteLength)) {
        together.push(bytes);
        togetherBytes += bytes.byteLength;
        if (togetherBytes >= maxBytesPerWrite) await flush();
      } else {
        // Alone, through grpc-js: it answers RESOURCE_EXHAUSTED for a message over the limit.
        await flush();
        await writeOne(bytes);
      }
    }
    await flush();
    return true;
  }
}

/** Resolves when the stream can take more, or when the call is cancelled. */
export function waitForDrain(call: StreamingCall): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      call.off("drain", done);
      call.off("cancelled", done);
      resolve();
    };
    call.once("drain", done);
    call.once("cancelled", done);
  });
}
