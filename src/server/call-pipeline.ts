import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Authenticator } from "../auth/authenticator.js";
import { ErrorType, isToolRuntimeError, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { callCancellation, identityKey, peerCertificateKey, requestHeaderValue } from "./call-context.js";
import { asError, iterableOf, SettledStream, startOf, wrapStream, type StartedStream } from "./message-batches.js";
import { toConnectError } from "./to-connect-error.js";

/** Observes one call: returns the function to call with its final status code (0 for OK). */
export type CallObserver = (method: DescMethod, context: HandlerContext) => (code: number) => void;

/** What every call goes through before and after its implementation. */
export interface CallPipelineOptions {
  readonly logger: Logger;
  /** Whether the server is shutting down: new calls are then refused with UNAVAILABLE. */
  readonly isClosing: () => boolean;
  /** Resolves the caller's identity or throws UNAUTHENTICATED. */
  readonly authenticate: Authenticator;
  /** Observers for metrics, logs and traces. */
  readonly observers: readonly CallObserver[];
}

type AnyMethod = (request: unknown, context: HandlerContext) => unknown;

/**
 * Wraps every method of a service implementation so that each call: is refused with UNAVAILABLE
 * once shutdown has begun; is authenticated (its identity put in the context); is observed by the
 * metrics, log and trace observers with its final code; and whatever it throws, synchronously, as a
 * rejection, or from inside a stream, leaves as a ConnectError made by toConnectError. A unary
 * method answers as its implementation does: at once when it returns a value (the error thrown),
 * as a promise when it returns one. Both transports mount the wrapped implementation, so both
 * answer alike.
 */
export function wrapService<S extends DescService>(
  service: S,
  implementation: ServiceImpl<S>,
  options: CallPipelineOptions,
): ServiceImpl<S> {
  const wrapped: Record<string, AnyMethod> = {};
  for (const method of service.methods) {
    const original = (implementation as unknown as Record<string, AnyMethod>)[method.localName];
    if (!original) continue;
    const admit = (context: HandlerContext): void => {
      if (options.isClosing()) {
        throw new ToolRuntimeError(
          "UNAVAILABLE",
          ErrorType.Unavailable,
          "the server is shutting down: retry the call, another replica or the restarted server will take it",
        );
      }
      const identity = options.authenticate({
        authorization: requestHeaderValue(context, "authorization"),
        peerCertificate: context.values.get(peerCertificateKey),
      });
      context.values.set(identityKey, identity);
    };
    // The ConnectError a failed call ends with, once its observers heard its code.
    const failed = (error: unknown, finish: (code: number) => void): ConnectError => {
      const connectError = toConnectError(error, options.logger);
      finish(connectError.code);
      return connectError;
    };
    const observe = (context: HandlerContext): ((code: number) => void) => {
      const finishers = options.observers.map((observer) => observer(method, context));
      return (code) => finishers.forEach((finish) => finish(code));
    };
    // A stream's messages, observed from its first step (by `observers`, or by its own when
    // started synchronously): its error mapped, and its observers told its final code.
    const observed = async function* <T>(
      source: () => AsyncIterable<T>,
      context: HandlerContext,
      observers?: (code: number) => void,
    ) {
      const finish = observers ?? observe(context);
      let code: number = Code.Canceled;
      try {
        yield* source();
        code = 0;
      } catch (error) {
        const connectError = streamError(error, context);
        code = connectError.code;
        throw connectError;
      } finally {
        // A stream that its client abandoned ends here without an error: CANCELLED.
        finish(code);
      }
    };
    const streamError = (error: unknown, context: HandlerContext): ConnectError =>
      toConnectError(endedByCaller(error, context) ?? error, options.logger);
    // The synchronous start of a stream (see message-batches.ts): admitted and started now; a
    // settled one is handed on with its error mapped and its observers told when it is over.
    const startNow = (request: unknown, context: HandlerContext): StartedStream<unknown> => {
      const finish = observe(context);
      let started: StartedStream<unknown>;
      try {
        admit(context);
        started = startOf(original(request, context) as AsyncIterable<unknown>);
      } catch (error) {
        started = new SettledStream([], () => asError(error));
      }
      if (!(started instanceof SettledStream)) {
        const batches = started.batches;
        return { batches: observed(() => iterableOf(batches), context, finish) };
      }
      const end = started.end;
      return new SettledStream(
        started.batch,
        () => {
          const error = end();
          return error === undefined ? undefined : streamError(error, context);
        },
        finish,
      );
    };
    wrapped[method.localName] =
      method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming"
        ? (request, context) =>
            // Wrapped message by message for Connect, batch by batch for grpc-js (see message-batches.ts).
            wrapStream(
              () => original(request, context) as AsyncIterable<unknown>,
              // Admitted inside, so that a refusal ends the stream with its error.
              <T>(source: () => AsyncIterable<T>) =>
                observed(() => {
                  admit(context);
                  return source();
                }, context),
              () => startNow(request, context),
            )
        : (request, context) => {
            // Not async: an implementation that answers at once (ExecuteTool of a run that ended
            // inside start) is answered without a promise; the gRPC adapter sends it at once, and
            // Connect awaits whatever it gets. Throws, or rejects, with a ConnectError.
            const finish = observe(context);
            let response: unknown;
            try {
              admit(context);
              response = original(request, context);
            } catch (error) {
              throw failed(error, finish);
            }
            if (!(response instanceof Promise)) {
              finish(codeOfAnswered(context));
              return response;
            }
            return response.then(
              (value: unknown) => {
                finish(codeOfAnswered(context));
                return value;
              },
              (error: unknown) => {
                throw failed(error, finish);
              },
            );
          };
  }
  return wrapped as unknown as ServiceImpl<S>;
}

/**
 * The code a unary call that its service answered ends with: OK, unless the call was over already
 * (its client cancelled, its deadline passed: ExecuteTool answers such a call with the run's
 * CancelledError result, which nobody receives), in which case the reason's code, as a stream's.
 */
function codeOfAnswered(context: HandlerContext): number {
  const call = callCancellation(context);
  if (!call.aborted) return 0;
  const reason: unknown = call.reason;
  return reason instanceof ConnectError && reason.code !== Code.Internal && reason.code !== Code.Unknown
    ? reason.code
    : Code.Canceled;
}

/**
 * When a stream's call was already over (its client left, its deadline passed, the server shut
 * down), what its writer throws afterwards is the consequence, not a bug: the call ends with the
 * reason of its signal (CANCELLED when none) and nothing is logged as an internal error.
 */
function endedByCaller(thrown: unknown, context: HandlerContext): ConnectError | undefined {
  const call = callCancellation(context);
  if (!call.aborted || isToolRuntimeError(thrown)) return undefined;
  if (thrown instanceof ConnectError && thrown.code !== Code.Internal && thrown.code !== Code.Unknown) return undefined;
  const reason: unknown = call.reason;
  return reason instanceof ConnectError && reason.code !== Code.Internal && reason.code !== Code.Unknown
    ? reason
    : new ConnectError("the call was cancelled by the client", Code.Canceled);
}
