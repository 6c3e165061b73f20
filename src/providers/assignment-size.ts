import type { JsonObject } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { delimitedSize, int64Size, utf8Length, varintSize } from "../codec/binary-out.js";
import { structFieldsSize } from "../codec/struct-binary.js";

/** The fields of a RunAssignment, as the hub sends them. */
export interface AssignmentFields {
  readonly executionId: string;
  readonly toolName: string;
  readonly inputs: JsonObject;
  readonly deadline: Timestamp;
}

/**
 * The bytes of the `ConnectResponse` that carries this assignment, as protobuf (what the provider
 * stream's message limit counts), without encoding it: one walk over the inputs. Inputs are
 * checked against the limit as JSON, but a Struct can be several times its JSON text (a list item
 * `1,` of 2 bytes takes 11), so inputs within the limit can make an assignment over it.
 */
export function assignmentSize(fields: AssignmentFields): number {
  const { seconds, nanos } = fields.deadline;
  const deadline = (seconds === 0n ? 0 : 1 + int64Size(seconds)) + (nanos === 0 ? 0 : 1 + varintSize(nanos));
  const assignment =
    stringFieldSize(fields.executionId) +
    stringFieldSize(fields.toolName) +
    delimitedSize(1, structFieldsSize(fields.inputs)) +
    delimitedSize(1, deadline);
  return delimitedSize(1, assignment);
}

/** A proto3 string field: absent when empty. */
function stringFieldSize(text: string): number {
  return text === "" ? 0 : delimitedSize(1, utf8Length(text));
}
