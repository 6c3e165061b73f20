/** The gRPC status codes the bench's HTTP/2 client produces itself (the server's are passed on as sent). */
export const GrpcCode = {
  OK: 0,
  UNKNOWN: 2,
  UNAUTHENTICATED: 16,
  PERMISSION_DENIED: 7,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** A non-OK gRPC status, as a rejection: the code and the (decoded) message. */
export class GrpcCallError extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(`gRPC status ${code}: ${details}`);
    this.name = "GrpcCallError";
  }
}

/**
 * The status a response without `grpc-status` stands for, by its HTTP status, as the gRPC spec
 * maps them ("HTTP to gRPC Status Code Mapping"): 200 without a status is UNKNOWN.
 */
export function codeOfHttpStatus(httpStatus: number): number {
  switch (httpStatus) {
    case 400:
      return GrpcCode.INTERNAL;
    case 401:
      return GrpcCode.UNAUTHENTICATED;
    case 403:
      return GrpcCode.PERMISSION_DENIED;
    case 404:
      return GrpcCode.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcCode.UNAVAILABLE;
    default:
      return GrpcCode.UNKNOWN;
  }
}

const percentEscape = /%([0-9A-Fa-f]{2})/g;

/**
 * Decodes a `grpc-message` value: percent-encoded UTF-8 bytes, where a `%` not followed by two hex
 * digits stands for itself (the spec asks receivers to keep such text rather than reject it).
 */
export function decodeGrpcMessage(value: string): string {
  if (!value.includes("%")) return value;
  const bytes: number[] = [];
  let last = 0;
  for (const match of value.matchAll(percentEscape)) {
    bytes.push(...Buffer.from(value.slice(last, match.index), "utf8"), parseInt(match[1] as string, 16));
    last = match.index + match[0].length;
  }
  bytes.push(...Buffer.from(value.slice(last), "utf8"));
  return Buffer.from(bytes).toString("utf8");
}
