import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { BinaryOut, utf8Length, varintSize } from "./binary-out.js";

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

function delimited(size: number): number {
  return 1 + varintSize(size) + size;
}

/** Size of a Struct's fields; pushes each nested size in the order {@link writeStructFields} reads them. */
export function structSize(object: JsonObject, sizes: number[]): number {
  let total = 0;
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (value === undefined) continue;
    const at = sizes.push(0, 0) - 2;
    const valueSize = valueFieldsSize(value, sizes);
    const entrySize = delimited(utf8Length(key)) + delimited(valueSize);
    sizes[at] = entrySize;
    sizes[at + 1] = valueSize;
    total += delimited(entrySize);
  }
  return total;
}

function valueFieldsSize(value: JsonValue, sizes: number[]): number {
  switch (typeof value) {
    case "number":
      return 9;
    case "string":
      return delimited(utf8Length(value));
    case "boolean":
      return 2;
    case "object": {
      if (value === null) return 2;
      const at = sizes.push(0) - 1;
      let inner = 0;
      if (Array.isArray(value)) {
        for (const item of value) {
          const itemAt = sizes.push(0) - 1;
          const itemSize = valueFieldsSize(item, sizes);
          sizes[itemAt] = itemSize;
          inner += delimited(itemSize);
        }
      } else {
        inner = structSize(value, sizes);
      }
      sizes[at] = inner;
      return delimited(inner);
    }
    default:
      throw new TypeError(`a ${typeof value} is not a JSON value`);
  }
}

/** Writes a Struct's fields, reading the sizes {@link structSize} recorded. */
export function writeStructFields(out: BinaryOut, object: JsonObject): void {
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (value === undefined) continue;
    const entrySize = out.nextSize();
    const valueSize = out.nextSize();
    out.byte(tagEntry);
    out.varint(entrySize);
    out.byte(tagKey);
    out.string(key, utf8Length(key));
    out.byte(tagValue);
    out.varint(valueSize);
    writeValueFields(out, value);
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
      out.string(value, utf8Length(value));
      return;
    case "boolean":
      out.byte(tagBool);
      out.byte(value ? 1 : 0);
      return;
    case "object":
      if (value === null) {
        out.byte(tagNull);
        out.byte(0);
        return;
      }
      if (Array.isArray(value)) {
        out.byte(tagList);
        out.varint(out.nextSize());
        for (const item of value) {
          out.byte(tagListItem);
          out.varint(out.nextSize());
          writeValueFields(out, item);
        }
        return;
      }
      out.byte(tagStruct);
      out.varint(out.nextSize());
      writeStructFields(out, value);
      return;
    default:
      throw new TypeError(`a ${typeof value} is not a JSON value`);
  }
}

/** A JSON object as the bytes of a `google.protobuf.Struct` message. */
export function encodeStruct(object: JsonObject): Uint8Array {
  const sizes: number[] = [];
  const size = structSize(object, sizes);
  const out = new BinaryOut(Buffer.allocUnsafe(size), sizes);
  writeStructFields(out, object);
  return out.buffer;
}
