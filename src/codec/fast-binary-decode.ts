import {
  create,
  fromBinary,
  protoInt64,
  ScalarType,
  type BinaryReadOptions,
  type DescField,
  type DescMessage,
  type JsonObject,
  type MessageShape,
} from "@bufbuild/protobuf";
import type { WireType } from "@bufbuild/protobuf/wire";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { echoesStructFields, forgetStructBytes, keepStructBytes, maxEchoedBytes } from "./struct-echo.js";
import { readStruct, setOwn } from "./struct-from-binary.js";
import { notDecoded, wireBit32, wireBit64, wireDelimited, wireVarint, WireReader } from "./wire-reader.js";

/**
 * Decodes a message as protobuf-es's `fromBinary` does (same fields, defaults, prototype,
 * `$unknown`, and the same JSON objects for Struct fields), faster: a decoder is compiled once per
 * message type from its descriptor, and `google.protobuf.Struct` fields are read straight into JSON
 * objects instead of Struct and Value messages that are then converted. Anything it does not decode
 * itself (groups, closed enums, malformed or unusual input, the recursion limit reached) goes to
 * `fromBinary`, so that errors are protobuf-es's own, with the same messages. A test compares both
 * decoders on every message type of the API.
 */
export function fromBinaryFast<Desc extends DescMessage>(
  schema: Desc,
  bytes: Uint8Array,
  options?: Partial<BinaryReadOptions>,
): MessageShape<Desc> {
  try {
    const message = fromBinaryCompiled(schema, bytes, options);
    if (message !== undefined) return message;
  } catch {
    // Left to protobuf-es, which decodes it or throws its own error (see WireReader).
  }
  return fromBinary(schema, bytes, options);
}

/**
 * The compiled decoder alone: undefined when `schema` has fields it does not cover, and it throws
 * (NotDecoded, or a RangeError when the stack runs out) where {@link fromBinaryFast} falls back.
 * Exported for tests, which must know that the compiled path did the decoding.
 */
export function fromBinaryCompiled<Desc extends DescMessage>(
  schema: Desc,
  bytes: Uint8Array,
  options?: Partial<BinaryReadOptions>,
): MessageShape<Desc> | undefined {
  const decoder = messageDecoder(schema);
  if (!decoder) return undefined;
  // Spread as protobuf-es does: an option given as undefined overrides its default.
  const settings = { readUnknownFields: true, recursionLimit: 100, ...options };
  const reader = new WireReader(bytes, settings.recursionLimit, settings.readUnknownFields);
  const message = decoder.create();
  decoder.read(message, reader, bytes.byteLength);
  return message as MessageShape<Desc>;
}

type Fields = Record<string, unknown>;

interface UnknownField {
  readonly no: number;
  readonly wireType: WireType;
  readonly data: Uint8Array;
}

/** Creates a message as protobuf-es's `create` does, and reads fields into it. */
interface MessageDecoder {
  create(): Fields;
  /** Reads the fields up to `end` into `message` (a message seen twice merges into the first). */
  read(message: Fields, reader: WireReader, end: number): void;
}

/** Reads one occurrence of a field, whose tag had `wireType`, into the message. */
type FieldReader = (message: Fields, reader: WireReader, wireType: number) => void;

const decoders = new WeakMap<DescMessage, MessageDecoder | null>();

/** The decoder of a message type, compiled on first use; null when protobuf-es must decode it. */
function messageDecoder(schema: DescMessage): MessageDecoder | null {
  let decoder = decoders.get(schema);
  if (decoder === undefined) {
    decoder = covers(schema, new Set()) ? compileMessage(schema) : null;
    decoders.set(schema, decoder);
  }
  return decoder;
}

/** Whether every field reachable from `schema` is of a kind compiled here. */
function covers(schema: DescMessage, seen: Set<DescMessage>): boolean {
  if (seen.has(schema)) return true;
  seen.add(schema);
  return schema.fields.every((field) => {
    // Groups (delimited encoding) and closed enums, whose unknown values become unknown fields.
    if ("delimitedEncoding" in field && field.delimitedEncoding) return false;
    if (field.enum && !field.enum.open) return false;
    return !field.message || usesJson(field) || covers(field.message, seen);
  });
}

/** Struct fields hold JSON objects, except inside google.protobuf.Value (as protobuf-es has it). */
function usesJson(field: DescField): boolean {
  return field.message?.typeName === "google.protobuf.Struct" && field.parent.typeName !== "google.protobuf.Value";
}

/** Field numbers below this are found in an array, others in a map. */
const denseFieldNumbers = 256;

function compileMessage(schema: DescMessage): MessageDecoder {
  const byNumber: (FieldReader | undefined)[] = [];
  const sparse = new Map<number, FieldReader>();
  const decoder: MessageDecoder = {
    create: () => create(schema),
    read(message, reader, end) {
      reader.enter();
      let unknown: UnknownField[] | undefined;
      while (reader.pos < end) {
        const tag = reader.tag();
        const number = tag >>> 3;
        const wireType = tag & 7;
        const field = number < denseFieldNumbers ? byNumber[number] : sparse.get(number);
        if (field !== undefined) {
          field(message, reader, wireType);
          continue;
        }
        const start = reader.skip(wireType);
        if (reader.readUnknownFields) {
          unknown ??= (message["$unknown"] as UnknownField[] | undefined) ?? [];
          unknown.push({ no: number, wireType, data: reader.input.subarray(start, reader.pos) });
        }
      }
      reader.endAt(end);
      if (unknown !== undefined) message["$unknown"] = unknown;
      reader.depth--;
    },
  };
  // Registered before its fields compile, so that a recursive type finds itself.
  decoders.set(schema, decoder);
  for (const field of schema.fields) {
    const read = compileField(field);
    if (field.number < denseFieldNumbers) byNumber[field.number] = read;
    else sparse.set(field.number, read);
  }
  return decoder;
}

function compileField(field: DescField): FieldReader {
  switch (field.fieldKind) {
    case "scalar":
      return singularField(field, scalarReader(field.scalar, field.longAsString, field.utf8Validation));
    case "enum":
      return singularField(field, scalarReader(ScalarType.INT32, false, false));
    case "message":
      return messageField(field);
    case "list":
      return listField(field);
    case "map":
      return mapField(field);
  }
}

/** Reads one value, without its tag, of the wire type it names. */
interface ValueReader {
  readonly wireType: number;
  read(reader: WireReader): unknown;
}

/** A singular scalar or enum field: the last occurrence wins. */
function singularField(field: DescField, value: ValueReader): FieldReader {
  const name = field.localName;
  const oneofName = field.oneof?.localName;
  const wireType = value.wireType;
  if (oneofName !== undefined) {
    return (message, reader, tagWireType) => {
      if (tagWireType !== wireType) throw notDecoded;
      message[oneofName] = { case: name, value: value.read(reader) };
    };
  }
  return (message, reader, tagWireType) => {
    if (tagWireType !== wireType) throw notDecoded;
    message[name] = value.read(reader);
  };
}

/** A singular message field: a second occurrence merges into the first, as protobuf-es merges. */
function messageField(field: Extract<DescField, { fieldKind: "message" }>): FieldReader {
  const name = field.localName;
  const oneofName = field.oneof?.localName;
  const read = mergingReader(field);
  if (oneofName !== undefined) {
    return (message, reader, wireType) => {
      if (wireType !== wireDelimited) throw notDecoded;
      const oneof = message[oneofName] as { case: string | undefined; value?: unknown };
      const value = read(reader, oneof.case === name ? oneof.value : undefined);
      message[oneofName] = { case: name, value };
    };
  }
  return (message, reader, wireType) => {
    if (wireType !== wireDelimited) throw notDecoded;
    message[name] = read(reader, message[name]);
  };
}

/**
 * Reads a length-delimited message value as a field holds it (JSON for a Struct, the unwrapped
 * scalar for a singular wrapper field, else the message), merging into `existing` when given.
 */
type MergingReader = (reader: WireReader, existing: unknown) => unknown;

function mergingReader(field: DescField & { message: DescMessage }): MergingReader {
  const schema = field.message;
  if (usesJson(field)) {
    const parent = field.parent;
    return (reader, existing) => {
      if (existing !== undefined) {
        // A second occurrence merges into the first: the bytes kept for the first no longer say it.
        forgetStructBytes(existing as JsonObject);
        return readStruct(reader, reader.delimited(), existing as JsonObject);
      }
      const end = reader.delimited();
      const start = reader.pos;
      reader.lossy = false;
      const object = readStruct(reader, end, {});
      if (!reader.lossy && end - start <= maxEchoedBytes && echoesStructFields(parent)) {
        keepStructBytes(object, reader.latin1(start, end));
      }
      return object;
    };
  }
  if (field.fieldKind === "message" && !field.oneof && isWrapperDesc(schema)) {
    // protobuf-es wraps the value held so far in a new wrapper message, reads into it and unwraps.
    const valueName = (schema.fields[0] as DescField).localName;
    return (reader, existing) => {
      const wrapper = messageDecoder(schema) as MessageDecoder;
      const message = wrapper.create();
      if (existing !== undefined) message[valueName] = existing;
      wrapper.read(message, reader, reader.delimited());
      return message[valueName];
    };
  }
  // Resolved lazily: the type may be the one being compiled (a recursive message).
  let decoder: MessageDecoder | undefined;
  return (reader, existing) => {
    decoder ??= messageDecoder(schema) as MessageDecoder;
    const message = (existing as Fields | undefined) ?? decoder.create();
    decoder.read(message, reader, reader.delimited());
    return message;
  };
}

/** A repeated field: one item per occurrence, or a packed run of scalars (either is accepted). */
function listField(field: Extract<DescField, { fieldKind: "list" }>): FieldReader {
  const name = field.localName;
  if (field.listKind === "message") {
    const read = mergingReader(field);
    return (message, reader, wireType) => {
      if (wireType !== wireDelimited) throw notDecoded;
      (message[name] as unknown[]).push(read(reader, undefined));
    };
  }
  const value =
    field.listKind === "enum"
      ? scalarReader(ScalarType.INT32, false, false)
      : scalarReader(field.scalar, field.longAsString, field.utf8Validation);
  const packable = value.wireType !== wireDelimited;
  return (message, reader, wireType) => {
    const items = message[name] as unknown[];
    if (wireType === value.wireType) {
      items.push(value.read(reader));
    } else if (packable && wireType === wireDelimited) {
      const end = reader.delimited();
      while (reader.pos < end) items.push(value.read(reader));
      reader.endAt(end);
    } else {
      throw notDecoded;
    }
  };
}

/** A map entry (key = 1, value = 2): missing parts take their zero values; a later key replaces. */
function mapField(field: Extract<DescField, { fieldKind: "map" }>): FieldReader {
  const name = field.localName;
  // Keys and values of maps are never strings for 64-bit integers (protobuf-es ignores jstype there).
  const key = scalarReader(field.mapKey, false, field.utf8Validation);
  const keyTag = (1 << 3) | key.wireType;
  const keyZero = field.mapKey === ScalarType.STRING ? "" : field.mapKey === ScalarType.BOOL ? "false" : "0";
  let readValue: MergingReader;
  let valueWireType: number = wireDelimited;
  let zeroValue: () => unknown;
  switch (field.mapKind) {
    case "message": {
      readValue = mergingReader(field);
      const schema = field.message;
      zeroValue = usesJson(field) ? () => ({}) : () => create(schema);
      break;
    }
    case "enum": {
      const zero = field.enum.values[0]?.number ?? 0;
      const value = scalarReader(ScalarType.INT32, false, false);
      readValue = (reader) => value.read(reader);
      valueWireType = value.wireType;
      zeroValue = () => zero;
      break;
    }
    case "scalar": {
      const value = scalarReader(field.scalar, false, field.utf8Validation);
      readValue = (reader) => value.read(reader);
      valueWireType = value.wireType;
      zeroValue = scalarZero(field.scalar);
      break;
    }
  }
  const valueTag = (2 << 3) | valueWireType;
  return (message, reader, wireType) => {
    if (wireType !== wireDelimited) throw notDecoded;
    const end = reader.delimited();
    let entryKey: string | number | bigint | boolean | undefined;
    let entryValue: unknown;
    while (reader.pos < end) {
      const tag = reader.tag();
      if (tag === keyTag) entryKey = key.read(reader) as string | number | bigint | boolean;
      else if (tag === valueTag) entryValue = readValue(reader, entryValue);
      else if (tag >>> 3 === 1 || tag >>> 3 === 2) throw notDecoded;
      else reader.skip(tag & 7);
    }
    reader.endAt(end);
    // Object keys are strings: a number, boolean or bigint key becomes its decimal text, as in protobuf-es.
    const record = message[name] as Fields;
    setOwn(
      record,
      entryKey === undefined ? keyZero : String(entryKey),
      entryValue === undefined ? zeroValue() : entryValue,
    );
  };
}

/** The zero value of a map's scalar values (a new empty Uint8Array per entry for bytes). */
function scalarZero(scalar: ScalarType): () => unknown {
  switch (scalar) {
    case ScalarType.STRING:
      return () => "";
    case ScalarType.BOOL:
      return () => false;
    case ScalarType.BYTES:
      return () => new Uint8Array(0);
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return () => zero64;
    default:
      return () => 0;
  }
}

/** protobuf-es's zero for 64-bit values (a bigint where BigInt is supported, else "0"). */
const zero64: unknown = protoInt64.zero;

/** Reads a scalar of `scalar` type as protobuf-es gives it. */
function scalarReader(scalar: ScalarType, longAsString: boolean, utf8Strict: boolean): ValueReader {
  const varint = wireVarint;
  switch (scalar) {
    case ScalarType.DOUBLE:
      return { wireType: wireBit64, read: (reader) => reader.double() };
    case ScalarType.FLOAT:
      return { wireType: wireBit32, read: (reader) => reader.float() };
    case ScalarType.INT32:
      return { wireType: varint, read: (reader) => reader.int32() };
    case ScalarType.UINT32:
      return { wireType: varint, read: (reader) => reader.uint32() };
    case ScalarType.SINT32:
      return { wireType: varint, read: (reader) => reader.sint32() };
    case ScalarType.FIXED32:
      return { wireType: wireBit32, read: (reader) => reader.fixed32() };
    case ScalarType.SFIXED32:
      return { wireType: wireBit32, read: (reader) => reader.sfixed32() };
    case ScalarType.BOOL:
      return { wireType: varint, read: (reader) => reader.bool() };
    case ScalarType.STRING:
      return { wireType: wireDelimited, read: (reader) => reader.string(utf8Strict) };
    case ScalarType.BYTES:
      return { wireType: wireDelimited, read: (reader) => reader.bytes() };
    case ScalarType.INT64:
      return int64Reader(varint, (reader) => reader.int64(), longAsString);
    case ScalarType.UINT64:
      return int64Reader(varint, (reader) => reader.uint64(), longAsString);
    case ScalarType.SINT64:
      return int64Reader(varint, (reader) => reader.sint64(), longAsString);
    case ScalarType.FIXED64:
      return int64Reader(wireBit64, (reader) => reader.fixed64(), longAsString);
    case ScalarType.SFIXED64:
      return int64Reader(wireBit64, (reader) => reader.sfixed64(), longAsString);
  }
}

/** A 64-bit reader; with jstype JS_STRING the value is its decimal text. */
function int64Reader(
  wireType: number,
  read: (reader: WireReader) => bigint | string,
  longAsString: boolean,
): ValueReader {
  return { wireType, read: longAsString ? (reader) => String(read(reader)) : read };
}
