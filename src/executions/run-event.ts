import { create, isMessage } from "@bufbuild/protobuf";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import type { EventBody } from "./execution-record.js";

/** The message of each case of RunEvent's `event`. */
const bodySchemas = new Map(
  RunEventSchema.fields.flatMap((field) =>
    field.oneof && field.fieldKind === "message" ? [[field.localName, field.message] as const] : [],
  ),
);

/**
 * A RunEvent as `create` makes it, written as literals: `create` initialises a message field by
 * field through reflection, and a run builds half a dozen events; the literal is several times
 * cheaper and half the memory a retained record holds per event. Only the body, which callers give
 * as an init, is made by `create`.
 */
export function runEvent(sequence: number, timeMs: number, executionId: string, body: EventBody): RunEvent {
  const schema = body.case === undefined ? undefined : bodySchemas.get(body.case);
  const value = body.value as object;
  const event = schema
    ? { case: body.case, value: isMessage(value, schema) ? value : create(schema, value as never) }
    : { case: undefined };
  return {
    $typeName: "toolruntime.v1.RunEvent",
    sequence: BigInt(sequence),
    time: {
      $typeName: "google.protobuf.Timestamp",
      seconds: BigInt(Math.floor(timeMs / 1000)),
      nanos: (timeMs % 1000) * 1_000_000,
    },
    executionId,
    event: event as RunEvent["event"],
  };
}
