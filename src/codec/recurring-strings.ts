import type { WireReader } from "./wire-reader.js";

/**
 * The strings that recur in Structs, decoded once. A JSON Schema is mostly the same few dozen
 * keys ("type", "description", "properties") and short values ("object", "string"), and a
 * registry's tools share many property names. Decoding each occurrence made a new string, which
 * V8 then looked up in its table of internalized strings to use it as a property key, and which
 * lived as long as the schema did. A small table indexed by a hash of the bytes holds the latest
 * string of each slot; a hit is compared byte for byte, so a collision costs only a miss, and a
 * string from the table is the string the bytes spell, like any other.
 *
 * A one-time measurement (decoding RegisterTool requests of 1 KiB schemas, both ways in one
 * process): 0.84–0.88× the time with keys and short values from the table.
 */
const slotCount = 2048;
const slots: string[] = new Array<string>(slotCount).fill("");

/** Longest Struct key looked up in the table, in bytes. */
export const maxRecurringKeyBytes = 40;
/** Longest string value looked up, in bytes: longer ones (descriptions) rarely recur. */
export const maxRecurringValueBytes = 24;

/**
 * The string of the length-delimited field at the reader's position when it is ASCII, at most
 * `maxBytes` long and its length takes one byte: from the table when the table holds it, otherwise
 * decoded and put there. Undefined, with the reader where it was, for any other string or a length
 * running past the bytes: the caller reads those as usual. (A length in one byte is never a
 * longer form than it needs: nothing for `WireReader.lossy`.)
 */
export function recurringString(reader: WireReader, maxBytes: number): string | undefined {
  const buf = reader.buf;
  const length = buf[reader.pos];
  // A first byte of 0x80 or more starts a longer length, whatever `maxBytes` says.
  if (length === undefined || length > maxBytes || length >= 0x80) return undefined;
  const start = reader.pos + 1;
  const end = start + length;
  if (end > buf.length) return undefined;
  let hash = length;
  for (let at = start; at < end; at++) {
    const byte = buf[at] as number;
    if (byte >= 0x80) return undefined;
    hash = (Math.imul(hash, 31) + byte) | 0;
  }
  reader.pos = end;
  const slot = hash & (slotCount - 1);
  const held = slots[slot] as string;
  if (held.length === length && spells(held, buf, start)) return held;
  const text = reader.latin1(start, end);
  slots[slot] = text;
  return text;
}

/** Whether the ASCII string `text` is the bytes of `buf` from `start`, for its length. */
function spells(text: string, buf: Buffer, start: number): boolean {
  for (let index = 0; index < text.length; index++) {
    if (text.charCodeAt(index) !== buf[start + index]) return false;
  }
  return true;
}
