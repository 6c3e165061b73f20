import http from "node:http";
import http2 from "node:http2";

/** What a server answered to one replayed request. */
export interface ReplayedResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** HTTP/2 trailers (gRPC puts grpc-status there); empty over HTTP/1.1. */
  readonly trailers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

function headerObject(headers: readonly string[]): Record<string, string> {
  const result: Record<string, string> = {};
  for (const header of headers) {
    const colon = header.indexOf(":");
    result[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
  }
  return result;
}

/**
 * Sends one POST with exactly the body and headers h2load sends, over cleartext HTTP/2 with prior
 * knowledge, and returns the whole response with its trailers.
 */
export function replayHttp2(url: string, headers: readonly string[], body: Buffer): Promise<ReplayedResponse> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const session = http2.connect(target.origin);
    session.once("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": target.pathname,
      ...headerObject(headers),
    });
    let responseHeaders: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.once("response", (received) => (responseHeaders = received));
    stream.once("trailers", (received: http2.IncomingHttpHeaders) => {
      trailers = received;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.once("error", (error: Error) => {
      session.close();
      reject(error);
    });
    stream.once("end", () => {
      session.close();
      resolve({
        status: Number(responseHeaders[":status"] ?? 0),
        headers: responseHeaders,
        trailers,
        body: Buffer.concat(chunks),
      });
    });
    stream.end(body);
  });
}

/** Sends one POST with exactly the body and headers h2load sends, over HTTP/1.1. */
export function replayHttp1(url: string, headers: readonly string[], body: Buffer): Promise<ReplayedResponse> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: "POST", headers: { ...headerObject(headers), "content-length": String(body.length) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.once("error", reject);
        response.once("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            trailers: {},
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    request.once("error", reject);
    request.end(body);
  });
}
