import { randomFillSync } from "node:crypto";

/** Random bytes drawn from the system's generator a batch at a time, sixteen per id. */
const random = Buffer.allocUnsafe(16 * 512);
let nextRandom = random.length;
/** Where an id's text is written before it is read as one string. */
const text = Buffer.allocUnsafe(36);
/** The two hexadecimal digits of each byte value, as character codes. */
const hexHigh = new Uint8Array(256);
const hexLow = new Uint8Array(256);
for (let value = 0; value < 256; value++) {
  const digits = value.toString(16).padStart(2, "0");
  hexHigh[value] = digits.charCodeAt(0);
  hexLow[value] = digits.charCodeAt(1);
}
/** Where each of the sixteen bytes' two digits go in the text (after the dashes that precede it). */
const positions = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
const dash = "-".charCodeAt(0);
text[8] = text[13] = text[18] = text[23] = dash;

/**
 * A new execution id: a random version 4 UUID (RFC 9562), as one flat string of 36 one-byte
 * characters. Its bytes come from a batch drawn with `randomFillSync`, as `crypto.randomUUID` draws
 * them, and its text is written into a buffer and read out at once: `randomUUID()` builds its text
 * from about twenty concatenated pieces, which V8 keeps as a tree of string nodes (some 430 bytes)
 * until something flattens it, and a record holds its id for as long as it is retained.
 */
export function newExecutionId(): string {
  if (nextRandom === random.length) {
    randomFillSync(random);
    nextRandom = 0;
  }
  const at = nextRandom;
  nextRandom += 16;
  // Version 4 in the high nibble of byte 6, the variant (binary 10) in the top bits of byte 8.
  random[at + 6] = ((random[at + 6] as number) & 0x0f) | 0x40;
  random[at + 8] = ((random[at + 8] as number) & 0x3f) | 0x80;
  for (let i = 0; i < 16; i++) {
    const byte = random[at + i] as number;
    const position = positions[i] as number;
    text[position] = hexHigh[byte] as number;
    text[position + 1] = hexLow[byte] as number;
  }
  return text.toString("latin1", 0, 36);
}
