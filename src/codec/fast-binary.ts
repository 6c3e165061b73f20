import { create, ScalarType, toBinary, type DescField, type DescMessage, type JsonObject } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { BinaryOut, tagBytes, wireInt64, type Int64Value } from "./binary-out.js";
import { planMessageWriter, type FieldKinds } from "./message-writer-source.js";
import { writeJsonObjectFields } from "./struct-echo.js";

/**
 * Messages encoded byte for byte as protobuf-es's `toBinary` encodes them (the ToolSpec schemas
 * of struct-echo.ts copied as they were read, which are those bytes), several times faster:
 * an encoder is made once per message type from its descriptor (a function built from source, see
 * message-writer-source.ts), writes the message in one pass (see BinaryOut), and writes
 * `google.protobuf.Struct` fields straight from their JSON objects. It takes a message or the
 * plain object `create` would take.
 * Types it does not cover (map keys other than strings, sint and fixed 64-bit scalars, groups) are
 * left to protobuf-es. A test compares both encoders on every message type of the API.
 */
export function toBinaryFast(schema: DescMessage, message: object): Uint8Array {
  const codec = messageCodec(schema);
  if (!codec) return toBinary(schema, create(schema, message as never));
  const out = new BinaryOut();
  codec.write(message as Fields, out);
  return out.finish();
}

/** Bytes before each message of a gRPC frame: a flag (0, not compressed) and the length, big-endian. */
export const grpcFramePrefixBytes = 5;

/**
 * Messages of `schema` as consecutive gRPC frames in one buffer: before each message's bytes (as
 * {@link toBinaryFast} writes them), a byte 0 (not compressed) and its length in four bytes,
 * big-endian. A stream's batch then goes out in one write with one allocation, instead of a buffer
 * per message and a second copy of each into the frames. Stops after the message that brings the
 * messages' bytes to `untilBytes`, so that a long batch is encoded a part at a time: the frames
 * then hold the first messages only.
 */
export function toFramedBinaryFast(
  schema: DescMessage,
  messages: readonly object[],
  untilBytes = Number.POSITIVE_INFINITY,
): Buffer {
  const codec = messageCodec(schema);
  const out = new BinaryOut();
  let messageBytes = 0;
  for (const message of messages) {
    out.ensure(grpcFramePrefixBytes);
    const at = out.pos;
    out.pos += grpcFramePrefixBytes;
    if (codec) codec.write(message as Fields, out);
    else out.raw(toBinary(schema, create(schema, message as never)));
    // Read after writing: the scratch buffer may have grown meanwhile.
    const length = out.pos - at - grpcFramePrefixBytes;
    out.buffer[at] = 0;
    out.buffer.writeUInt32BE(length, at + 1);
    messageBytes += length;
    if (messageBytes >= untilBytes) break;
  }
  return out.finish();
}

/**
 * A message of `schema` that protobuf-es's `toBinary` writes as exactly `bytes` (the encoding of
 * a message of that type): every field unset, the bytes carried as one unknown field. Lets a
 * transport that encodes with protobuf-es (Connect) send what {@link toBinaryFast} encoded. Only
 * for binary codecs: the JSON codec drops unknown fields.
 */
export function preEncodedMessage(schema: DescMessage, bytes: Uint8Array): object {
  const message = create(schema) as { $unknown?: { no: number; wireType: WireType; data: Uint8Array }[] };
  if (bytes.byteLength === 0) return message;
  // The first field's tag is read off, so that toBinary writes it back in front of the rest.
  let tag = 0;
  let shift = 0;
  let at = 0;
  for (;;) {
    const byte = bytes[at++] as number;
    tag += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) break;
  }
  message.$unknown = [{ no: Math.floor(tag / 8), wireType: tag % 8, data: bytes.subarray(at) }];
  return message;
}

type Fields = Record<string, unknown>;

/** Writes a message's content (its fields, without a tag or length of its own). */
interface MessageCodec {
  write(message: Fields, out: BinaryOut): void;
}

/** Writes one field of a message, tags included; nothing when it is not set. */
interface FieldCodec {
  write(message: Fields, out: BinaryOut): void;
}

/** Writes one value (of a field, a list item or a map entry), without its tag. */
interface ValueCodec {
  readonly wireType: WireType;
  write(value: unknown, out: BinaryOut): void;
}

/** google.protobuf.FeatureSet.FieldPresence.IMPLICIT, as the descriptors report it. */
const implicitPresence: number = 2;

const codecs = new WeakMap<DescMessage, MessageCodec | null>();

/** The codec of a message type, compiled on first use; null when protobuf-es must encode it. */
function messageCodec(schema: DescMessage): MessageCodec | null {
  let codec = codecs.get(schema);
  if (codec === undefined) {
    codec = codeGeneration && covers(schema, new Set()) ? compileMessage(schema) : null;
    codecs.set(schema, codec);
  }
  return codec;
}

/** Whether every field reachable from `schema` is of a kind compiled here. */
function covers(schema: DescMessage, seen: Set<DescMessage>): boolean {
  if (seen.has(schema)) return true;
  seen.add(schema);
  return schema.fields.every((field) => {
    if (field.fieldKind === "map" && field.mapKey !== ScalarType.STRING) return false;
    const scalar =
      field.fieldKind === "scalar" || field.fieldKind === "list" || field.fieldKind === "map"
        ? field.scalar
        : undefined;
    if (scalar !== undefined && !coveredScalars.has(scalar)) return false;
    if (field.message && !(usesJson(field) || covers(field.message, seen))) return false;
    return true;
  });
}

const coveredScalars = new Set<ScalarType>([
  ScalarType.DOUBLE,
  ScalarType.FLOAT,
  ScalarType.INT32,
  ScalarType.UINT32,
  ScalarType.BOOL,
  ScalarType.STRING,
  ScalarType.BYTES,
  ScalarType.FIXED32,
  ScalarType.SFIXED32,
  ScalarType.INT64,
  ScalarType.UINT64,
]);

/** Struct fields hold JSON objects, except inside google.protobuf.Value (as protobuf-es has it). */
function usesJson(field: DescField): boolean {
  return field.message?.typeName === "google.protobuf.Struct" && field.parent.typeName !== "google.protobuf.Value";
}

/**
 * Messages whose owner guarantees they never change (see {@link markUnchanging}), and the
 * encodings kept for those encoded once: both weak, so an encoding lives as long as its message.
 */
const unchanging = new WeakSet<object>();
const keptEncodings = new WeakMap<object, Uint8Array>();
/** Per message type: whether a message of it was ever marked, so other types skip the lookups. */
const typesWithUnchanging = new WeakMap<DescMessage, { marked: boolean }>();

function unchangingStateOf(schema: DescMessage): { marked: boolean } {
  let state = typesWithUnchanging.get(schema);
  if (!state) {
    state = { marked: false };
    typesWithUnchanging.set(schema, state);
  }
  return state;
}

/**
 * Declares that `message` (of type `schema`) will never change: its encoding is then kept after
 * it is first written and copied as bytes every later time, wherever it is nested. For messages
 * that are encoded again and again unchanged: a registry's tool specs, which every run's
 * DISCOVERED event, GetTool and ListTools carry (a spec with its JSON schemas costs microseconds
 * to encode, its bytes a copy).
 */
export function markUnchanging(schema: DescMessage, message: object): void {
  unchangingStateOf(schema).marked = true;
  unchanging.add(message);
}

/**
 * Whether functions can be made from source here: Node run with
 * `--disallow-code-generation-from-strings` forbids it, and every type is then left to protobuf-es.
 */
const codeGeneration = ((): boolean => {
  try {
    // eslint-disable-next-line @typescript-eslint/no-implied-eval -- a constant source, to learn whether it is allowed
    return (new Function("return true") as () => boolean)();
  } catch {
    return false;
  }
})();

/** How fast-binary.ts writes each kind of field, for the generated writers. */
const fieldKinds: FieldKinds = {
  usesJson,
  // protobuf-es unwraps singular wrapper fields outside oneofs to their scalar value.
  unwrapped: (field) => field.fieldKind === "message" && !field.oneof && isWrapperDesc(field.message),
};

/** What a generated writer is given (see message-writer-source.ts for the names). */
type WriterFactory = (
  F: readonly FieldCodec[],
  K: readonly MessageCodec[],
  T: readonly (readonly number[])[],
  W: typeof wireInt64,
  S: typeof writeJsonObjectFields,
  G: typeof tagBytes,
  U: { readonly marked: boolean },
  KE: WeakMap<object, Uint8Array>,
  UN: WeakSet<object>,
  SL: (bytes: Uint8Array, start: number, end: number) => Uint8Array,
) => MessageCodec["write"];

/**
 * The codec of a message type: one function made from source for the type (see
 * message-writer-source.ts), which writes its fields in the order of their numbers, then its
 * unknown fields, and keeps the encoding of a message marked unchanging.
 */
function compileMessage(schema: DescMessage): MessageCodec {
  const codec: { write: MessageCodec["write"] } = {
    write: () => {
      throw new Error(`the writer of ${schema.typeName} is not compiled yet`);
    },
  };
  // Registered before its fields compile, so that a recursive type finds itself (its write is
  // read at each call, so the function set below is the one called).
  codecs.set(schema, codec);
  const plan = planMessageWriter(schema, fieldKinds);
  const delegated = plan.delegated.map(compileField);
  const nested = plan.nested.map((message) => messageCodec(message) as MessageCodec);
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- source made from descriptors alone (message-writer-source.ts)
  const factory = new Function(
    "F",
    "K",
    "T",
    "W",
    "S",
    "G",
    "U",
    "KE",
    "UN",
    "SL",
    `return function write_${schema.typeName.replace(/\W/g, "_")}(m, out) {
  let start = -1;
  if (U.marked) {
    const kept = KE.get(m);
    if (kept !== undefined) { out.raw(kept); return; }
    if (UN.has(m)) start = out.pos;
  }
${plan.source}
  // A copy: the scratch buffer is reused by the next encoding.
  if (start >= 0) KE.set(m, SL(out.buffer, start, out.pos));
};`,
  ) as WriterFactory;
  codec.write = factory(
    delegated,
    nested,
    plan.longTags,
    wireInt64,
    writeJsonObjectFields,
    tagBytes,
    unchangingStateOf(schema),
    keptEncodings,
    unchanging,
    // Uint8Array's slice copies; a Buffer's (the scratch buffer is one) would be a view.
    (bytes, start, end) => Uint8Array.prototype.slice.call(bytes, start, end),
  );
  return codec;
}

function compileField(field: DescField): FieldCodec {
  switch (field.fieldKind) {
    case "list":
      return listField(
        field,
        field.listKind === "message" ? messageValue(field) : scalarValue(field.scalar ?? ScalarType.INT32),
      );
    case "map":
      return mapField(field);
    case "message":
      return singularField(field, messageValue(field));
    case "enum":
      return singularField(field, scalarValue(ScalarType.INT32));
    case "scalar":
      return singularField(field, scalarValue(field.scalar));
  }
}

/** A singular field: set when its oneof holds it, when it is present, or when it is not zero. */
function singularField(field: DescField, value: ValueCodec): FieldCodec {
  const tag = tagBytes(field.number, value.wireType);
  const name = field.localName;
  let read: (message: Fields) => unknown;
  if (field.oneof) {
    const oneofName = field.oneof.localName;
    read = (message) => {
      const oneof = message[oneofName] as { case?: string; value?: unknown } | undefined;
      return oneof?.case === name ? oneof.value : undefined;
    };
  } else if ((field.presence as number) !== implicitPresence) {
    read = (message) => message[name] ?? undefined;
  } else {
    const isZero = zeroTest(field);
    read = (message) => {
      const current = message[name];
      return current === undefined || current === null || isZero(current) ? undefined : current;
    };
  }
  return {
    write(message, out) {
      const current = read(message);
      if (current === undefined) return;
      out.tag(tag);
      value.write(current, out);
    },
  };
}

/** The zero test of an implicit-presence field, as protobuf-es applies it. */
function zeroTest(field: DescField): (value: unknown) => boolean {
  if (field.fieldKind === "enum") {
    const zero = field.enum.values[0]?.number ?? 0;
    return (value) => value === zero;
  }
  switch (field.scalar) {
    case ScalarType.BOOL:
      return (value) => value === false;
    case ScalarType.STRING:
      return (value) => value === "";
    case ScalarType.BYTES:
      return (value) => value instanceof Uint8Array && value.byteLength === 0;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      // Object.is tells -0 (written) from 0 (not).
      return (value) => Object.is(value, 0);
    default:
      // Loose on purpose: 0, 0n and "0" are all zero.

      return (value) => value == 0;
  }
}

/** A repeated field: scalars packed when the field says so, anything else one tagged value per item. */
function listField(field: Extract<DescField, { fieldKind: "list" }>, value: ValueCodec): FieldCodec {
  const name = field.localName;
  if (field.packed && value.wireType !== WireType.LengthDelimited) {
    const tag = tagBytes(field.number, WireType.LengthDelimited);
    return {
      write(message, out) {
        const items = message[name] as readonly unknown[] | undefined;
        if (!items || items.length === 0) return;
        out.tag(tag);
        const content = out.beginDelimited();
        for (let i = 0; i < items.length; i++) value.write(items[i], out);
        out.endDelimited(content);
      },
    };
  }
  const tag = tagBytes(field.number, value.wireType);
  return {
    write(message, out) {
      const items = message[name] as readonly unknown[] | undefined;
      if (!items) return;
      for (let i = 0; i < items.length; i++) {
        out.tag(tag);
        value.write(items[i], out);
      }
    },
  };
}

/** A map with string keys: one entry message per key (key = 1, value = 2), both always written. */
function mapField(field: DescField): FieldCodec {
  if (field.fieldKind !== "map") throw new Error(`${field.toString()} is not a map`);
  const name = field.localName;
  const tag = tagBytes(field.number, WireType.LengthDelimited);
  const keyTag = tagBytes(1, WireType.LengthDelimited);
  const value = field.mapKind === "message" ? messageValue(field) : scalarValue(field.scalar ?? ScalarType.INT32);
  const valueTag = tagBytes(2, value.wireType);
  return {
    write(message, out) {
      const record = message[name] as Record<string, unknown> | undefined;
      if (!record) return;
      for (const key of Object.keys(record)) {
        out.tag(tag);
        const entry = out.beginDelimited();
        out.tag(keyTag);
        out.string(key);
        out.tag(valueTag);
        value.write(record[key], out);
        out.endDelimited(entry);
      }
    },
  };
}

/** A message value, length-prefixed: a JSON object for a Struct, a scalar for a wrapper, else a message. */
function messageValue(field: DescField): ValueCodec {
  const schema = field.message as DescMessage;
  if (usesJson(field)) return delimited(writeJsonStruct);
  // protobuf-es unwraps singular wrapper fields outside oneofs to their scalar value.
  if (field.fieldKind === "message" && !field.oneof && isWrapperDesc(schema)) {
    const valueName = (schema.fields[0] as DescField).localName;
    const wrapper = messageCodec(schema) as MessageCodec;
    return delimited((value, out) => wrapper.write({ [valueName]: value }, out));
  }
  // Compiled lazily: the type may be the one being compiled (a recursive message).
  let codec: MessageCodec | undefined;
  const get = (): MessageCodec => (codec ??= messageCodec(schema) as MessageCodec);
  return delimited((value, out) => get().write(value as Fields, out));
}

function writeJsonStruct(value: unknown, out: BinaryOut): void {
  writeJsonObjectFields(out, value as JsonObject);
}

/** A length-prefixed value whose content `write` writes. */
function delimited(write: (value: unknown, out: BinaryOut) => void): ValueCodec {
  return {
    wireType: WireType.LengthDelimited,
    write(value, out) {
      const content = out.beginDelimited();
      write(value, out);
      out.endDelimited(content);
    },
  };
}

const int64Codec: ValueCodec = {
  wireType: WireType.Varint,
  write: (value, out) => out.int64(wireInt64(value as Int64Value)),
};

const scalarCodecs: Partial<Record<ScalarType, ValueCodec>> = {
  [ScalarType.DOUBLE]: {
    wireType: WireType.Bit64,
    write: (value, out) => out.double(value as number),
  },
  [ScalarType.FLOAT]: {
    wireType: WireType.Bit32,
    write: (value, out) => out.float(value as number),
  },
  [ScalarType.INT32]: {
    wireType: WireType.Varint,
    write: (value, out) => out.int32(value as number),
  },
  [ScalarType.UINT32]: {
    wireType: WireType.Varint,
    write: (value, out) => out.varint((value as number) >>> 0),
  },
  [ScalarType.BOOL]: {
    wireType: WireType.Varint,
    write: (value, out) => out.byte(value ? 1 : 0),
  },
  [ScalarType.FIXED32]: {
    wireType: WireType.Bit32,
    write: (value, out) => out.fixed32(value as number),
  },
  [ScalarType.SFIXED32]: {
    wireType: WireType.Bit32,
    write: (value, out) => out.sfixed32(value as number),
  },
  // Signed and unsigned 64-bit varints share one codec: wireInt64 gives both their wire value.
  [ScalarType.INT64]: int64Codec,
  [ScalarType.UINT64]: int64Codec,
  [ScalarType.STRING]: {
    wireType: WireType.LengthDelimited,
    write: (value, out) => out.string(value as string),
  },
  [ScalarType.BYTES]: {
    wireType: WireType.LengthDelimited,
    write: (value, out) => out.bytes(value as Uint8Array),
  },
};

function scalarValue(scalar: ScalarType): ValueCodec {
  const codec = scalarCodecs[scalar];
  if (!codec) throw new Error(`scalar type ${ScalarType[scalar]} is not covered`);
  return codec;
}
