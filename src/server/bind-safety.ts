import { isIP } from "node:net";

/**
 * Whether `host` is a loopback address, reachable from this machine only: "localhost", 127.0.0.0/8,
 * ::1, and 127.0.0.0/8 mapped into IPv6 (`::ffff:127.0.0.1`), in any spelling of IPv6.
 */
export function isLoopback(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (bare === "localhost") return true;
  const family = isIP(bare);
  if (family === 4) return bare.startsWith("127.");
  if (family !== 6) return false;
  // The URL parser writes IPv6 in its canonical form: "::1", and "::ffff:7fxx:xxxx" for mapped 127/8.
  const canonical = new URL(`http://[${bare}]/`).hostname;
  return canonical === "[::1]" || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(canonical);
}

/** What decides whether a bind is safe. */
export interface BindSecurity {
  readonly host: string;
  readonly tls: boolean;
  readonly identities: number;
  readonly allowInsecureRemote: boolean;
}

/**
 * Throws an Error saying why when the server would listen beyond loopback without both TLS and
 * identities: without TLS bearer tokens cross the network in clear, without identities every caller
 * is an admin. `allowInsecureRemote` lifts the rule.
 */
export function ensureSafeBind({ host, tls, identities, allowInsecureRemote }: BindSecurity): void {
  if (isLoopback(host) || allowInsecureRemote || (tls && identities > 0)) return;
  const where = `refusing to listen on ${JSON.stringify(host)}`;
  const override = "or pass --allow-insecure-remote (allowInsecureRemote) to accept the risk";
  if (!tls && identities === 0) {
    throw new Error(
      `${where} without TLS or authentication: anyone who can reach it could run its tools; configure TLS and identities, ${override}`,
    );
  }
  if (!tls) {
    throw new Error(
      `${where} with identities but without TLS: bearer tokens would cross the network in clear; configure --tls-cert and --tls-key, ${override}`,
    );
  }
  throw new Error(
    `${where} with TLS but without identities: every caller would be an admin; configure identities in the config file, ${override}`,
  );
}
