import { Metadata } from "@grpc/grpc-js";

const dateKey = "date";

/**
 * The `date` header of responses sent over HTTP/2, set by the server itself: the IMF-fixdate of
 * the current second (as `Date.prototype.toUTCString` writes it), the value Node's HTTP/2 would add.
 *
 * Why the server sets a header Node sets anyway: Node adds `date` in its `processHeaders` with a
 * keyed store whose key is a string of its native binding. When "date" was already internalized
 * before the first response (a module this server loads names it), V8 turns that key into a thin
 * string, and the store's inline cache misses at every response: V8 rewrites the cache each time
 * and, seeing the function's feedback change, never optimizes the function (both ports share it).
 * Headers that already hold `date` skip that store (see docs/design-notes.md, "Node's date header").
 */
let cachedSecond = Number.NaN;
let cachedDate = "";
let cachedHeaders = new Metadata();

/** The `date` header's value for `nowMs`, one string for all the responses of a second. */
export function httpDate(nowMs: number = Date.now()): string {
  const second = Math.floor(nowMs / 1000);
  if (second !== cachedSecond) {
    cachedDate = new Date(second * 1000).toUTCString();
    cachedSecond = second;
    const headers = new Metadata();
    headers.set(dateKey, cachedDate);
    cachedHeaders = headers;
  }
  return cachedDate;
}

/**
 * gRPC response headers holding only `date`, one object shared by the calls of a second. The
 * FrameWriter sends it, which exists only when no interceptor handles headers (see
 * grpc-frame-writer.ts): it reaches grpc-js's own call, which only reads it (`toHttp2Headers`).
 */
export function dateHeaders(nowMs: number = Date.now()): Metadata {
  httpDate(nowMs);
  return cachedHeaders;
}

/** `metadata` if it holds `date` already, otherwise a copy of it with the current one added. */
export function withDateHeader(metadata: Metadata): Metadata {
  if (metadata.get(dateKey).length > 0) return metadata;
  const copy = metadata.clone();
  copy.set(dateKey, httpDate());
  return copy;
}
