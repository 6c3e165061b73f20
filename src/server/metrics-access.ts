import type { Authenticator } from "../auth/authenticator.js";
import { isAllowed } from "../auth/permissions.js";
import { ToolRuntimeError } from "../errors/tool-runtime-error.js";
import type { NodeRequestHandler } from "./http-listener.js";
import { peerCertificateOf } from "./peer-certificate.js";

/** Whether a scrape of /metrics may proceed: null when it may, else the HTTP status and why not. */
export type MetricsGate = (
  request: Parameters<NodeRequestHandler>[0],
) => { readonly status: 401 | 403; readonly message: string } | null;

/**
 * The gate of /metrics. Metrics name every tool of every namespace, so with authentication on a
 * scrape must authenticate like a call (bearer token or client certificate) as an identity granted
 * `metrics.read` (or `admin`) on the pattern "*": 401 without valid credentials, 403 without the
 * grant. With authentication off, /metrics is open like every other endpoint.
 */
export function createMetricsGate(authenticate: Authenticator, authenticationOn: boolean): MetricsGate {
  if (!authenticationOn) return () => null;
  return (request) => {
    let identity;
    try {
      identity = authenticate({
        authorization: request.headers.authorization ?? null,
        peerCertificate: peerCertificateOf(request.socket),
      });
    } catch (error) {
      if (error instanceof ToolRuntimeError) return { status: 401, message: error.details };
      throw error;
    }
    if (isAllowed(identity, "metrics.read", "*")) return null;
    return {
      status: 403,
      message: `identity ${JSON.stringify(identity.name)} may not read metrics: grant it "metrics.read" on the pattern "*"`,
    };
  };
}
