import http2 from "node:http2";

/** What a raw HTTP/2 request got back: its status, its headers with the trailers folded in, its body. */
export interface RawHttp2Answer {
  readonly status: number;
  readonly headers: http2.IncomingHttpHeaders;
  readonly body: Buffer;
}

/** POSTs `body` with `contentType` over cleartext HTTP/2, on a connection of its own. */
export async function postRawHttp2(
  baseUrl: string,
  path: string,
  contentType: string,
  body: Buffer | string,
  extraHeaders: http2.OutgoingHttpHeaders = {},
): Promise<RawHttp2Answer> {
  const session = http2.connect(baseUrl);
  try {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": contentType,
      te: "trailers",
      ...extraHeaders,
    });
    const answer = new Promise<RawHttp2Answer>((resolve, reject) => {
      let headers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on("response", (received) => (headers = received));
      stream.on("trailers", (trailers: http2.IncomingHttpHeaders) => (headers = { ...headers, ...trailers }));
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => resolve({ status: Number(headers[":status"]), headers, body: Buffer.concat(chunks) }));
      stream.on("error", reject);
    });
    stream.end(body);
    return await answer;
  } finally {
    session.close();
  }
}

/** The contents of the first enveloped frame of `body` whose flags are `flags`; empty when there is none. */
export function frameWithFlag(body: Buffer, flags: number): Buffer {
  let offset = 0;
  for (let frames = 0; frames < 1000 && offset + 5 <= body.length; frames += 1) {
    const length = body.readUInt32BE(offset + 1);
    if (body[offset] === flags) return body.subarray(offset + 5, offset + 5 + length);
    offset += 5 + length;
  }
  return Buffer.alloc(0);
}
