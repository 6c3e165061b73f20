import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
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
  while (reader.pos < end) {
    const tag = reader.tag();
    if (tag === tagEntry) readEntry(reader, reader.delimited(), target);
    else if (tag >>> 3 === 1) throw notDecoded;
    else reader.skip(tag & 7);
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

/** One map entry of Struct.fields (key = 1, value = 2); a value field seen twice merges, as a message does. */
function readEntry(reader: WireReader, end: number, target: JsonObject): void {
  let key = "";
  let value: JsonValue | undefined;
  while (reader.pos < end) {
    const tag = reader.tag();
    if (tag === tagKey) key = reader.string(true);
    else if (tag === tagValue) value = readValue(reader, reader.delimited(), value, authorKeyed.has(key));
    else if (tag >>> 3 === 1 || tag >>> 3 === 2) throw notDecoded;
    else reader.skip(tag & 7);
  }
  reader.endAt(end);
  if (value === undefined) reader.lossy = true;
  setOwn(target, key, value ?? null);
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
    const tag = reader.tag();
    switch (tag) {
      case tagNull:
        // NullValue is an open enum: any number is read (and validated as a varint) and means null.
        reader.int32();
        current = null;
        break;
      case tagNumber:
        current = reader.double();
        break;
      case tagString:
        current = reader.string(true);
        break;
      case tagBool:
        current = reader.bool();
        break;
      case tagStruct:
        current = readStruct(
          reader,
          reader.delimited(),
          isJsonObject(current) ? current : authorKeys ? authorKeyedObject() : {},
        );
        break;
      case tagList:
        current = readList(reader, reader.delimited(), Array.isArray(current) ? current : []);
        break;
      default:
        if (tag >>> 3 <= 6) throw notDecoded;
        reader.skip(tag & 7);
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
    const tag = reader.tag();
    if (tag === tagListItem) target.push(readValue(reader, reader.delimited(), undefined));
    else if (tag >>> 3 === 1) throw notDecoded;
    else reader.skip(tag & 7);
  }
  reader.endAt(end);
  reader.depth--;
  return target;
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
