import { create, fromBinary, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { RegisterToolRequestSchema, RegisterToolResponseSchema } from "../../gen/toolruntime/v1/registry_pb.js";
import { ExecuteToolRequestSchema } from "../../gen/toolruntime/v1/runner_pb.js";
import { ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { fromBinaryFast } from "../../src/codec/fast-binary-decode.js";
import { toBinaryFast } from "../../src/codec/fast-binary.js";
import { echoesStructFields, hasKeptBytes, keepForOneMoreCopy } from "../../src/codec/struct-echo.js";
import { encodeStruct } from "../../src/codec/struct-binary.js";
// Loading the registry's entries turns the echo on for ToolSpec (echoStructFieldsOf).
import "../../src/registry/registry-entry.js";
import type { RegistryEntry } from "../../src/registry/registry-entry.js";
import { ToolRegistry } from "../../src/registry/tool-registry.js";
import { validateSpec } from "../../src/registry/validate-spec.js";
import { protobufRecursionLimit } from "../../src/server/protobuf-limits.js";
import { randomJson, seededRandom } from "./random-messages.js";

// Wire pieces, by hand: a field's tag, then its length when it is length-delimited.
const delimited = (tag: number, content: readonly number[]): number[] => [tag, ...varint(content.length), ...content];
function varint(value: number): number[] {
  const bytes: number[] = [];
  for (; value >= 0x80; value >>>= 7) bytes.push((value & 0x7f) | 0x80);
  return [...bytes, value];
}
const text = (value: string): number[] => [...Buffer.from(value)];
/** A Struct entry (fields = 1) of `key` with a Value holding the string `value` (string_value = 3). */
const stringEntry = (key: string, value: string): number[] =>
  delimited(0x0a, [...delimited(0x0a, text(key)), ...delimited(0x12, delimited(0x1a, text(value)))]);
/** An unknown varint field (number 9) inside a Struct: valid protobuf that the JSON form drops. */
const unknownField = [0x48, 0x07];
/**
 * A Struct whose keys come in the order a JavaScript object lists them, {"1": "y", "b": "x"}:
 * array-index keys first (ascending), then the others as they came. Its bytes are what encoding
 * the object gives, so they may be echoed.
 */
const ordered = [...stringEntry("1", "y"), ...stringEntry("b", "x")];
/**
 * The same Struct with its keys in another order, {"b": "x", "1": "y"}: the object lists "1" first,
 * so these bytes are not what it encodes to, and must never be echoed.
 */
const reordered = [...stringEntry("b", "x"), ...stringEntry("1", "y")];
/** A schema {"type": "object", "default": STRUCT} with `struct`'s bytes inside. */
const schemaWithDefault = (struct: readonly number[]): number[] => [
  ...stringEntry("type", "object"),
  ...delimited(0x0a, [...delimited(0x0a, text("default")), ...delimited(0x12, delimited(0x2a, [...struct]))]),
];
const orderedSchema = schemaWithDefault(ordered);

/** A RegisterToolRequest whose spec (field 2) has name (1) and, as input_schema (5), `schema`'s bytes. */
const registerRequest = (schema: readonly number[], name = "demo.echo"): Uint8Array =>
  Uint8Array.from(delimited(0x12, [...delimited(0x0a, text(name)), ...delimited(0x2a, [...schema])]));

/** Decodes a RegisterToolRequest as the server does (its recursion limit), validates its spec, and encodes the response. */
function answer(request: Uint8Array): { bytes: Uint8Array; schema: JsonObject | undefined } {
  const decoded = fromBinaryFast(RegisterToolRequestSchema, request, { recursionLimit: protobufRecursionLimit });
  const { spec } = validateSpec(decoded.spec, undefined, { owned: true });
  const response = create(RegisterToolResponseSchema, { spec });
  return { bytes: toBinaryFast(RegisterToolResponseSchema, response), schema: spec.inputSchema };
}

/** Whether `needle` occurs in `bytes`. */
const contains = (bytes: Uint8Array, needle: readonly number[]): boolean =>
  Buffer.from(bytes).includes(Buffer.from(needle));

describe("struct echo: a spec's schemas answered with the bytes they were read from", () => {
  it("is on for ToolSpec only", () => {
    expect(echoesStructFields(ToolSpecSchema)).to.equal(true);
    expect(echoesStructFields(ExecuteToolRequestSchema)).to.equal(false);
  });

  it("answers random specs with the very bytes protobuf-es writes, decoded back to the same spec", () => {
    const random = seededRandom(41);
    for (let round = 0; round < 200; round++) {
      const properties: JsonObject = {};
      for (let index = 0; index < 1 + Math.floor(random() * 6); index++) {
        properties[`p${index}`] = {
          description: JSON.stringify(randomJson(random, 1)),
          default: randomJson(random, 3),
        };
      }
      const spec = create(ToolSpecSchema, {
        name: `demo.tool${round}`,
        inputSchema: { type: "object", properties, required: ["p0"] },
      });
      const request = toBinary(RegisterToolRequestSchema, create(RegisterToolRequestSchema, { spec }));
      const { bytes } = answer(request);
      const reference = fromBinary(RegisterToolRequestSchema, request).spec;
      const expected = toBinary(
        RegisterToolResponseSchema,
        create(RegisterToolResponseSchema, { spec: validateSpec(reference, undefined, { owned: true }).spec }),
      );
      expect(Buffer.from(bytes).equals(Buffer.from(expected)), `round ${round}`).to.equal(true);
    }
  });

  it("copies the schema's bytes as read when they are what the object encodes to, and the spec decodes the same", () => {
    const decoded = fromBinaryFast(RegisterToolRequestSchema, registerRequest(orderedSchema));
    expect(hasKeptBytes(decoded.spec?.inputSchema as JsonObject), "kept").to.equal(true);
    const { bytes, schema: kept } = answer(registerRequest(orderedSchema));
    expect(kept).to.deep.equal({ type: "object", default: { "1": "y", b: "x" } });
    expect(contains(bytes, orderedSchema), "the schema's bytes as sent").to.equal(true);
    const echoed = fromBinary(RegisterToolResponseSchema, bytes);
    expect(echoed.spec?.inputSchema).to.deep.equal(kept);
    expect(echoed.spec?.name).to.equal("demo.echo");
  });

  // A JavaScript object lists array-index keys first, in ascending order: bytes that give them
  // otherwise are not what it encodes to. Echoing them made the first answer differ from every later one.
  const outOfOrder: [string, number[]][] = [
    ["an index key after another key", reordered],
    ["index keys in descending order", [...stringEntry("2", "y"), ...stringEntry("1", "x")]],
    [
      "an index key after another, nested in a list",
      [
        ...delimited(0x0a, [
          ...delimited(0x0a, text("l")),
          ...delimited(0x12, delimited(0x32, delimited(0x0a, delimited(0x2a, reordered)))),
        ]),
      ],
    ],
  ];
  for (const [title, struct] of outOfOrder) {
    it(`encodes anew a schema with ${title}`, () => {
      const schemaBytes = schemaWithDefault(struct);
      const decoded = fromBinaryFast(RegisterToolRequestSchema, registerRequest(schemaBytes));
      expect(hasKeptBytes(decoded.spec?.inputSchema as JsonObject), "not kept").to.equal(false);
      const { bytes, schema } = answer(registerRequest(schemaBytes));
      expect(contains(bytes, schemaBytes), "the bytes as sent").to.equal(false);
      const expected = toBinary(RegisterToolResponseSchema, fromBinary(RegisterToolResponseSchema, bytes));
      expect(Buffer.from(bytes).equals(Buffer.from(expected)), "what protobuf-es writes").to.equal(true);
      expect(contains(bytes, [...encodeStruct(schema as JsonObject)]), "encoded anew").to.equal(true);
    });
  }

  it("keeps the bytes of index keys that come first and in ascending order, even past 2^31", () => {
    const struct = [
      ...stringEntry("7", "a"),
      ...stringEntry("4294967294", "b"),
      ...stringEntry("4294967295", "c"),
      ...stringEntry("07", "d"),
      ...stringEntry("x", "e"),
    ];
    const decoded = fromBinaryFast(RegisterToolRequestSchema, registerRequest(schemaWithDefault(struct)));
    const schema = decoded.spec?.inputSchema as JsonObject;
    // "4294967295" and "07" are not array indexes: JavaScript lists them in the order they came.
    expect(Object.keys(schema["default"] as JsonObject)).to.deep.equal(["7", "4294967294", "4294967295", "07", "x"]);
    expect(hasKeptBytes(schema), "kept").to.equal(true);
  });

  // Bytes that protobuf-es would not write back as they are: each schema is {"type": "object"} and
  // one odd entry; its answer must hold the schema encoded anew, never the odd bytes.
  const key = (name: string): number[] => delimited(0x0a, text(name));
  const value = (content: readonly number[]): number[] => delimited(0x12, [...content]);
  const oddEntries: [string, number[], JsonObject][] = [
    ["an unknown field in the Struct", unknownField, {}],
    [
      "an unknown field in an entry",
      delimited(0x0a, [...key("title"), ...value(delimited(0x1a, text("t"))), 0x18, 0x01]),
      { title: "t" },
    ],
    [
      "an unknown field in a Value",
      delimited(0x0a, [...key("title"), ...value([...delimited(0x1a, text("t")), 0x38, 0x01])]),
      { title: "t" },
    ],
    [
      "an unknown field in a list",
      delimited(0x0a, [
        ...key("examples"),
        ...value(delimited(0x32, [...delimited(0x0a, delimited(0x1a, text("a"))), 0x10, 0x01])),
      ]),
      { examples: ["a"] },
    ],
    [
      "a key's length in two bytes",
      delimited(0x0a, [0x0a, 0x85, 0x00, ...text("title"), ...value(delimited(0x1a, text("t")))]),
      { title: "t" },
    ],
    [
      "a key's length with bits past the 32nd",
      delimited(0x0a, [0x0a, 0x85, 0x80, 0x80, 0x80, 0x10, ...text("title"), ...value(delimited(0x1a, text("t")))]),
      { title: "t" },
    ],
    [
      "a tag in two bytes",
      delimited(0x0a, [0x8a, 0x00, 5, ...text("title"), ...value(delimited(0x1a, text("t")))]),
      { title: "t" },
    ],
    ["a null of 5", delimited(0x0a, [...key("default"), ...value([0x08, 0x05])]), { default: null }],
    ["a bool of 2", delimited(0x0a, [...key("default"), ...value([0x20, 0x02])]), { default: true }],
    [
      "two kinds in one Value",
      delimited(0x0a, [...key("default"), ...value([...delimited(0x1a, text("a")), 0x20, 0x01])]),
      { default: true },
    ],
    [
      "the value before the key",
      delimited(0x0a, [...value(delimited(0x1a, text("t"))), ...key("title")]),
      { title: "t" },
    ],
    [
      "a key twice in one entry",
      delimited(0x0a, [...key("x"), ...key("title"), ...value(delimited(0x1a, text("t")))]),
      { title: "t" },
    ],
    [
      "an entry without its key (in a struct_value)",
      delimited(0x0a, [
        ...key("default"),
        ...value(delimited(0x2a, delimited(0x0a, value(delimited(0x1a, text("t")))))),
      ]),
      { default: { "": "t" } },
    ],
    // Maps keep the last, as the JSON read does; the checks made on the JSON never see the first.
    ["a key sent twice", [...stringEntry("title", "hidden"), ...stringEntry("title", "t")], { title: "t" }],
    // Read as null, which the bytes do not hold.
    ["an entry without its value", delimited(0x0a, key("default")), { default: null }],
    ["a Value without a kind", delimited(0x0a, [...key("default"), ...value([])]), { default: null }],
  ];
  for (const [label, odd, read] of oddEntries) {
    it(`encodes anew a schema with ${label}`, () => {
      const raw = [...stringEntry("type", "object"), ...odd];
      const { bytes, schema } = answer(registerRequest(raw));
      expect(schema).to.deep.equal({ type: "object", ...read });
      expect(contains(bytes, raw), "the bytes as read").to.equal(false);
      expect(contains(bytes, [...encodeStruct(schema as JsonObject)]), "encoded anew").to.equal(true);
    });
  }

  it("never answers with what a key sent twice hid: a value nested past other decoders' limit", () => {
    let hidden = delimited(0x1a, text("deep")); // a Value holding a string, then 200 Structs around it
    for (let level = 0; level < 200; level++)
      hidden = delimited(0x2a, delimited(0x0a, [...delimited(0x0a, text("a")), ...delimited(0x12, hidden)]));
    const hiding = delimited(0x0a, [...delimited(0x0a, text("description")), ...delimited(0x12, hidden)]);
    const request = registerRequest([...hiding, ...stringEntry("description", "ok"), ...stringEntry("type", "object")]);
    const { bytes, schema } = answer(request);
    expect(schema).to.deep.equal({ description: "ok", type: "object" });
    // protobuf-es (like upb, Python and C++) reads at most 100 levels by default.
    expect(fromBinary(RegisterToolResponseSchema, bytes).spec?.inputSchema).to.deep.equal(schema);
  });

  it("encodes anew a schema sent in two parts (the second merges into the first)", () => {
    const first = orderedSchema;
    const second = stringEntry("title", "second");
    const request = Uint8Array.from(
      delimited(0x12, [...delimited(0x0a, text("demo.twice")), ...delimited(0x2a, first), ...delimited(0x2a, second)]),
    );
    const decoded = fromBinaryFast(RegisterToolRequestSchema, request);
    expect(hasKeptBytes(decoded.spec?.inputSchema as JsonObject), "the first part's bytes forgotten").to.equal(false);
    const { bytes, schema } = answer(request);
    expect(schema).to.deep.equal({ type: "object", default: { "1": "y", b: "x" }, title: "second" });
    const expected = toBinary(RegisterToolResponseSchema, fromBinary(RegisterToolResponseSchema, bytes));
    expect(Buffer.from(bytes).equals(Buffer.from(expected))).to.equal(true);
    expect(fromBinary(RegisterToolResponseSchema, bytes).spec?.inputSchema).to.deep.equal(schema);
  });

  it("keeps nothing for other messages' Struct fields (a run's inputs)", () => {
    const request = fromBinaryFast(ExecuteToolRequestSchema, Uint8Array.from(delimited(0x1a, ordered)));
    expect(request.inputs).to.deep.equal({ "1": "y", b: "x" });
    expect(hasKeptBytes(request.inputs as JsonObject)).to.equal(false);
  });

  it("copies a schema's bytes once: the next answer carrying the same object encodes it anew", () => {
    const early = fromBinaryFast(RegisterToolRequestSchema, registerRequest(orderedSchema, "demo.once"));
    const spec = early.spec as NonNullable<typeof early.spec>;
    const encode = () => toBinaryFast(ToolSpecSchema, spec);
    const first = encode();
    expect(contains(first, orderedSchema), "the first answer holds the bytes").to.equal(true);
    expect(hasKeptBytes(spec.inputSchema as JsonObject), "let go at the first copy").to.equal(false);
    const second = encode();
    expect(Buffer.from(second).equals(Buffer.from(first)), "the second, encoded anew, is the same").to.equal(true);
    expect(fromBinary(ToolSpecSchema, second).inputSchema).to.deep.equal({
      type: "object",
      default: { "1": "y", b: "x" },
    });
  });

  it("copies them once more when told to (a spec queued for packing), then encodes anew", () => {
    const early = fromBinaryFast(RegisterToolRequestSchema, registerRequest(orderedSchema, "demo.twice"));
    const spec = early.spec as NonNullable<typeof early.spec>;
    const schema = spec.inputSchema as JsonObject;
    keepForOneMoreCopy(spec.inputSchema);
    keepForOneMoreCopy(undefined);
    const encode = () => toBinaryFast(ToolSpecSchema, spec);
    const first = encode();
    expect(hasKeptBytes(schema), "kept after the answer's copy").to.equal(true);
    expect(Buffer.from(encode()).equals(Buffer.from(first)), "the next encoding copies them").to.equal(true);
    expect(hasKeptBytes(schema), "let go at the second copy").to.equal(false);
    expect(Buffer.from(encode()).equals(Buffer.from(first)), "the one after, encoded anew").to.equal(true);
  });

  it("lets the packer copy the bytes of a registered spec's schemas after its answer did", () => {
    const registry = new ToolRegistry("echoes", { packSpecsAbove: 1 });
    // The second tool makes the registry's packer (from its spec and the first's).
    for (const name of ["demo.first", "demo.second"]) {
      registry.register({ spec: create(ToolSpecSchema, { name, inputSchema: { type: "object" } }) });
    }
    const decoded = fromBinaryFast(RegisterToolRequestSchema, registerRequest(orderedSchema, "demo.packed"));
    const registered = registry.register({ spec: decoded.spec as NonNullable<typeof decoded.spec>, owned: true });
    const schema = registered.spec.inputSchema as JsonObject;
    const answered = toBinaryFast(ToolSpecSchema, registered.spec);
    expect(contains(answered, orderedSchema), "the answer").to.equal(true);
    expect(hasKeptBytes(schema), "kept for the packer").to.equal(true);
    registry.packPending();
    const entry = registry.get("demo.packed") as RegistryEntry;
    expect(entry.packed).to.equal(true);
    expect(hasKeptBytes(schema), "the packer took its copy").to.equal(false);
    // Unpacked, the spec is decoded from what the packer wrote, and answers the same bytes.
    expect(
      Buffer.from(toBinaryFast(ToolSpecSchema, entry.spec)).equals(Buffer.from(answered)),
      "the packed bytes",
    ).to.equal(true);
  });

  it("lets go at the first copy the bytes of a spec not queued for packing (a registry too small to pack)", () => {
    const registry = new ToolRegistry("small", { packSpecsAbove: Infinity });
    const decoded = fromBinaryFast(RegisterToolRequestSchema, registerRequest(orderedSchema, "demo.small"));
    const registered = registry.register({ spec: decoded.spec as NonNullable<typeof decoded.spec>, owned: true });
    const schema = registered.spec.inputSchema as JsonObject;
    expect(hasKeptBytes(schema), "kept until the answer").to.equal(true);
    expect(contains(toBinaryFast(ToolSpecSchema, registered.spec), orderedSchema), "the answer").to.equal(true);
    expect(hasKeptBytes(schema), "let go at its copy").to.equal(false);
  });
});
