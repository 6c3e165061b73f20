/**
 * What a request frame (gRPC, gRPC-Web, Connect streaming) with flags other than 0x00 and 0x01 is
 * told, on both ports: a client's frame is uncompressed or compressed, nothing else.
 */
export function badFrameFlagsMessage(flags: number): string {
  return `request frame has flags 0x${flags.toString(16).padStart(2, "0")}: a client sends only 0x00 (uncompressed) or 0x01 (compressed)`;
}
