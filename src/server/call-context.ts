import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { PeerCertificate } from "node:tls";
import { cancellationOfSignal, type CancellationView } from "../async/cancellation.js";
import { anonymousAdmin, type Identity } from "../auth/permissions.js";

/** The verified client certificate of a mutual-TLS call, set by the transport adapters. */
export const peerCertificateKey = createContextKey<PeerCertificate | undefined>(undefined, {
  description: "client certificate",
});

/** The identity of the caller, set by the call pipeline after authentication. */
export const identityKey = createContextKey<Identity>(anonymousAdmin, { description: "caller identity" });

/** The caller's identity in a handler context. */
export function callerOf(context: HandlerContext): Identity {
  return context.values.get(identityKey);
}

/** The W3C traceparent of the call's own span, set by the tracing observer. */
export const traceParentKey = createContextKey<string | undefined>(undefined, { description: "traceparent" });

/**
 * One request header of a call. A context that can read it without building the whole Headers
 * (the gRPC port's, from the call's metadata) is asked directly: authentication and tracing read
 * one header of every call.
 */
export function requestHeaderValue(context: HandlerContext, name: string): string | null {
  const direct = (context as { headerValue?: (name: string) => string | null }).headerValue;
  return direct ? direct.call(context, name) : context.requestHeader.get(name);
}

/**
 * The call's end as a cancellation: the gRPC port's context has one of its own, whose AbortSignal
 * is made only if some code reads `context.signal`; other contexts are viewed through their signal.
 */
export function callCancellation(context: HandlerContext): CancellationView {
  return (context as { cancellation?: CancellationView }).cancellation ?? cancellationOfSignal(context.signal);
}
