import { create, fromBinary, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { expect } from "chai";
import { RegisterToolRequestSchema, RegisterToolResponseSchema } from "../../gen/toolruntime/v1/registry_pb.js";
import { ExecuteToolRequestSchema } from "../../gen/toolruntime/v1/runner_pb.js";
import { ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { fromBinaryFast } from "../../src/codec/fast-binary-decode.js";
import { toBinaryFast } from "../../src/codec/fast-binary.js";
import { echoesStructFields } from "../../src/codec/struct-echo.js";
import { encodeStruct } from "../../src/codec/struct-binary.js";
import "../../src/registry/registry-entry.js";
import { validateSpec } from "../../src/registry/validate-spec.js";
import { randomJson, seededRandom } from "./random-messages.js";

// Wire pieces, by hand: a field's tag, then its length when it is length-delimited.
const delimited = (tag: number, content: readonly number[]): number[] => [tag, content.length, ...content];
const text = (value: string): number[] => [...Buffer.from(value)];
/** A Struct entry (fields = 1) of `key` with a Value holding the string `value` (string_value = 3). */
const stringEntry = (key: string, value: string): number[] =>
  delimited(0x0a, [...delimited(0x0a, text(key)), ...delimited(0x12, delimited(0x1a, text(value)))]);
/** An unknown varint field (number 9) inside a Struct: valid protobuf that the JSON form drops. */
const unknownField = [0x48, 0x07];
/** A RegisterToolRequest whose spec (field 2) has name (1) and, as input_schema (5), `schema`'s bytes. */
const registerRequest = (schema: readonly number[], name = "demo.echo"): Uint8Array =>
  Uint8Array.from(delimited(0x12, [...delimited(0x0a, text(name)), ...delimited(0x2a, [...schema])]));

/** Decodes a RegisterToolRequest as the server does, validates its spec, and encodes the response. */
function answer(request: Uint8Array): { bytes: Uint8Array; schema: JsonObject | undefined } {
  const decoded = fromBinaryFast(RegisterToolRequestSchema, request);
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

  it("copies the schema's bytes as read: an unknown field inside it comes back, and the spec decodes the same", () => {
    const schema = [...stringEntry("type", "object"), ...unknownField, ...stringEntry("title", "t")];
    const { bytes, schema: kept } = answer(registerRequest(schema));
    expect(kept).to.deep.equal({ type: "object", title: "t" });
    expect(contains(bytes, schema), "the schema's bytes, unknown field included").to.equal(true);
    const echoed = fromBinary(RegisterToolResponseSchema, bytes);
    expect(echoed.spec?.inputSchema).to.deep.equal({ type: "object", title: "t" });
    expect(echoed.spec?.name).to.equal("demo.echo");
  });

  it("encodes anew a schema whose bytes say less than the JSON read from them (an entry without a value)", () => {
    // {"type": "object", "default": <no value>}: the entry reads as "default": null, which the bytes do not hold.
    const schema = [
      ...stringEntry("type", "object"),
      ...delimited(0x0a, delimited(0x0a, text("default"))),
      ...unknownField,
    ];
    const { bytes, schema: kept } = answer(registerRequest(schema));
    expect(kept).to.deep.equal({ type: "object", default: null });
    expect(contains(bytes, unknownField), "not the bytes as read").to.equal(false);
    expect(contains(bytes, [...encodeStruct({ type: "object", default: null })])).to.equal(true);
  });

  it("encodes anew a schema holding a Value without a kind (read as null)", () => {
    const emptyValue = delimited(0x0a, [...delimited(0x0a, text("default")), ...delimited(0x12, [])]);
    const { bytes, schema } = answer(
      registerRequest([...stringEntry("type", "object"), ...emptyValue, ...unknownField]),
    );
    expect(schema).to.deep.equal({ type: "object", default: null });
    expect(contains(bytes, unknownField)).to.equal(false);
    expect(contains(bytes, [...encodeStruct({ type: "object", default: null })])).to.equal(true);
  });

  it("encodes anew a schema sent in two parts (the second merges into the first)", () => {
    const first = [...stringEntry("type", "object"), ...unknownField];
    const second = stringEntry("title", "second");
    const request = Uint8Array.from(
      delimited(0x12, [...delimited(0x0a, text("demo.twice")), ...delimited(0x2a, first), ...delimited(0x2a, second)]),
    );
    const { bytes, schema } = answer(request);
    expect(schema).to.deep.equal({ type: "object", title: "second" });
    expect(contains(bytes, unknownField)).to.equal(false);
    expect(fromBinary(RegisterToolResponseSchema, bytes).spec?.inputSchema).to.deep.equal(schema);
  });

  it("keeps nothing for other messages' Struct fields (a run's inputs)", () => {
    const inputs = [...stringEntry("k", "v"), ...unknownField];
    const request = fromBinaryFast(ExecuteToolRequestSchema, Uint8Array.from(delimited(0x1a, inputs)));
    expect(request.inputs).to.deep.equal({ k: "v" });
    expect(contains(toBinaryFast(ExecuteToolRequestSchema, request), unknownField)).to.equal(false);
  });

  it("keeps only the latest schemas: an early one is encoded anew once hundreds more were read", () => {
    const schema = [...stringEntry("type", "object"), ...unknownField];
    const early = fromBinaryFast(RegisterToolRequestSchema, registerRequest(schema, "demo.early"));
    const encodeEarly = () => toBinaryFast(ToolSpecSchema, early.spec as NonNullable<typeof early.spec>);
    expect(contains(encodeEarly(), unknownField), "kept while it is recent").to.equal(true);
    for (let index = 0; index < 300; index++) {
      fromBinaryFast(RegisterToolRequestSchema, registerRequest(stringEntry("type", "object"), `demo.t${index}`));
    }
    expect(contains(encodeEarly(), unknownField), "forgotten").to.equal(false);
    expect(fromBinary(ToolSpecSchema, encodeEarly()).inputSchema).to.deep.equal({ type: "object" });
  });
});
