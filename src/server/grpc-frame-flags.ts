import type { ServerInterceptingCallInterface, ServerInterceptor, StatusObject } from "@grpc/grpc-js";
import { pino } from "pino";
import { invalidRequest } from "../errors/tool-runtime-error.js";
import { badFrameFlagsMessage } from "./frame-flags.js";
import { toGrpcStatus } from "./grpc-status.js";
import { toConnectError } from "./to-connect-error.js";

// The error is the client's: nothing reaches the log.
const silent = pino({ enabled: false });

/**
 * The part of grpc-js's BaseServerInterceptingCall that reads request frames (internal to grpc-js,
 * checked against @grpc/grpc-js 1.14): its StreamDecoder turns each HTTP/2 data chunk into whole
 * frames, 5-byte prefix included, and the call then reads only whether byte 0 is 1 (compressed),
 * so 0x02 or 0x80 pass as uncompressed.
 */
interface FrameReadingCall {
  decoder: { write(data: Buffer): Buffer[] };
}

function isFrameReadingCall(call: unknown): call is FrameReadingCall {
  const decoder = (call as Partial<FrameReadingCall>).decoder as Partial<FrameReadingCall["decoder"]> | undefined;
  return typeof decoder === "object" && decoder !== null && typeof decoder.write === "function";
}

/**
 * A call's decoder that refuses a frame whose flags are other than 0x00 and 0x01: the call is
 * answered INVALID_ARGUMENT and the frame, with any after it, is never handed on, so no handler
 * sees its message. A class: one small object per call, no closures.
 */
class FlagCheckingDecoder {
  constructor(
    private readonly decoder: FrameReadingCall["decoder"],
    private readonly call: ServerInterceptingCallInterface,
  ) {}

  write(data: Buffer): Buffer[] {
    const frames = this.decoder.write(data);
    for (const frame of frames) {
      const flags = frame[0] as number;
      if (flags > 1) {
        const status: StatusObject = toGrpcStatus(toConnectError(invalidRequest(badFrameFlagsMessage(flags)), silent));
        this.call.sendStatus(status);
        return [];
      }
    }
    return frames;
  }
}

/**
 * Runs `next` with the frames of each call checked for their flags (see FlagCheckingDecoder).
 * It must come before any interceptor that wraps the call: grpc-js hands the first one its own
 * base call. When grpc-js is not shaped as expected (another version), calls go unchecked, as
 * grpc-js serves them, and the wire tests of frame flags fail.
 */
export function withFrameFlagCheck(next: ServerInterceptor): ServerInterceptor {
  return (method, call) => {
    if (isFrameReadingCall(call)) call.decoder = new FlagCheckingDecoder(call.decoder, call);
    return next(method, call);
  };
}
