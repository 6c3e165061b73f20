import { create, createFileRegistry, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import {
  file_google_protobuf_struct,
  file_google_protobuf_wrappers,
  FileDescriptorProtoSchema,
  type DescriptorProtoSchema,
  type FieldDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

type FieldInit = MessageInitShape<typeof FieldDescriptorProtoSchema>;
type MessageInit = MessageInitShape<typeof DescriptorProtoSchema>;

/**
 * Message types for the decoder's tests that the API does not have: every scalar type, singular,
 * optional, packed and unpacked; maps with keys of several types; jstype JS_STRING; wrappers,
 * Struct, ListValue and Value in fields, lists, maps and a oneof; a field number past 255.
 * `flipped` has the same fields with packed and unpacked swapped, so that its encoding read as
 * `scalars` gives the other encoding of each repeated field.
 */
export interface DecodeFixtures {
  readonly scalars: DescMessage;
  readonly flipped: DescMessage;
}

const scalarTypes: readonly [string, number][] = [
  ["double", 1],
  ["float", 2],
  ["int64", 3],
  ["uint64", 4],
  ["int32", 5],
  ["fixed64", 6],
  ["fixed32", 7],
  ["bool", 8],
  ["uint32", 13],
  ["sfixed32", 15],
  ["sfixed64", 16],
  ["sint32", 17],
  ["sint64", 18],
];
const typeString = 9;
const typeMessage = 11;
const typeBytes = 12;
const typeEnum = 14;
const optional = 1;
const repeated = 3;

/** Builds the fixture types from descriptors written here (no .proto file, no build step). */
export function createDecodeFixtures(): DecodeFixtures {
  const registry = createFileRegistry(
    create(FileDescriptorProtoSchema, {
      name: "decode_fixtures.proto",
      package: "decode.test",
      syntax: "proto3",
      dependency: ["google/protobuf/struct.proto", "google/protobuf/wrappers.proto"],
      enumType: [
        {
          name: "Color",
          value: [
            { name: "COLOR_UNSPECIFIED", number: 0 },
            { name: "COLOR_RED", number: 1 },
          ],
        },
      ],
      messageType: [message("Scalars", false), message("Flipped", true)],
    }),
    (name) =>
      ({
        "google/protobuf/struct.proto": file_google_protobuf_struct,
        "google/protobuf/wrappers.proto": file_google_protobuf_wrappers,
      })[name],
  );
  const scalars = registry.getMessage("decode.test.Scalars");
  const flipped = registry.getMessage("decode.test.Flipped");
  if (!scalars || !flipped) throw new Error("fixture types are missing");
  return { scalars, flipped };
}

function message(name: string, flip: boolean): MessageInit {
  const fields: FieldInit[] = [];
  const nested: MessageInit[] = [];
  const packed = (unpacked: boolean): Pick<FieldInit, "options"> =>
    unpacked !== flip ? { options: { packed: false } } : {};
  scalarTypes.forEach(([type, number], i) => {
    fields.push({ name: `s_${type}`, number: i + 1, type: number, label: optional });
    fields.push({ name: `packed_${type}`, number: 20 + i, type: number, label: repeated, ...packed(false) });
    fields.push({ name: `unpacked_${type}`, number: 40 + i, type: number, label: repeated, ...packed(true) });
  });
  const self = `.decode.test.${name}`;
  fields.push(
    { name: "s_string", number: 14, type: typeString, label: optional },
    { name: "s_bytes", number: 15, type: typeBytes, label: optional },
    { name: "s_color", number: 16, type: typeEnum, typeName: ".decode.test.Color", label: optional },
    { name: "strings", number: 60, type: typeString, label: repeated },
    { name: "bytes_list", number: 61, type: typeBytes, label: repeated },
    { name: "colors", number: 62, type: typeEnum, typeName: ".decode.test.Color", label: repeated, ...packed(false) },
    { name: "js_int64", number: 63, type: 3, label: optional, options: { jstype: 2 } },
    { name: "js_uint64s", number: 64, type: 4, label: repeated, options: { jstype: 2 } },
    { name: "opt_int32", number: 65, type: 5, label: optional, proto3Optional: true, oneofIndex: 1 },
    { name: "child", number: 66, type: typeMessage, typeName: self, label: optional },
    { name: "children", number: 67, type: typeMessage, typeName: self, label: repeated },
    { name: "wrapped_int64", number: 68, type: typeMessage, typeName: ".google.protobuf.Int64Value", label: optional },
    { name: "wrapped_bytes", number: 69, type: typeMessage, typeName: ".google.protobuf.BytesValue", label: optional },
    { name: "wrapped_list", number: 70, type: typeMessage, typeName: ".google.protobuf.StringValue", label: repeated },
    { name: "struct", number: 71, type: typeMessage, typeName: ".google.protobuf.Struct", label: optional },
    { name: "structs", number: 72, type: typeMessage, typeName: ".google.protobuf.Struct", label: repeated },
    { name: "list", number: 73, type: typeMessage, typeName: ".google.protobuf.ListValue", label: optional },
    { name: "value", number: 74, type: typeMessage, typeName: ".google.protobuf.Value", label: optional },
    { name: "c_string", number: 80, type: typeString, label: optional, oneofIndex: 0 },
    { name: "c_child", number: 81, type: typeMessage, typeName: self, label: optional, oneofIndex: 0 },
    {
      name: "c_struct",
      number: 82,
      type: typeMessage,
      typeName: ".google.protobuf.Struct",
      label: optional,
      oneofIndex: 0,
    },
    {
      name: "c_wrapper",
      number: 83,
      type: typeMessage,
      typeName: ".google.protobuf.Int32Value",
      label: optional,
      oneofIndex: 0,
    },
    { name: "far_away", number: 300, type: 17, label: optional },
  );
  const maps: [string, number, number, string?][] = [
    ["int32_to_string", 5, typeString],
    ["int64_to_child", 3, typeMessage, self],
    ["bool_to_bytes", 8, typeBytes],
    ["string_to_color", typeString, typeEnum, ".decode.test.Color"],
    ["uint64_to_struct", 4, typeMessage, ".google.protobuf.Struct"],
    ["sint32_to_int64", 17, 3],
    ["fixed32_to_double", 7, 1],
  ];
  maps.forEach(([mapName, keyType, valueType, valueTypeName], i) => {
    const entry = `${mapName.replace(/(^|_)(\w)/g, (_, __, c: string) => c.toUpperCase())}Entry`;
    nested.push({
      name: entry,
      options: { mapEntry: true },
      field: [
        { name: "key", number: 1, type: keyType, label: optional },
        {
          name: "value",
          number: 2,
          type: valueType,
          label: optional,
          ...(valueTypeName ? { typeName: valueTypeName } : {}),
        },
      ],
    });
    fields.push({ name: mapName, number: 90 + i, type: typeMessage, typeName: `${self}.${entry}`, label: repeated });
  });
  return { name, field: fields, nestedType: nested, oneofDecl: [{ name: "choice" }, { name: "_opt_int32" }] };
}
