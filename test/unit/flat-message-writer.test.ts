import { create, ScalarType, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { expect } from "chai";
import { RunEventSchema } from "../../gen/toolruntime/v1/run_event_pb.js";
import { ToolSpecSchema } from "../../gen/toolruntime/v1/tool_pb.js";
import { flatWriterFor } from "../../src/server/flat-message-writer.js";

/** The bodies of run events, by case. */
const bodies = new Map(
  RunEventSchema.fields.flatMap((field) =>
    field.oneof && field.fieldKind === "message" ? [[field.localName, field.message] as const] : [],
  ),
);

/** Values of each kind that protobuf-es treats differently: zeros, -0, long varints, UTF-8, long text. */
const samples: Partial<Record<ScalarType, readonly unknown[]>> = {
  [ScalarType.STRING]: ["", "a", "builtin.noop", "ünïcödé 🙂", "x".repeat(200)],
  [ScalarType.BOOL]: [false, true],
  [ScalarType.UINT32]: [0, 1, 127, 128, 16_384, 2 ** 32 - 1],
  [ScalarType.INT32]: [0, 1, 300, 2 ** 31 - 1],
  [ScalarType.DOUBLE]: [0, -0, 1.5, -2.25, Number.NaN, Number.POSITIVE_INFINITY, 1e300],
};

/** Every combination would be large: each field takes each of its samples once, the others their first. */
function variants(schema: DescMessage): object[] {
  const inits: Record<string, unknown>[] = [{}];
  for (const field of schema.fields) {
    if (field.fieldKind !== "scalar") continue;
    for (const value of samples[field.scalar] ?? []) inits.push({ [field.localName]: value });
  }
  const all: Record<string, unknown> = {};
  for (const field of schema.fields) {
    if (field.fieldKind === "scalar") all[field.localName] = (samples[field.scalar] ?? []).at(-1);
  }
  inits.push(all);
  return inits.map((init) => create(schema, init as never));
}

function written(schema: DescMessage, message: object): Buffer | undefined {
  const writer = flatWriterFor(schema);
  const size = writer?.size(message) ?? -1;
  if (!writer || size < 0) return undefined;
  const out = Buffer.alloc(size);
  expect(writer.write(message, out, 0)).to.equal(size);
  return out;
}

describe("flatWriterFor()", () => {
  it("writes the small bodies of run events, and not those with lists, oneofs or nested specs", () => {
    const flat = [...bodies].filter(([, schema]) => flatWriterFor(schema)).map(([name]) => name);
    expect(flat).to.include.members(["activated", "executionStarted", "executionFinished", "deactivated"]);
    expect(flat).to.not.include.members(["discovered"]);
    expect(flat).to.not.include.members(["completed"]);
    expect(flatWriterFor(ToolSpecSchema)).to.equal(undefined);
  });

  it("writes every flat body byte for byte as protobuf-es does, zero values left out, -0 and NaN kept", () => {
    let checked = 0;
    for (const [name, schema] of bodies) {
      if (!flatWriterFor(schema)) continue;
      for (const message of variants(schema)) {
        const bytes = written(schema, message);
        if (!bytes) continue;
        expect(
          bytes.equals(Buffer.from(toBinary(schema, message as never))),
          `${name} ${JSON.stringify(message)}`,
        ).to.equal(true);
        checked += 1;
      }
    }
    expect(checked).to.be.above(20);
  });

  it("declines a message it does not write: a negative int32, a nested message set, unknown fields", () => {
    const finished = bodies.get("executionFinished")!;
    expect(written(finished, create(finished, { success: true, error: { details: "x" } }))).to.equal(undefined);
    const withUnknown = create(bodies.get("deactivated")!, { wasActive: true });
    withUnknown.$unknown = [{ no: 9, wireType: 0, data: new Uint8Array([1]) }];
    expect(written(bodies.get("deactivated")!, withUnknown)).to.equal(undefined);
    const int32Body = [...bodies.values()].find((schema) =>
      schema.fields.some((field) => field.fieldKind === "scalar" && field.scalar === ScalarType.INT32),
    );
    if (int32Body && flatWriterFor(int32Body)) {
      const field = int32Body.fields.find((f) => f.fieldKind === "scalar" && f.scalar === ScalarType.INT32)!;
      expect(written(int32Body, create(int32Body, { [field.localName]: -1 }))).to.equal(undefined);
    }
  });
});
