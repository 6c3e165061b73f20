/**
 * Frames one message the way gRPC and Connect streams carry it: a flags byte (0: not compressed),
 * the length as a 4-byte big-endian integer, then the message bytes.
 */
export function frameMessage(message: Uint8Array): Buffer {
  const framed = Buffer.alloc(5 + message.byteLength);
  framed.writeUInt32BE(message.byteLength, 1);
  framed.set(message, 5);
  return framed;
}

/** Splits a body of length-prefixed frames into their messages and flags. Throws on a cut frame. */
export function unframeMessages(body: Buffer): { flags: number; message: Buffer }[] {
  const frames: { flags: number; message: Buffer }[] = [];
  let offset = 0;
  while (offset < body.length) {
    if (offset + 5 > body.length) throw new Error(`frame header cut at byte ${offset} of ${body.length}`);
    const flags = body.readUInt8(offset);
    const length = body.readUInt32BE(offset + 1);
    const end = offset + 5 + length;
    if (end > body.length) throw new Error(`frame of ${length} bytes cut at byte ${body.length}`);
    frames.push({ flags, message: body.subarray(offset + 5, end) });
    offset = end;
  }
  return frames;
}
