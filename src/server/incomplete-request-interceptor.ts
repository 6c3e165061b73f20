import { ServerInterceptingCall, ServerListenerBuilder, type ServerInterceptor } from "@grpc/grpc-js";
import { pino } from "pino";
import { invalidRequest } from "../errors/tool-runtime-error.js";
import { toGrpcStatus } from "./grpc-status.js";
import { toConnectError } from "./to-connect-error.js";

/**
 * Answers INVALID_ARGUMENT, with a ToolError, for a call to a method that takes one request whose
 * request stream ends without a complete message: it was empty, or cut short (a length prefix
 * announcing more bytes than arrived; grpc-js drops such a partial message at the end of the
 * stream). grpc-js itself would answer UNIMPLEMENTED, which says the method does not exist.
 */
export function incompleteRequestInterceptor(): ServerInterceptor {
  // The error is the client's: nothing reaches the log.
  const status = toGrpcStatus(
    toConnectError(
      invalidRequest(
        "the request stream ended without a complete message (it was empty, or shorter than its length prefix): send one length-prefixed protobuf message",
      ),
      pino({ enabled: false }),
    ),
  );
  return (method, call) => {
    if (method.requestStream) return new ServerInterceptingCall(call);
    let received = false;
    return new ServerInterceptingCall(call, {
      start: (next) =>
        next(
          new ServerListenerBuilder()
            .withOnReceiveMessage((message, forward) => {
              received = true;
              forward(message);
            })
            .withOnReceiveHalfClose((forward) => {
              if (received) forward();
              else call.sendStatus({ ...status, metadata: status.metadata.clone() });
            })
            .build(),
        ),
    });
  };
}
