import { Metadata, type StatusObject } from "@grpc/grpc-js";
import type { ConnectError } from "@connectrpc/connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";

const detailsHeader = "grpc-status-details-bin";

/**
 * Turns a ConnectError into the status grpc-js sends: the same code and message, and the error's
 * details as a `google.rpc.Status` in `grpc-status-details-bin`, encoded by Connect's own gRPC
 * protocol code so that both ports produce byte-identical details.
 */
export function toGrpcStatus(error: ConnectError): StatusObject {
  const trailer = setTrailerStatus(new Headers(), error);
  const metadata = new Metadata();
  const encoded = trailer.get(detailsHeader);
  if (encoded !== null) metadata.set(detailsHeader, Buffer.from(encoded, "base64"));
  // Connect's codes are the gRPC codes, number for number.
  return { code: error.code as number, details: error.rawMessage, metadata };
}

/** Copies the text entries of gRPC metadata into Headers (binary entries are left out). */
export function metadataToHeaders(metadata: Metadata): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(metadata.getMap())) {
    if (typeof value === "string") headers.set(key, value);
  }
  return headers;
}
