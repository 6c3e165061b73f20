import type { DescMessage, JsonObject } from "@bufbuild/protobuf";
import type { BinaryOut } from "./binary-out.js";
import { writeStructFields } from "./struct-binary.js";

/**
 * The bytes that JSON objects of some Struct fields were decoded from, kept so that an answer
 * carrying the same object back copies them instead of encoding it again. RegisterTool answers
 * with the spec it registered, schemas included: encoding a 1 KiB schema cost about as much as
 * checking it. Kept only:
 * - for the Struct fields of the message types named with {@link echoStructFieldsOf}, whose
 *   objects nobody changes once decoded (ToolSpec: a registry's specs are shared with every
 *   reader, and no other holder of a decoded spec changes its schemas);
 * - for bytes that protobuf-es would write back exactly as they are (see `WireReader.lossy` and
 *   struct-from-binary.ts): no longer forms, no unknown fields, nothing read as null that the
 *   bytes do not hold, keys in the order the object lists them (array-index keys first, in
 *   ascending order, as JavaScript lists them), so that an answer is byte for byte what encoding
 *   the object gives, whichever answer comes first, and never carries bytes that another
 *   client's decoder could read otherwise, or refuse;
 * - for Structs of at most {@link maxEchoedBytes}, held as a one-byte string (a copy for a fraction
 *   of a microsecond, where a copy in a buffer of its own costs an ArrayBuffer);
 * - weakly, and until they are copied once: an object dropped (a request that failed its checks)
 *   takes its bytes with it, and the first encoding that copies them (RegisterTool's answer, a
 *   GetTool answer of a spec just unpacked, a watch event) lets go of them, unless they were
 *   marked with {@link keepForOneMoreCopy}: a spec queued for packing keeps them for the packer,
 *   which otherwise encoded its schemas anew (about 5 µs of a registration's 140 when
 *   registrations never pause and each packs one spec; see BackgroundPacking). Any encoding in
 *   between (a watcher's event) takes that copy. So at most the specs waiting to be packed (32,768
 *   a registry) hold their bytes beside their objects, about doubling what a waiting spec holds,
 *   and a spec whose answer was never encoded (its call cancelled) holds them until it is packed:
 *   at most {@link maxEchoedBytes} per Struct. The registry holds its own copy of the specs a
 *   provider announces, which keeps none (the announcement's objects keep theirs while the
 *   connection holds the announcement).
 *
 * The latest objects were once kept in a ring of `WeakRef`s, so that any answer within the next
 * few hundred decodes could echo them: making a `WeakRef` per schema cost more than the second
 * echoes it allowed (decoding and answering RegisterTool in one process: 0.87–0.95× the time
 * without the ring).
 */
const echoingTypes = new WeakSet<DescMessage>();
const kept = new WeakMap<JsonObject, string>();
/** Objects whose kept bytes outlive their next copy (see {@link keepForOneMoreCopy}). */
const oneMoreCopy = new WeakSet<JsonObject>();

/** Larger Structs are not kept: they are rare, and each copy would be as large. */
export const maxEchoedBytes = 64 * 1024;

/** Keeps the decoded bytes of `schema`'s Struct fields (see the module comment). */
export function echoStructFieldsOf(schema: DescMessage): void {
  echoingTypes.add(schema);
}

/** Whether Struct fields of messages of `schema` keep their bytes. */
export function echoesStructFields(schema: DescMessage): boolean {
  return echoingTypes.has(schema);
}

/**
 * Keeps `bytes` (a Struct's content as read, each byte a character of a Latin-1 string, at most
 * {@link maxEchoedBytes}) as the encoding of `object`, just decoded from them.
 */
export function keepStructBytes(object: JsonObject, bytes: string): void {
  kept.set(object, bytes);
}

/**
 * Lets the kept bytes of `object`, if any, outlive its next copy: they are let go at the one after
 * (a spec queued for packing: its answer, then the packer).
 */
export function keepForOneMoreCopy(object: JsonObject | undefined): void {
  if (object !== undefined && kept.has(object)) oneMoreCopy.add(object);
}

/** Whether bytes are kept for `object` (tests follow when they are copied and let go with it). */
export function hasKeptBytes(object: JsonObject): boolean {
  return kept.has(object);
}

/** Forgets the bytes of `object` (it is about to change: a second occurrence of its field merges into it). */
export function forgetStructBytes(object: JsonObject): void {
  kept.delete(object);
  oneMoreCopy.delete(object);
}

/**
 * Writes a JSON object as a Struct's fields: the bytes it was decoded from when they are kept, and
 * then forgets them, or spares them this once (see the module comment).
 */
export function writeJsonObjectFields(out: BinaryOut, object: JsonObject): void {
  const bytes = kept.get(object);
  if (bytes === undefined) {
    writeStructFields(out, object);
    return;
  }
  if (!oneMoreCopy.delete(object)) kept.delete(object);
  out.latin1(bytes);
}
