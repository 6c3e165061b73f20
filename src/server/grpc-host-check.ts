import type { ServerInterceptor } from "@grpc/grpc-js";
import { pino } from "pino";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { toGrpcStatus } from "./grpc-status.js";
import type { RebindingGuard } from "./rebinding-guard.js";
import { toConnectError } from "./to-connect-error.js";

// The refusal is the client's: nothing reaches the log.
const silent = pino({ enabled: false });

/** Health checks are served whatever the authority: they carry no data (see rebinding-http.ts). */
const healthPathPrefix = "/grpc.health.v1.Health/";

/**
 * Runs `next` for calls whose `:authority` (or Host) `guard` serves, and answers the others at
 * once with PERMISSION_DENIED and a ToolError: their handler never starts (grpc-js's call ignores
 * `start` once its status went). Health checks are not refused. `Origin` is not looked at here:
 * no browser can make a call on the gRPC port (it speaks HTTP/2 only over TLS, where a re-pointed
 * name fails the certificate, and a cross-origin `application/grpc` request needs a preflight
 * that grpc-js does not answer).
 */
export function withHostCheck(guard: RebindingGuard | undefined, next: ServerInterceptor): ServerInterceptor {
  if (guard === undefined) return next;
  return (method, call) => {
    if (!method.path.startsWith(healthPathPrefix)) {
      const refusal = guard.refuseHost(call.getHost());
      if (refusal !== undefined) {
        const error = new ToolRuntimeError("PERMISSION_DENIED", ErrorType.PermissionDenied, refusal);
        call.sendStatus(toGrpcStatus(toConnectError(error, silent)));
      }
    }
    return next(method, call);
  };
}
