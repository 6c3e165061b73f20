import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { maxJsonNesting, nestsDeeperThan, tooDeepMessage } from "../../json/json-nesting.js";

/** A request body read whole: its bytes and, when it is JSON, its value. */
export type JsonBody =
  | { readonly kind: "json"; readonly bytes: Buffer; readonly value: unknown }
  | { readonly kind: "not_json"; readonly bytes: Buffer }
  | { readonly kind: "empty" }
  | { readonly kind: "too_large"; readonly message: string }
  | { readonly kind: "too_deep"; readonly message: string };

/**
 * Reads a request body up to `maxBytes` and parses it as JSON when it can. A body over the bound
 * (by its content-length or as it arrives) is not read further: "too_large". One nested deeper
 * than {@link maxJsonNesting} is not parsed (its parse alone could hold the event loop): "too_deep".
 */
export async function readJsonBody(request: IncomingMessage | Http2ServerRequest, maxBytes: number): Promise<JsonBody> {
  const tooLarge = {
    kind: "too_large",
    message: `the request body is larger than ${maxBytes} bytes: send a smaller message`,
  } as const;
  if (Number(request.headers["content-length"] ?? 0) > maxBytes) return tooLarge;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return tooLarge;
    chunks.push(chunk);
  }
  if (size === 0) return { kind: "empty" };
  const bytes = Buffer.concat(chunks, size);
  if (nestsDeeperThan([bytes], maxJsonNesting)) return { kind: "too_deep", message: tooDeepMessage(maxJsonNesting) };
  try {
    return { kind: "json", bytes, value: JSON.parse(bytes.toString("utf8")) as unknown };
  } catch {
    return { kind: "not_json", bytes };
  }
}
