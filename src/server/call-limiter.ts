import type { ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { toConnectError } from "./to-connect-error.js";

/** The server-wide count of RPCs in flight, shared by both ports. */
export interface CallLimiter {
  /** Takes a slot for a new call; false when the server is full (the call is then refused with {@link refusal}). */
  tryAcquire(): boolean;
  /** Gives back the slot of a call that ended. */
  release(): void;
  /** Calls in flight now. */
  readonly inFlight: number;
  /** RESOURCE_EXHAUSTED, with a ToolError, for a call beyond the limit; one instance for all of them. */
  readonly refusal: ConnectError;
}

/**
 * Creates the bound on calls in flight (`maxCallsInFlight`). The refusal is built once: a flood
 * is refused at the cost of a counter check, without an error object per call.
 */
export function createCallLimiter(maxCallsInFlight: number, logger: Logger): CallLimiter {
  let inFlight = 0;
  const refusal = toConnectError(
    new ToolRuntimeError(
      "RESOURCE_EXHAUSTED",
      ErrorType.ResourceExhausted,
      `the server has ${maxCallsInFlight} calls in flight, its limit: retry with backoff, or raise --max-calls-in-flight`,
    ),
    logger,
  );
  return {
    tryAcquire() {
      if (inFlight >= maxCallsInFlight) return false;
      inFlight += 1;
      return true;
    },
    release() {
      inFlight -= 1;
    },
    get inFlight() {
      return inFlight;
    },
    refusal,
  };
}
