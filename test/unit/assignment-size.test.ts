import { create, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { expect } from "chai";
import { ConnectResponseSchema } from "../../gen/toolruntime/v1/provider_pb.js";
import { assignmentSize, type AssignmentFields } from "../../src/providers/assignment-size.js";

/** The size protobuf-es gives the same assignment, encoded. */
function encodedSize(fields: AssignmentFields): number {
  return toBinary(ConnectResponseSchema, create(ConnectResponseSchema, { message: { case: "assign", value: fields } }))
    .length;
}

describe("assignmentSize()", () => {
  const inputsCases: [string, JsonObject][] = [
    ["empty inputs", {}],
    ["small inputs", { text: "héllo", n: 1.5, ok: true, none: null }],
    ["nested lists and objects", { a: [1, [2, { b: "c" }], []], d: { e: { f: "g".repeat(300) } } }],
    ["a long list of numbers", { list: new Array<number>(20_000).fill(1) }],
    ["keys and strings past 127 bytes", { ["k".repeat(200)]: "v".repeat(70_000) }],
  ];
  for (const [label, inputs] of inputsCases) {
    it(`is the encoded size, byte for byte, for ${label}`, () => {
      for (const deadline of [timestampFromDate(new Date()), timestampFromMs(5000), timestampFromMs(0)]) {
        const fields = {
          executionId: "0b7c6f1e-5d4a-4f39-9a51-2d7f0e4c8b11",
          toolName: "remote.echo",
          inputs,
          deadline,
        };
        expect(assignmentSize(fields)).to.equal(encodedSize(fields));
      }
    });
  }
});
