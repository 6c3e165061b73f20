import { toBinary, type DescField, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";

/**
 * protobuf-es encodes a `google.protobuf.Struct` field (a JSON object in the generated types) by
 * first converting it into reflected Struct and Value messages, which made a result's metadata
 * cost four times the rest of an ExecuteTool response. Here such fields are written directly (two passes
 * into one buffer) and handed to `toBinary` as an already-encoded field of the same
 * number (an "unknown" field, which `toBinary` writes verbatim): the bytes decode to the same
 * message, and every other field is still encoded by protobuf-es.
 */

/** A way from a message to a Struct field inside it: singular message fields and oneof cases. */
interface StructPath {
  /** The fields leading to the message that holds the Struct field, outermost first. */
  readonly steps: readonly DescField[];
  readonly field: DescField;
}

const maxPathDepth = 6;
const pathsBySchema = new WeakMap<DescMessage, readonly StructPath[]>();

/** `message` encoded as protobuf-es's `toBinary` would, with its Struct fields written directly. */
export function toBinaryFast(schema: DescMessage, message: object): Uint8Array {
  let paths = pathsBySchema.get(schema);
  if (!paths) {
    paths = structPaths(schema, [], new Set());
    pathsBySchema.set(schema, paths);
  }
  let encoded = message as Record<string, unknown>;
  for (const path of paths) encoded = withStructEncoded(encoded, path, 0);
  return toBinary(schema, encoded as never);
}

/** The paths, from `schema`, to every Struct field reachable through singular message fields. */
function structPaths(schema: DescMessage, steps: DescField[], seen: Set<DescMessage>): StructPath[] {
  if (steps.length >= maxPathDepth || seen.has(schema)) return [];
  const paths: StructPath[] = [];
  const inside = new Set(seen).add(schema);
  for (const field of schema.fields) {
    if (field.fieldKind !== "message") continue;
    if (field.message.typeName === "google.protobuf.Struct") paths.push({ steps, field });
    else if (!field.message.typeName.startsWith("google.protobuf."))
      paths.push(...structPaths(field.message, [...steps, field], inside));
  }
  return paths;
}

/** A copy of `message` along `path` (only the messages on it are copied) with the Struct pre-encoded. */
function withStructEncoded(message: Record<string, unknown>, path: StructPath, depth: number): Record<string, unknown> {
  if (depth === path.steps.length) {
    const value = read(message, path.field);
    if (value === undefined) return message;
    const copy = write({ ...message }, path.field, undefined);
    const unknown = (message["$unknown"] as unknown[] | undefined) ?? [];
    copy["$unknown"] = [
      ...unknown,
      { no: path.field.number, wireType: WireType.LengthDelimited, data: encodeStructField(value as JsonObject) },
    ];
    return copy;
  }
  const step = path.steps[depth] as DescField;
  const inner = read(message, step) as Record<string, unknown> | undefined;
  if (inner === undefined) return message;
  const encoded = withStructEncoded(inner, path, depth + 1);
  return encoded === inner ? message : write({ ...message }, step, encoded);
}

/** The value of a field, undefined when unset or when its oneof holds another case. */
function read(message: Record<string, unknown>, field: DescField): unknown {
  if (!field.oneof) return message[field.localName] ?? undefined;
  const oneof = message[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
  return oneof?.case === field.localName ? oneof.value : undefined;
}

/** Sets a field on a copy (made by the caller); `undefined` clears it. */
function write(copy: Record<string, unknown>, field: DescField, value: unknown): Record<string, unknown> {
  if (!field.oneof) copy[field.localName] = value;
  else copy[field.oneof.localName] = value === undefined ? { case: undefined } : { case: field.localName, value };
  return copy;
}

/** A JSON object as the bytes of a `google.protobuf.Struct` message. */
export function encodeStruct(object: JsonObject): Uint8Array {
  const sizes: number[] = [];
  const size = structSize(object, sizes);
  const out = new StructWriter(Buffer.allocUnsafe(size), sizes);
  out.structFields(object);
  return out.buffer;
}

/** The same, length-prefixed: the value of a Struct field as an unknown field holds it. */
function encodeStructField(object: JsonObject): Uint8Array {
  const sizes: number[] = [];
  const size = structSize(object, sizes);
  const out = new StructWriter(Buffer.allocUnsafe(varintSize(size) + size), sizes);
  out.varint(size);
  out.structFields(object);
  return out.buffer;
}

// The encoding is computed in two passes, sizes first (kept in visiting order) and then bytes
// into one buffer: BinaryWriter's fork and join cost more than the rest of the encoding.
// google.protobuf.Struct: map<string, Value> fields = 1, each entry a message (key = 1, value = 2).
// google.protobuf.Value: null_value = 1, number_value = 2, string_value = 3, bool_value = 4,
// struct_value = 5, list_value = 6; google.protobuf.ListValue: repeated Value values = 1.
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

/** Strings up to this length are measured and copied in JavaScript: a call into Buffer costs more. */
const shortString = 64;

/** UTF-8 length of `text`. */
function utf8Length(text: string): number {
  if (text.length > shortString) return Buffer.byteLength(text);
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) return Buffer.byteLength(text);
    length++;
  }
  return length;
}

function varintSize(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;
}

function delimitedSize(size: number): number {
  return 1 + varintSize(size) + size;
}

/** Size of a Struct's fields; pushes each nested size in the order the writer needs them. */
function structSize(object: JsonObject, sizes: number[]): number {
  let total = 0;
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (value === undefined) continue;
    const at = sizes.push(0, 0) - 2;
    const valueSize = valueFieldsSize(value, sizes);
    const entrySize = delimitedSize(utf8Length(key)) + delimitedSize(valueSize);
    sizes[at] = entrySize;
    sizes[at + 1] = valueSize;
    total += delimitedSize(entrySize);
  }
  return total;
}

function valueFieldsSize(value: JsonValue, sizes: number[]): number {
  switch (typeof value) {
    case "number":
      return 9;
    case "string":
      return delimitedSize(utf8Length(value));
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
          inner += delimitedSize(itemSize);
        }
      } else {
        inner = structSize(value, sizes);
      }
      sizes[at] = inner;
      return delimitedSize(inner);
    }
    default:
      throw new TypeError(`a ${typeof value} is not a JSON value`);
  }
}

class StructWriter {
  #pos = 0;
  #next = 0;

  constructor(
    readonly buffer: Buffer,
    private readonly sizes: readonly number[],
  ) {}

  varint(value: number): void {
    while (value > 0x7f) {
      this.buffer[this.#pos++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    this.buffer[this.#pos++] = value;
  }

  #string(text: string): void {
    const length = utf8Length(text);
    this.varint(length);
    if (length === text.length && length <= shortString) {
      // ASCII: one byte per character.
      for (let i = 0; i < length; i++) this.buffer[this.#pos++] = text.charCodeAt(i);
    } else {
      this.#pos += this.buffer.write(text, this.#pos, length, "utf8");
    }
  }

  structFields(object: JsonObject): void {
    for (const key of Object.keys(object)) {
      const value = object[key];
      if (value === undefined) continue;
      const entrySize = this.sizes[this.#next++] as number;
      const valueSize = this.sizes[this.#next++] as number;
      this.buffer[this.#pos++] = tagEntry;
      this.varint(entrySize);
      this.buffer[this.#pos++] = tagKey;
      this.#string(key);
      this.buffer[this.#pos++] = tagValue;
      this.varint(valueSize);
      this.valueFields(value);
    }
  }

  valueFields(value: JsonValue): void {
    switch (typeof value) {
      case "number":
        this.buffer[this.#pos++] = tagNumber;
        this.#pos = this.buffer.writeDoubleLE(value, this.#pos);
        return;
      case "string":
        this.buffer[this.#pos++] = tagString;
        this.#string(value);
        return;
      case "boolean":
        this.buffer[this.#pos++] = tagBool;
        this.buffer[this.#pos++] = value ? 1 : 0;
        return;
      case "object":
        if (value === null) {
          this.buffer[this.#pos++] = tagNull;
          this.buffer[this.#pos++] = 0;
          return;
        }
        if (Array.isArray(value)) {
          this.buffer[this.#pos++] = tagList;
          this.varint(this.sizes[this.#next++] as number);
          for (const item of value) {
            this.buffer[this.#pos++] = tagListItem;
            this.varint(this.sizes[this.#next++] as number);
            this.valueFields(item);
          }
          return;
        }
        this.buffer[this.#pos++] = tagStruct;
        this.varint(this.sizes[this.#next++] as number);
        this.structFields(value);
        return;
      default:
        throw new TypeError(`a ${typeof value} is not a JSON value`);
    }
  }
}
