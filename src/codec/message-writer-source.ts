import { ScalarType, type DescField, type DescMessage, type DescOneof } from "@bufbuild/protobuf";
import { tagBytes } from "./binary-out.js";

/**
 * The source of a message type's field writer: straight-line code that reads each field by its
 * name and writes it with BinaryOut's own methods, what the closures of fast-binary.ts do one
 * field at a time. Closures made from one function literal share V8's feedback, so a read of
 * `message[name]` or a call of `value.write` inside them sees every message type and every field
 * of the API and is megamorphic (a lookup in V8's shared stub cache each time); a function made
 * from source per type has feedback of its own, and each of its reads and calls sees one shape.
 *
 * The source only names its parameters: `m` the message, `out` the BinaryOut, and the helpers
 * `F` (FieldCodecs of the fields it leaves to fast-binary.ts: lists, maps, wrappers), `K` (the
 * codecs of nested message types), `T` (tags longer than a byte), `W` (wireInt64), `S`
 * (writeJsonObjectFields) and `G` (tagBytes, for unknown fields). Nothing of a message's content is
 * ever part of the source: names come from the descriptors, which protoc checked to be
 * identifiers, and they are quoted as JSON strings all the same.
 */
export interface WriterPlan {
  /** The source of the body of `function (m, out)`. */
  readonly source: string;
  /** Fields the source hands to a FieldCodec of fast-binary.ts: `F[i]` is the i-th. */
  readonly delegated: readonly DescField[];
  /** Nested message types: `K[i]` is the codec of the i-th. */
  readonly nested: readonly DescMessage[];
  /** Tags of more than one byte: `T[i]` is the i-th. */
  readonly longTags: readonly (readonly number[])[];
}

/** How fast-binary.ts treats a field: written here, or handed to its FieldCodec. */
export interface FieldKinds {
  /** Whether the field holds a JSON object written as a google.protobuf.Struct. */
  usesJson(field: DescField): boolean;
  /** Whether the field is a singular wrapper that protobuf-es unwraps to its scalar. */
  unwrapped(field: DescField): boolean;
}

/** google.protobuf.FeatureSet.FieldPresence.IMPLICIT, as the descriptors report it. */
const implicitPresence: number = 2;

const varint = 0;
const bit64 = 1;
const delimited = 2;
const bit32 = 5;

/** Plans the writer of `schema`, fields in the order of their numbers, as protobuf-es writes them. */
export function planMessageWriter(schema: DescMessage, kinds: FieldKinds): WriterPlan {
  const delegated: DescField[] = [];
  const nested: DescMessage[] = [];
  const longTags: (readonly number[])[] = [];
  const lines: string[] = [];
  const q = (text: string): string => JSON.stringify(text);

  const tag = (fieldNumber: number, wireType: number): string => {
    const bytes = tagBytes(fieldNumber, wireType);
    if (bytes.length === 1) return `out.byte(${bytes[0]});`;
    longTags.push(bytes);
    return `out.tag(T[${longTags.length - 1}]);`;
  };
  const nestedIndex = (message: DescMessage): number => {
    const index = nested.indexOf(message);
    if (index >= 0) return index;
    nested.push(message);
    return nested.length - 1;
  };
  /** Statements writing value `x` (set, not undefined) of `field`, its tag first. */
  const writeValue = (field: DescField, x: string): string => {
    if (field.fieldKind === "message") {
      const content = kinds.usesJson(field) ? `S(out, ${x});` : `K[${nestedIndex(field.message)}].write(${x}, out);`;
      return `${tag(field.number, delimited)} { const at = out.beginDelimited(); ${content} out.endDelimited(at); }`;
    }
    if (field.fieldKind === "enum") return `${tag(field.number, varint)} out.int32(${x});`;
    if (field.fieldKind !== "scalar") throw new Error(`${field.toString()} is not singular`);
    switch (field.scalar) {
      case ScalarType.DOUBLE:
        return `${tag(field.number, bit64)} out.double(${x});`;
      case ScalarType.FLOAT:
        return `${tag(field.number, bit32)} out.float(${x});`;
      case ScalarType.INT32:
        return `${tag(field.number, varint)} out.int32(${x});`;
      case ScalarType.UINT32:
        return `${tag(field.number, varint)} out.varint(${x} >>> 0);`;
      case ScalarType.BOOL:
        return `${tag(field.number, varint)} out.byte(${x} ? 1 : 0);`;
      case ScalarType.FIXED32:
        return `${tag(field.number, bit32)} out.fixed32(${x});`;
      case ScalarType.SFIXED32:
        return `${tag(field.number, bit32)} out.sfixed32(${x});`;
      case ScalarType.INT64:
      case ScalarType.UINT64:
        return `${tag(field.number, varint)} out.int64(W(${x}));`;
      case ScalarType.STRING:
        return `${tag(field.number, delimited)} out.string(${x});`;
      case ScalarType.BYTES:
        return `${tag(field.number, delimited)} out.bytes(${x});`;
      default:
        throw new Error(`${field.toString()}: scalar type ${ScalarType[field.scalar]} is not covered`);
    }
  };
  /** Statements writing the value of oneof case `field`, which `x` holds: its value when set. */
  const writeCase = (field: DescField): string => `x = x.value; if (x !== undefined) { ${writeValue(field, "x")} }`;
  /** The condition under which an implicit-presence field is written: not zero, as protobuf-es tests it. */
  const notZero = (field: DescField, x: string): string => {
    if (field.fieldKind === "enum") return `${x} !== ${field.enum.values[0]?.number ?? 0}`;
    switch (field.scalar) {
      case ScalarType.BOOL:
        return `${x} !== false`;
      case ScalarType.STRING:
        return `${x} !== ""`;
      case ScalarType.BYTES:
        return `!(${x} instanceof Uint8Array && ${x}.byteLength === 0)`;
      case ScalarType.DOUBLE:
      case ScalarType.FLOAT:
        // Object.is tells -0 (written) from 0 (not).
        return `!Object.is(${x}, 0)`;
      default:
        // Loose on purpose: 0, 0n and "0" are all zero.
        return `${x} != 0`;
    }
  };
  const delegate = (field: DescField): void => {
    delegated.push(field);
    lines.push(`F[${delegated.length - 1}].write(m, out);`);
  };
  /** A singular field outside any oneof (a scalar, an enum or a message). */
  const singular = (field: DescField): void => {
    if (field.fieldKind === "message" && kinds.unwrapped(field)) {
      delegate(field);
      return;
    }
    const read = `x = m[${q(field.localName)}];`;
    const present = "x !== undefined && x !== null";
    const implicit = field.fieldKind !== "message" && (field.presence as number) === implicitPresence;
    const condition = implicit ? `${present} && ${notZero(field, "x")}` : present;
    lines.push(`${read} if (${condition}) { ${writeValue(field, "x")} }`);
  };
  const oneof = (group: DescOneof): void => {
    lines.push(`x = m[${q(group.localName)}];`);
    lines.push(`switch (x === undefined || x === null ? undefined : x.case) {`);
    for (const field of group.fields) {
      lines.push(`  case ${q(field.localName)}: ${writeCase(field)} break;`);
    }
    lines.push(`}`);
  };

  const ordered = [...schema.fields].sort((a, b) => a.number - b.number);
  for (let i = 0; i < ordered.length;) {
    const field = ordered[i] as DescField;
    const group = field.oneof;
    // A oneof whose cases are numbered together is one switch; a case numbered apart from the
    // others is written on its own, in its place, so that the fields keep the order of numbers.
    if (group && group.fields.length > 1 && ordered.slice(i, i + group.fields.length).every((f) => f.oneof === group)) {
      oneof(group);
      i += group.fields.length;
      continue;
    }
    if (group) {
      lines.push(`x = m[${q(group.localName)}];`);
      lines.push(`if (x !== undefined && x !== null && x.case === ${q(field.localName)}) { ${writeCase(field)} }`);
    } else if (field.fieldKind === "list" || field.fieldKind === "map") {
      delegate(field);
    } else {
      singular(field);
    }
    i += 1;
  }
  lines.push(
    `x = m["$unknown"]; if (x) for (let i = 0; i < x.length; i++) { const u = x[i]; out.tag(G(u.no, u.wireType)); out.raw(u.data); }`,
  );
  return { source: `let x;\n${lines.join("\n")}`, delegated, nested, longTags };
}
