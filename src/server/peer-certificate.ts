import type { PeerCertificate, TLSSocket } from "node:tls";

/**
 * The verified client certificate of a TLS socket, or undefined when the connection is not TLS,
 * carries no certificate, or its certificate did not verify against the configured CA.
 */
export function peerCertificateOf(socket: unknown): PeerCertificate | undefined {
  const tls = socket as Partial<TLSSocket> | undefined;
  if (typeof tls?.getPeerCertificate !== "function" || tls.authorized !== true) return undefined;
  const certificate = tls.getPeerCertificate();
  return certificate.subject === undefined ? undefined : certificate;
}
