import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { utf8Length, varintSize } from "../codec/binary-out.js";

/**
 * Most run events carry a small body of a few scalars (ACTIVATED's tool name, EXECUTION_STARTED's
 * timeout and attempt, DEACTIVATED's flag), and protobuf-es's fixed cost per message (a writer, its
 * chunks, the final copy) was most of encoding them. A FlatWriter writes such a message straight
 * into a caller's buffer, sizes first, with protobuf-es's rules: fields in number order, zero values
 * of implicit presence left out.
 */
export interface FlatWriter {
  /** Bytes of `message`, or -1 when it holds what this writer does not write (then use protobuf-es). */
  size(message: object): number;
  /** Writes `message` (whose size was not -1) at `at`; returns the position after it. */
  write(message: object, out: Buffer, at: number): number;
}

type FlatKind = "string" | "bool" | "varint" | "double" | "unset-message";

interface FlatField {
  readonly localName: string;
  readonly kind: FlatKind;
  /** The field's tag, as one byte (field numbers below 16). */
  readonly tag: number;
}

const writers = new WeakMap<DescMessage, FlatWriter | null>();

/**
 * The writer of `schema` when every field is a string, bool, uint32, int32 or double of implicit
 * presence, or a singular message field (written by protobuf-es when set: the size is then -1),
 * with numbers below 16, and at least one is a scalar; undefined otherwise.
 */
export function flatWriterFor(schema: DescMessage): FlatWriter | undefined {
  let writer = writers.get(schema);
  if (writer === undefined) {
    const fields = flatFields(schema);
    writer = fields ? createFlatWriter(fields) : null;
    writers.set(schema, writer);
  }
  return writer ?? undefined;
}

function flatFields(schema: DescMessage): FlatField[] | undefined {
  const fields: FlatField[] = [];
  for (const field of [...schema.fields].sort((a, b) => a.number - b.number)) {
    const kind = flatKind(field);
    if (!kind || field.number >= 16) return undefined;
    const wireType =
      kind === "double" ? WireType.Bit64 : kind === "string" ? WireType.LengthDelimited : WireType.Varint;
    fields.push({ localName: field.localName, kind, tag: (field.number << 3) | wireType });
  }
  // A message of nested messages only (a spec, a result) always goes to protobuf-es.
  return fields.some((field) => field.kind !== "unset-message") ? fields : undefined;
}

function flatKind(field: DescField): FlatKind | undefined {
  if (field.oneof) return undefined;
  if (field.fieldKind === "message") return "unset-message";
  if (field.fieldKind !== "scalar" || field.presence !== FeatureSet_FieldPresence.IMPLICIT) return undefined;
  switch (field.scalar) {
    case ScalarType.STRING:
      return "string";
    case ScalarType.BOOL:
      return "bool";
    case ScalarType.UINT32:
    case ScalarType.INT32:
      return "varint";
    case ScalarType.DOUBLE:
      return "double";
    default:
      return undefined;
  }
}

function createFlatWriter(fields: readonly FlatField[]): FlatWriter {
  return {
    size(message) {
      if ((message as { $unknown?: unknown[] }).$unknown?.length) return -1;
      const values = message as Record<string, unknown>;
      let size = 0;
      for (const field of fields) {
        const value = values[field.localName];
        switch (field.kind) {
          case "string": {
            if (value === "") break;
            const length = utf8Length(value as string);
            size += 1 + varintSize(length) + length;
            break;
          }
          case "bool":
            if (value === true) size += 2;
            break;
          case "varint":
            // A negative int32 takes ten bytes: left to protobuf-es.
            if ((value as number) < 0) return -1;
            if (value !== 0) size += 1 + varintSize(value as number);
            break;
          case "double":
            if (!Object.is(value, 0)) size += 9;
            break;
          case "unset-message":
            if (value !== undefined) return -1;
            break;
        }
      }
      return size;
    },
    write(message, out, at) {
      const values = message as Record<string, unknown>;
      for (const field of fields) {
        const value = values[field.localName];
        switch (field.kind) {
          case "string":
            if (value === "") break;
            out[at++] = field.tag;
            at = writeString(out, at, value as string);
            break;
          case "bool":
            if (value !== true) break;
            out[at++] = field.tag;
            out[at++] = 1;
            break;
          case "varint":
            if (value === 0) break;
            out[at++] = field.tag;
            at = writeVarint(out, at, value as number);
            break;
          case "double":
            if (Object.is(value, 0)) break;
            out[at++] = field.tag;
            at = out.writeDoubleLE(value as number, at);
            break;
          case "unset-message":
            break;
        }
      }
      return at;
    },
  };
}

/** Strings up to this length are measured and copied in JavaScript: a call into Buffer costs more. */
const shortString = 64;

/** Writes `text` with its length in front at `at`; returns the position after it. */
export function writeString(out: Buffer, at: number, text: string): number {
  const length = utf8Length(text);
  at = writeVarint(out, at, length);
  if (length === text.length && length <= shortString) {
    // ASCII: one byte per character.
    for (let i = 0; i < length; i++) out[at++] = text.charCodeAt(i);
    return at;
  }
  return at + out.write(text, at, length, "utf8");
}

/** Writes a non-negative safe integer as a varint at `at`; returns the position after it. */
export function writeVarint(out: Buffer, at: number, value: number): number {
  while (value >= 0x80) {
    out[at++] = (value % 0x80) | 0x80;
    value = Math.floor(value / 0x80);
  }
  out[at++] = value;
  return at;
}
