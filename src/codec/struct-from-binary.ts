import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { maxRecurringKeyBytes, maxRecurringValueBytes, recurringString } from "./recurring-strings.js";
import { notDecoded, wireBit64, wireDelimited, wireVarint, type WireReader } from "./wire-reader.js";

/**
 * Reads a `google.protobuf.Struct` straight into the JSON object protobuf-es gives for a Struct
 * field. protobuf-es first builds Struct, Value and ListValue messages and then converts them,
 * which cost most of the decoding of a request carrying a JSON Schema. The rules mirrored:
 * - each Struct, Value and ListValue counts one level against the recursion limit;
 * - an entry without a key has the key "", one without a value (or with a Value that has no kind)
 *   holds null, and a later entry with the same key replaces the earlier one;
 * - within one Value the last kind wins, except that a second struct_value merges into a first
 *   (its keys replace or join) and a second list_value appends to a first;
 * - unknown fields of these three messages are skipped and dropped (the JSON form has no room).
 * Wire types that do not fit a known field, and groups, are left to protobuf-es (see WireReader).
 *
 * The struct's fields are read into `target`: a Struct field seen twice merges into its first value.
 */
export function readStruct(reader: WireReader, end: number, target: JsonObject): JsonObject {
  reader.enter();
  // The last key read that is an array index (see indexOfKey), or afterName once another key was read.
  let lastIndex = -1;
  while (reader.pos < end) {
    const tag = tagOf(reader);
    if (tag === tagEntry) {
      const key = readEntry(reader, delimitedOf(reader), target);
      // JavaScript lists an object's array-index keys first, in ascending order, whatever order
      // they came in: bytes that give them otherwise are not what the object encodes to.
      const index = indexOfKey(key);
      if (index < 0) lastIndex = afterName;
      else if (index <= lastIndex) reader.lossy = true;
      else lastIndex = index;
    } else if (tag >>> 3 === 1) throw notDecoded;
    else skipUnknown(reader, tag);
  }
  reader.endAt(end);
  reader.depth--;
  return target;
}

const tagEntry = (1 << 3) | wireDelimited;
const tagKey = (1 << 3) | wireDelimited;
const tagValue = (2 << 3) | wireDelimited;
const tagNull = (1 << 3) | wireVarint;
const tagNumber = (2 << 3) | wireBit64;
const tagString = (3 << 3) | wireDelimited;
const tagBool = (4 << 3) | wireVarint;
const tagStruct = (5 << 3) | wireDelimited;
const tagList = (6 << 3) | wireDelimited;
const tagListItem = (1 << 3) | wireDelimited;

/**
 * Keys of JSON Schema whose value is an object keyed by names its author chose (property names,
 * definitions). V8 gives an object a new hidden class for every key sequence it has not seen, about
 * 2 µs a key, and every tool's schema names its own properties: such an object is made as a
 * dictionary from the start (see {@link authorKeyedObject}). Other objects (schemas themselves,
 * whose keys are the few keywords of JSON Schema) stay as V8 makes them.
 */
const authorKeyed = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

/** Marks, in readStruct, that a key other than an array index was read. */
const afterName = Number.POSITIVE_INFINITY;

/**
 * The array index a key names ("0", "7", "4294967294": canonical decimal, below 2^32 − 1), which
 * JavaScript lists before other keys and in ascending order; -1 for any other key.
 */
function indexOfKey(key: string): number {
  const first = key.charCodeAt(0);
  // Most keys start with a letter: one comparison.
  if (!(first >= 48 && first <= 57) || key.length > 10 || (first === 48 && key.length > 1)) return -1;
  for (let i = 1; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code < 48 || code > 57) return -1;
  }
  const index = Number(key);
  return index < 4294967295 ? index : -1;
}

/**
 * One map entry of Struct.fields (key = 1, value = 2); a value field seen twice merges, as a
 * message does. Returns the key the entry set.
 */
function readEntry(reader: WireReader, end: number, target: JsonObject): string {
  let key: string | undefined;
  let value: JsonValue | undefined;
  while (reader.pos < end) {
    const tag = tagOf(reader);
    if (tag === tagKey) {
      // A key after another, or after the value: not the order protobuf-es writes.
      if (key !== undefined || value !== undefined) reader.lossy = true;
      key = recurringString(reader, maxRecurringKeyBytes) ?? stringOf(reader);
    } else if (tag === tagValue) {
      if (value !== undefined) reader.lossy = true;
      value = readValue(reader, delimitedOf(reader), value, authorKeyed.has(key ?? ""));
    } else if (tag >>> 3 === 1 || tag >>> 3 === 2) throw notDecoded;
    else skipUnknown(reader, tag);
  }
  reader.endAt(end);
  if (key === undefined || value === undefined) reader.lossy = true;
  else if (Object.prototype.hasOwnProperty.call(target, key)) reader.lossy = true;
  setOwn(target, key ?? "", value ?? null);
  return key ?? "";
}

/**
 * A google.protobuf.Value as JSON; `current` is what an earlier occurrence in the same place held.
 * A struct value is made as a dictionary when `authorKeys` (see authorKeyed).
 */
export function readValue(
  reader: WireReader,
  end: number,
  current: JsonValue | undefined,
  authorKeys = false,
): JsonValue {
  reader.enter();
  while (reader.pos < end) {
    const tag = tagOf(reader);
    // A second kind (or the same one again) in one Value: protobuf-es writes one.
    if (current !== undefined && tag >>> 3 <= 6) reader.lossy = true;
    switch (tag) {
      case tagNull:
        // NullValue is an open enum: any number is read (and validated as a varint) and means null.
        if (reader.buf[reader.pos] !== 0) reader.lossy = true;
        reader.int32();
        current = null;
        break;
      case tagNumber:
        current = reader.double();
        break;
      case tagString:
        current = recurringString(reader, maxRecurringValueBytes) ?? stringOf(reader);
        break;
      case tagBool: {
        const byte = reader.buf[reader.pos];
        if (byte !== 0 && byte !== 1) reader.lossy = true;
        current = reader.bool();
        break;
      }
      case tagStruct:
        current = readStruct(
          reader,
          delimitedOf(reader),
          isJsonObject(current) ? current : authorKeys ? authorKeyedObject() : {},
        );
        break;
      case tagList:
        current = readList(reader, delimitedOf(reader), Array.isArray(current) ? current : []);
        break;
      default:
        if (tag >>> 3 <= 6) throw notDecoded;
        skipUnknown(reader, tag);
    }
  }
  reader.endAt(end);
  reader.depth--;
  if (current === undefined) {
    reader.lossy = true;
    return null;
  }
  return current;
}

/** A google.protobuf.ListValue's items, appended to `target`. */
function readList(reader: WireReader, end: number, target: JsonValue[]): JsonValue[] {
  reader.enter();
  while (reader.pos < end) {
    const tag = tagOf(reader);
    if (tag === tagListItem) target.push(readValue(reader, delimitedOf(reader), undefined));
    else if (tag >>> 3 === 1) throw notDecoded;
    else skipUnknown(reader, tag);
  }
  reader.endAt(end);
  reader.depth--;
  return target;
}

// What these three messages are read with, noting on the reader (`WireReader.lossy`) whatever
// protobuf-es would not write back as it was read, so that such bytes are never echoed (see
// struct-echo.ts):
// - a tag or a length in more bytes than it needs, or in four bytes or more (only Structs under
//   64 KiB are echoed, whose lengths take three at most; a varint's bits past the 32nd are dropped
//   in reading, which other decoders refuse);
// - an unknown field (its varint could be one that other decoders refuse as well);
// - an entry without its key or value, with either twice, or with the value first;
// - a key that appears twice in one Struct: protobuf's maps keep the last, as the JSON read does,
//   but the checks made on the JSON never see the first, which could hide anything (nesting deeper
//   than other decoders read, say);
// - a Value with more than one kind, a null other than 0, a bool other than 0 or 1.

function tagOf(reader: WireReader): number {
  // The tags of these messages' fields take one byte: a first byte of 0x80 or more is a longer form.
  if ((reader.buf[reader.pos] as number) >= 0x80) reader.lossy = true;
  return reader.tag();
}

function delimitedOf(reader: WireReader): number {
  noteLongVarint(reader);
  return reader.delimited();
}

function stringOf(reader: WireReader): string {
  noteLongVarint(reader);
  return reader.string(true);
}

function skipUnknown(reader: WireReader, tag: number): void {
  reader.lossy = true;
  reader.skip(tag & 7);
}

/** Notes a varint at the reader's position that takes more bytes than its value needs, or four or more. */
function noteLongVarint(reader: WireReader): void {
  const buf = reader.buf;
  const at = reader.pos;
  if ((buf[at] as number) < 0x80) return;
  let last = at + 1;
  while (last < buf.length && (buf[last] as number) >= 0x80) last++;
  if (last - at >= 3 || buf[last] === 0) reader.lossy = true;
}

/**
 * An empty plain object in V8's dictionary mode: adding keys to it makes no hidden classes. Deleting
 * a property that is not the last one added is what turns an object into a dictionary.
 */
function authorKeyedObject(): JsonObject {
  const object: JsonObject = { first: null, second: null };
  delete object["first"];
  delete object["second"];
  return object;
}

function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Sets a key as an own property, "__proto__" included (as protobuf-es's setOwn does). */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__")
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}
