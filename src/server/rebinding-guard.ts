import net from "node:net";

/** What {@link createRebindingGuard} allows beyond loopback names and address literals. */
export interface RebindingGuardOptions {
  /** Host names (without port) served besides localhost and IP addresses; compared case-insensitively. */
  readonly allowedHosts: readonly string[];
  /** Origins whose pages may call besides the server's own origin (the CORS list, `--cors-origin`). */
  readonly corsOrigins: readonly string[];
}

/**
 * The DNS rebinding checks of a server without authentication. A page on attacker.example whose
 * name the attacker re-points at 127.0.0.1 calls the server as "same origin": its requests name
 * the attacker's host (Host, HTTP/2 `:authority`) and its pages' origin (Origin). So only requests
 * to loopback names, to an IP address (no name, so nothing to re-point), or to a configured
 * allowed host are served, and a request from a browser page only when that page is the server's
 * own origin or a CORS origin.
 */
export interface RebindingGuard {
  /**
   * Why a request to `authority` (a Host header or `:authority`, such as "localhost:8080") is
   * refused; undefined when it is served.
   */
  refuseHost(authority: string | undefined): string | undefined;
  /**
   * Why a request from a page on `origin`, made to `scheme://authority`, is refused; undefined
   * when it is served (its origin is a CORS origin, or the server's own origin as named).
   */
  refuseOrigin(origin: string, scheme: "http" | "https", authority: string): string | undefined;
}

/** Host names that always mean this machine. */
const loopbackNames = new Set(["localhost"]);

// Host names and ports, IPv4 and bracketed IPv6 literals: nothing else belongs in an authority.
const authorityCharacters = /^[a-z0-9._~\-[\]:%]+$/i;

/** Creates the guard; it allows nothing but what its options and loopback names allow. */
export function createRebindingGuard(options: RebindingGuardOptions): RebindingGuard {
  const allowedHosts = new Set(options.allowedHosts.map((host) => host.toLowerCase()));
  const corsOrigins = new Set(options.corsOrigins);
  return {
    refuseHost(authority) {
      if (authority === undefined || authority === "") {
        return "the request names no host: send a Host header or an HTTP/2 :authority such as 127.0.0.1:8080";
      }
      const hostName = hostNameOf(authority);
      if (hostName !== undefined && (isAddressLiteral(hostName) || loopbackNames.has(hostName))) return undefined;
      if (hostName !== undefined && allowedHosts.has(hostName)) return undefined;
      const shown = hostName ?? authority;
      return `host "${shown}" is not served while authentication is off (DNS rebinding protection): call localhost, 127.0.0.1 or [::1], or allow the name with --allowed-host ${shown}`;
    },
    refuseOrigin(origin, scheme, authority) {
      if (corsOrigins.has(origin) || originOf(`${scheme}://${authority}`) === origin) return undefined;
      return `origin "${origin}" may not call this server while authentication is off (DNS rebinding protection): serve the page from the server's own origin, or allow it with --cors-origin ${origin}`;
    },
  };
}

/**
 * Checks one `--allowed-host` value: a DNS name without port, such as toolruntime.internal.
 * Returns an error message naming it, or undefined when it is valid.
 */
export function checkAllowedHost(value: string): string | undefined {
  const label = "[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?";
  return new RegExp(`^${label}(\\.${label})*$`, "i").test(value) && value.length <= 253
    ? undefined
    : `--allowed-host "${value}" is invalid: use a host name without scheme or port, for example toolruntime.internal`;
}

/** The lowercase host name of an authority ("[::1]" for IPv6), or undefined when it is malformed. */
function hostNameOf(authority: string): string | undefined {
  if (!authorityCharacters.test(authority)) return undefined;
  try {
    return new URL(`http://${authority}`).hostname;
  } catch {
    return undefined;
  }
}

/** Whether a host name is an IPv4 address or a bracketed IPv6 address (as URL gives them). */
function isAddressLiteral(hostName: string): boolean {
  if (hostName.startsWith("[") && hostName.endsWith("]")) return net.isIPv6(hostName.slice(1, -1));
  return net.isIPv4(hostName);
}

/** The serialised origin of a URL, or undefined when it is not one. */
function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
