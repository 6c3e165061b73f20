import type { DescMessage, JsonObject } from "@bufbuild/protobuf";
import type { BinaryOut } from "./binary-out.js";
import { writeStructFields } from "./struct-binary.js";

/**
 * The bytes that JSON objects of some Struct fields were decoded from, kept for a while so that an
 * answer carrying the same object back copies them instead of encoding it again. RegisterTool
 * answers with the spec it registered, schemas included: encoding a 1 KiB schema cost about as
 * much as checking it. Kept only for the fields of the message types named with
 * {@link echoStructFieldsOf}, whose objects nobody changes once decoded (a registry's specs), only
 * for objects decoded without loss (see `WireReader.lossy`: an entry without a value, or a Value
 * without a kind, reads as null, which the bytes do not say), and only for the latest
 * {@link capacity} of them. The bytes are held as a one-byte string (a copy for a fraction of a
 * microsecond, where a copy in a buffer of its own costs an ArrayBuffer), so that a request's
 * buffer is not held.
 */
const capacity = 256;
/** Larger objects are not kept (they are rare, and a copy of each would be kept). */
const maxBytes = 64 * 1024;

const echoingTypes = new WeakSet<DescMessage>();
const kept = new Map<JsonObject, string>();
/** The objects kept, in a ring: the one at `next` is the oldest, forgotten when another comes. */
const ring = new Array<JsonObject | undefined>(capacity);
let next = 0;

/** Keeps the decoded bytes of `schema`'s Struct fields (see the module comment). */
export function echoStructFieldsOf(schema: DescMessage): void {
  echoingTypes.add(schema);
}

/** Whether Struct fields of messages of `schema` keep their bytes. */
export function echoesStructFields(schema: DescMessage): boolean {
  return echoingTypes.has(schema);
}

/**
 * Keeps `bytes` (a Struct's content as read, each byte a character of a Latin-1 string) as the
 * encoding of `object`, just decoded from them.
 */
export function keepStructBytes(object: JsonObject, bytes: string): void {
  if (bytes.length > maxBytes) return;
  const oldest = ring[next];
  if (oldest) kept.delete(oldest);
  ring[next] = object;
  next = (next + 1) % capacity;
  kept.set(object, bytes);
}

/** Forgets the bytes of `object` (it is about to change: a second occurrence of its field merges into it). */
export function forgetStructBytes(object: JsonObject): void {
  kept.delete(object);
}

/** Writes a JSON object as a Struct's fields: the bytes it was decoded from when they are kept. */
export function writeJsonObjectFields(out: BinaryOut, object: JsonObject): void {
  if (kept.size > 0) {
    const bytes = kept.get(object);
    if (bytes) {
      out.latin1(bytes);
      return;
    }
  }
  writeStructFields(out, object);
}
