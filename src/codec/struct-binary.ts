import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { BinaryOut, delimitedSize } from "./binary-out.js";

/**
 * A JSON object written directly as the fields of a `google.protobuf.Struct`, byte for byte what
 * protobuf-es writes. protobuf-es first converts such a field (a JsonObject in the generated
 * types) into reflected Struct and Value messages, which made a result's metadata cost four times
 * the rest of an ExecuteTool response.
 *
 * google.protobuf.Struct: map<string, Value> fields = 1, each entry a message (key = 1, value = 2).
 * google.protobuf.Value: null_value = 1, number_value = 2, string_value = 3, bool_value = 4,
 * struct_value = 5, list_value = 6; google.protobuf.ListValue: repeated Value values = 1.
 */

const tagEntry = (1 << 3) | WireType.LengthDelimited;
const tagKey = (1 << 3) | WireType.LengthDelimited;
const tagValue = (2 << 3) | WireType.LengthDelimited;
const tagNull = (1 << 3) | WireType.Varint;
const tagNumber = (2 << 3) | WireType.Bit64;
const tagString = (3 << 3) | WireType.LengthDelimited;
const tagBool = (4 << 3) | WireType.Varint;
const tagStruct = (5 << 3) | WireType.LengthDelimited;
const tagList = (6 << 3) | WireType.LengthDelimited;
const tagListItem = (1 << 3) | WireType.LengthDelimited;

/** Writes a Struct's fields: one entry message (key = 1, value = 2) per key. */
export function writeStructFields(out: BinaryOut, object: JsonObject): void {
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (value === undefined) continue;
    out.byte(tagEntry);
    const entry = out.beginDelimited();
    out.byte(tagKey);
    out.string(key);
    out.byte(tagValue);
    const content = out.beginDelimited();
    writeValueFields(out, value);
    out.endDelimited(content);
    out.endDelimited(entry);
  }
}

function writeValueFields(out: BinaryOut, value: JsonValue): void {
  switch (typeof value) {
    case "number":
      out.byte(tagNumber);
      out.double(value);
      return;
    case "string":
      out.byte(tagString);
      out.string(value);
      return;
    case "boolean":
      out.byte(tagBool);
      out.byte(value ? 1 : 0);
      return;
    case "object": {
      if (value === null) {
        out.byte(tagNull);
        out.byte(0);
        return;
      }
      if (Array.isArray(value)) {
        out.byte(tagList);
        const list = out.beginDelimited();
        for (const item of value) {
          out.byte(tagListItem);
          const itemContent = out.beginDelimited();
          writeValueFields(out, item);
          out.endDelimited(itemContent);
        }
        out.endDelimited(list);
        return;
      }
      out.byte(tagStruct);
      const struct = out.beginDelimited();
      const encoded = Object.isFrozen(value) ? encodingOfFrozen(value) : undefined;
      if (encoded) out.raw(encoded);
      else writeStructFields(out, value);
      out.endDelimited(struct);
      return;
    }
    default:
      throw new TypeError(`a ${typeof value} is not a JSON value`);
  }
}

/**
 * The Struct fields of frozen objects whose values are all primitives, encoded once: such an
 * object cannot change, so its bytes cannot either. The capability flags in every result's
 * metadata are such objects (see execute-tool.ts), six entries written anew for every call before.
 * `null` marks a frozen object that holds an object (which could change): written each time.
 */
const frozenEncodings = new WeakMap<object, Uint8Array | null>();

function encodingOfFrozen(object: JsonObject): Uint8Array | undefined {
  let encoded = frozenEncodings.get(object);
  if (encoded === undefined) {
    const primitives = Object.values(object).every((value) => value === null || typeof value !== "object");
    encoded = primitives ? encodeStruct(object) : null;
    frozenEncodings.set(object, encoded);
  }
  return encoded ?? undefined;
}

/** A JSON object as the bytes of a `google.protobuf.Struct` message. */
export function encodeStruct(object: JsonObject): Uint8Array {
  const out = new BinaryOut();
  writeStructFields(out, object);
  return out.finish();
}

/**
 * The bytes a JSON object takes as the fields of a `google.protobuf.Struct` (what
 * {@link writeStructFields} writes), without writing them. A Struct can be several times its JSON
 * text: a number is a Value of nine bytes, each list item and each entry adds a tag and a length
 * (`[0,0,…]` takes 5.5 bytes per item against 2 in JSON).
 */
export function structFieldsSize(object: JsonObject): number {
  let size = 0;
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (value === undefined) continue;
    const entry = delimitedSize(1, Buffer.byteLength(key)) + delimitedSize(1, valueFieldsSize(value));
    size += delimitedSize(1, entry);
  }
  return size;
}

/** The bytes of a `google.protobuf.Value`'s fields holding `value` (see writeValueFields). */
export function valueFieldsSize(value: JsonValue): number {
  switch (typeof value) {
    case "number":
      return 9;
    case "string":
      return delimitedSize(1, Buffer.byteLength(value));
    case "boolean":
      return 2;
    case "object": {
      if (value === null) return 2;
      if (Array.isArray(value)) {
        let list = 0;
        for (const item of value) list += delimitedSize(1, valueFieldsSize(item));
        return delimitedSize(1, list);
      }
      return delimitedSize(1, structFieldsSize(value));
    }
    default:
      throw new TypeError(`a ${typeof value} is not a JSON value`);
  }
}
