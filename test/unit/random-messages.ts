import {
  create,
  ScalarType,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
} from "@bufbuild/protobuf";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { file_toolruntime_v1_execution } from "../../gen/toolruntime/v1/execution_pb.js";
import { file_toolruntime_v1_provider } from "../../gen/toolruntime/v1/provider_pb.js";
import { file_toolruntime_v1_registry } from "../../gen/toolruntime/v1/registry_pb.js";
import { file_toolruntime_v1_run_event } from "../../gen/toolruntime/v1/run_event_pb.js";
import { file_toolruntime_v1_runner } from "../../gen/toolruntime/v1/runner_pb.js";
import { file_toolruntime_v1_tool } from "../../gen/toolruntime/v1/tool_pb.js";

/** A deterministic generator of numbers in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

/**
 * JSON objects at the edges of what a Struct carries: empty keys and strings, "__proto__" and
 * integer-like keys (ordered first by JavaScript), -0, the largest and smallest doubles, NaN and
 * infinities (a Struct's number_value may hold them), surrogate pairs, a lone surrogate (sent as
 * U+FFFD), a leading U+FEFF, NUL, nested empty lists and objects, long strings.
 */
export const edgeJsonObjects: readonly JsonObject[] = [
  {},
  { "": "" },
  JSON.parse('{"__proto__": {"a": 1}, "constructor": "c", "toString": null}') as JsonObject,
  { "2": 1, "1": 2, a: 3, "0": null, "-1": 4, "01": 5, "4294967295": 6 },
  { zero: -0, big: Number.MAX_VALUE, tiny: Number.MIN_VALUE, neg: -1e300, nan: Number.NaN, inf: -Infinity },
  { "😀": "\u{1f600}\u{10ffff}", ключ: "ß", bom: "\ufeffx", nul: "\u0000", lone: "\ud800" },
  { l: [[[]], [null, [1, [2, {}]]], { a: [true, false] }], e: [], o: { "": {} } },
  { long: "x".repeat(300), wide: "é".repeat(100), mixed: `${"a".repeat(70)}ü` },
];

/** A JSON value of random shape, `depth` levels deep at most. */
export function randomJson(random: () => number, depth: number): JsonValue {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  const kind = depth <= 0 ? Math.floor(random() * 4) : Math.floor(random() * 6);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return pick([0, -0, 1, -1.5, 2 ** 53, 1e-7, 123456.789]);
    case 2:
      return pick(["", "a", "type", "ünïcödé", "\u{1f600}", "x".repeat(80)]);
    case 3:
      return random() < 0.5;
    case 4:
      return Array.from({ length: Math.floor(random() * 4) }, () => randomJson(random, depth - 1));
    default: {
      const object: JsonObject = {};
      for (let i = Math.floor(random() * 4); i > 0; i--) {
        object[pick(["a", "b", "", "1", "properties", "ключ"])] = randomJson(random, depth - 1);
      }
      return object;
    }
  }
}

/** A message of `schema` with about half its fields set to values that probe the encoding's edges. */
export function fillMessage(schema: DescMessage, random: () => number, depth = 0): Record<string, unknown> {
  const message = create(schema) as unknown as Record<string, unknown>;
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  for (const oneof of schema.oneofs) {
    if (random() < 0.3) continue;
    const field = pick(oneof.fields);
    const value = fieldValue(field, random, depth);
    if (value === undefined) continue;
    message[oneof.localName] = { case: field.localName, value };
  }
  for (const field of schema.fields) {
    if (field.oneof || random() < 0.4) continue;
    if (field.fieldKind === "list") {
      const items = Array.from({ length: Math.floor(random() * 4) }, () => fieldValue(field, random, depth));
      if (items.every((item) => item !== undefined)) message[field.localName] = items;
    } else if (field.fieldKind === "map") {
      const record: Record<string, unknown> = {};
      for (let i = Math.floor(random() * 3); i > 0; i--) {
        record[String(scalarValue(field.mapKey, random, true))] = fieldValue(field, random, depth);
      }
      if (Object.values(record).every((value) => value !== undefined)) message[field.localName] = record;
    } else {
      const value = fieldValue(field, random, depth);
      if (value !== undefined) message[field.localName] = value;
    }
  }
  return message;
}

function fieldValue(field: DescField, random: () => number, depth: number): unknown {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  if (field.enum) return pick([...field.enum.values.map((value) => value.number), 7, -3]);
  if (field.message) {
    if (depth > 2) return undefined;
    if (field.message.typeName === "google.protobuf.Struct" && field.parent.typeName !== "google.protobuf.Value") {
      return random() < 0.5 ? pick(edgeJsonObjects) : { root: randomJson(random, 4) };
    }
    if (field.fieldKind === "message" && !field.oneof && isWrapperDesc(field.message)) {
      return scalarValue((field.message.fields[0] as DescField & { scalar: ScalarType }).scalar, random, false);
    }
    return create(field.message, fillMessage(field.message, random, depth + 1) as never);
  }
  const value = scalarValue(field.scalar, random, false);
  return field.fieldKind !== "map" && "longAsString" in field && field.longAsString ? String(value) : value;
}

function scalarValue(scalar: ScalarType, random: () => number, key: boolean): unknown {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  switch (scalar) {
    case ScalarType.DOUBLE:
      return pick([0, -0, 1.5, -1e300, Number.NaN, Number.POSITIVE_INFINITY, random() * 1e6]);
    case ScalarType.FLOAT:
      return Math.fround(pick([0, -0, 1.5, -2.25, Number.NaN, random() * 1000]));
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return pick([0, 1, -1, 2 ** 31 - 1, -(2 ** 31), Math.floor(random() * 1e6)]);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return pick([0, 1, 127, 128, 2 ** 32 - 1, Math.floor(random() * 1e9)]);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return pick([0n, 1n, -1n, 2n ** 53n + 1n, -(2n ** 63n), 2n ** 63n - 1n]);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return pick([0n, 1n, 300n, 2n ** 53n + 1n, 2n ** 64n - 1n, BigInt(Math.floor(random() * 1e9))]);
    case ScalarType.BOOL:
      return pick([true, false]);
    case ScalarType.STRING:
      return pick(["", "a", "ünïcödé", "x".repeat(200), "ß".repeat(70), "\u{1f600}", "\ufeffbom", "__proto__"]);
    case ScalarType.BYTES:
      if (key) throw new Error("bytes are no map key");
      return pick([new Uint8Array(0), new Uint8Array([0, 255, 7]), new Uint8Array(300).fill(9)]);
  }
}

/** Every message type of the API's proto files, nested ones included. */
export const apiMessageSchemas: readonly DescMessage[] = [
  file_toolruntime_v1_execution,
  file_toolruntime_v1_provider,
  file_toolruntime_v1_registry,
  file_toolruntime_v1_run_event,
  file_toolruntime_v1_runner,
  file_toolruntime_v1_tool,
].flatMap((file) => [...nestedTypes(file)].filter((type) => type.kind === "message"));
