import { Metadata } from "@grpc/grpc-js";

const dateKey = "date";

/**
 * Response headers holding only `date`, the value Node's HTTP/2 would add itself (the IMF-fixdate
 * of the current second, as `Date.prototype.toUTCString` writes it), one object shared by the
 * calls of a second. grpc-js only reads the metadata it sends (`toHttp2Headers`), never changes it.
 *
 * Why the server sets a header Node sets anyway: Node adds `date` in its `processHeaders` with a
 * keyed store whose key is a string of its native binding. When "date" was already internalized
 * before the first response (a module this server loads names it), V8 turns that key into a thin
 * string, and the store's inline cache misses at every response: V8 rewrites the cache each time
 * and, seeing the function's feedback change, never optimizes the function. Headers that already
 * hold `date` skip that store (see the design notes, "Node's date header").
 */
let cachedSecond = Number.NaN;
let cachedHeaders = new Metadata();

export function dateHeaders(nowMs: number = Date.now()): Metadata {
  const second = Math.floor(nowMs / 1000);
  if (second !== cachedSecond) {
    const headers = new Metadata();
    headers.set(dateKey, new Date(second * 1000).toUTCString());
    cachedHeaders = headers;
    cachedSecond = second;
  }
  return cachedHeaders;
}

/** `metadata` if it holds `date` already, otherwise a copy of it with the current one added. */
export function withDateHeader(metadata: Metadata): Metadata {
  if (metadata.get(dateKey).length > 0) return metadata;
  const copy = metadata.clone();
  copy.set(dateKey, dateHeaders().get(dateKey)[0] as string);
  return copy;
}
