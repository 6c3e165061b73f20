import { createHash, timingSafeEqual } from "node:crypto";
import type { PeerCertificate } from "node:tls";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { anonymousAdmin, type Grant, type Identity } from "./permissions.js";

/** How an identity proves who it is, and what it may do. */
export interface IdentityConfig {
  readonly name: string;
  /** SHA-256 hashes (hex) of the bearer tokens that authenticate as this identity. */
  readonly tokenSha256?: readonly string[];
  /** Client certificate subject common names (mutual TLS) that authenticate as this identity. */
  readonly certificateNames?: readonly string[];
  readonly grants: readonly Grant[];
}

/** What a call presents: its headers and, over mutual TLS, the client's certificate. */
export interface Credentials {
  readonly authorization: string | null;
  readonly peerCertificate: PeerCertificate | undefined;
}

/** Resolves the identity of a call, or throws UNAUTHENTICATED. */
export type Authenticator = (credentials: Credentials) => Identity;

/**
 * Builds the authenticator for `identities`. With none configured, authentication is off and every
 * caller is an anonymous admin. Otherwise a call must carry `authorization: Bearer <token>` whose
 * SHA-256 matches a configured hash (compared in constant time), or a verified client certificate
 * whose common name is configured.
 */
export function createAuthenticator(identities: readonly IdentityConfig[]): Authenticator {
  if (identities.length === 0) return () => anonymousAdmin;
  const byTokenHash = identities.flatMap((identity) =>
    (identity.tokenSha256 ?? []).map((hash) => ({ hash: Buffer.from(hash, "hex"), identity })),
  );
  const byCertificateName = new Map<string, IdentityConfig>();
  for (const identity of identities) {
    for (const name of identity.certificateNames ?? []) byCertificateName.set(name, identity);
  }
  return ({ authorization, peerCertificate }) => {
    if (authorization !== null) {
      const match = /^Bearer (\S+)$/i.exec(authorization);
      if (!match?.[1]) throw unauthenticated('the authorization header is malformed: send "Bearer <token>"');
      const presented = createHash("sha256").update(match[1]).digest();
      // Compare against every hash so the time taken does not reveal which one matched.
      let found: IdentityConfig | undefined;
      for (const candidate of byTokenHash) {
        if (timingSafeEqual(candidate.hash, presented) && !found) found = candidate.identity;
      }
      if (!found) throw unauthenticated("the bearer token is not recognised: check the token");
      return found;
    }
    const commonName = peerCertificate?.subject?.CN;
    const name = Array.isArray(commonName) ? commonName[0] : commonName;
    const byCertificate = name === undefined ? undefined : byCertificateName.get(name);
    if (byCertificate) return byCertificate;
    if (name !== undefined) throw unauthenticated(`client certificate "${name}" is not a configured identity`);
    throw unauthenticated(
      'the call carries no credentials: send "authorization: Bearer <token>" or a client certificate',
    );
  };
}

function unauthenticated(details: string): ToolRuntimeError {
  return new ToolRuntimeError("UNAUTHENTICATED", ErrorType.Unauthenticated, details);
}
