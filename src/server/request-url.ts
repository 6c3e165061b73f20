import type http from "node:http";
import type http2 from "node:http2";

/**
 * The absolute URL of a request to the HTTP port, made of the authority it names (HTTP/2's
 * `:authority`, else its Host header) and its path; undefined when it names no authority that
 * makes a valid URL (an HTTP/1.0 request without Host, a Host such as "[::1"). Connect's handlers
 * and the MCP SDK both need this URL and fail on such a request with errors of their own (an
 * exception in the server's request event, a 500): it is the client's malformed request, which
 * the caller answers 400.
 */
export function requestUrlOf(request: http.IncomingMessage | http2.Http2ServerRequest): string | undefined {
  const authority = ("authority" in request ? request.authority : undefined) ?? request.headers.host;
  if (authority === undefined || authority === "") return undefined;
  // Some code reads Host before :authority (the MCP SDK's adapter): a Host given must be valid too.
  const host = request.headers.host;
  if (host !== undefined && host !== authority && !URL.canParse(`http://${host}`)) return undefined;
  const encrypted = "encrypted" in request.socket && request.socket.encrypted === true;
  try {
    return new URL(request.url ?? "", `${encrypted ? "https" : "http"}://${authority}`).toString();
  } catch {
    return undefined;
  }
}

/** What a request that names no valid authority is told, with its 400. */
export const noAuthorityMessage =
  "the request names no valid authority: send an HTTP/1.1 Host header or an HTTP/2 :authority, such as 127.0.0.1:8080";

/**
 * Rewrites an HTTP/1.1 request in absolute form (`POST http://host:port/path HTTP/1.1`, which RFC
 * 9112 §3.2.2 says a server must accept) to the origin form every route matches (`/path`), its
 * authority taking the Host header's place, as the RFC asks. Returns false when the target is in
 * absolute form but not a valid http or https URL. Other requests are left alone.
 */
export function toOriginForm(request: http.IncomingMessage | http2.Http2ServerRequest): boolean {
  const target = request.url ?? "";
  if (target.startsWith("/") || !/^https?:\/\//i.test(target)) return true;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return false;
  }
  request.url = `${url.pathname}${url.search}`;
  request.headers.host = url.host;
  return true;
}
