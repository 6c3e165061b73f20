import { isMessage, type DescMessage } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { toBinaryFast } from "../codec/fast-binary.js";
import { utf8Length, varintSize } from "../codec/binary-out.js";
import { flatWriterFor, writeString, writeVarint } from "./flat-message-writer.js";

/**
 * A streamed run sends a handful of small events per run (DISCOVERED, ACTIVATED, EXECUTION_STARTED…),
 * and protobuf-es spent more on the frame around each event (the response, the RunEvent, its
 * Timestamp: a writer forked and joined per nested message) than on the event's body. Here the
 * frame is written directly, sizes first, into one buffer, with a body of a few scalars written in
 * place (flat-message-writer.ts); other bodies (a spec, a result) are encoded by protobuf-es
 * through toBinaryFast. The bytes are those that encoding the whole response with toBinaryFast writes.
 */

/** Encodes one response message of a stream to its protobuf bytes. */
export type ResponseEncoder = (response: unknown) => Buffer;

// RunEvent: sequence = 1 (uint64), time = 2 (Timestamp), execution_id = 3 (string), then the
// oneof `event`, fields 4 and up. Timestamp: seconds = 1 (int64), nanos = 2 (int32).
const tagSequence = (1 << 3) | WireType.Varint;
const tagTime = (2 << 3) | WireType.LengthDelimited;
const tagExecutionId = (3 << 3) | WireType.LengthDelimited;
const tagSeconds = (1 << 3) | WireType.Varint;
const tagNanos = (2 << 3) | WireType.Varint;
/** The response's `RunEvent event = 1`. */
const tagEvent = (1 << 3) | WireType.LengthDelimited;

/** Each case of RunEvent's oneof: its field number's tag, its message, and its flat writer if any. */
const bodyFields = new Map(
  RunEventSchema.fields.flatMap((field) =>
    field.oneof && field.fieldKind === "message"
      ? [
          [
            field.localName,
            {
              tag: (field.number << 3) | WireType.LengthDelimited,
              schema: field.message,
              flat: flatWriterFor(field.message),
            },
          ] as const,
        ]
      : [],
  ),
);

const empty = Buffer.alloc(0);

/**
 * An encoder for the responses of `schema` when it is a response that holds one run event and
 * nothing else (`RunEvent event = 1`: RunToolResponse, WatchExecutionResponse); undefined for any
 * other schema. A response it cannot write directly (an event that is not a RunEvent message, or
 * one carrying unknown fields or values out of the usual range) is encoded by `fallback`.
 */
export function eventResponseEncoder(schema: DescMessage, fallback: ResponseEncoder): ResponseEncoder | undefined {
  const field = schema.fields[0];
  const holdsOneEvent =
    schema.fields.length === 1 &&
    field?.number === 1 &&
    field.fieldKind === "message" &&
    field.message.typeName === RunEventSchema.typeName;
  if (!holdsOneEvent) return undefined;
  return (response) => {
    // A message (or an init with unknown fields) may carry more than its event: protobuf-es writes it.
    if (isMessage(response) || Object.hasOwn(response as object, "$unknown")) return fallback(response);
    const event = (response as { event?: unknown }).event;
    if (event === undefined) return empty;
    return isPlainEvent(event) ? encodeEventField(event) : fallback(response);
  };
}

/** Whether the frame of `event` can be written here: a RunEvent without unknown fields, in range. */
function isPlainEvent(event: unknown): event is RunEvent {
  if (!isMessage(event, RunEventSchema) || event.$unknown?.length) return false;
  const time = event.time;
  if (time && (time.$unknown?.length || time.seconds < 0n || time.seconds > maxSafe || time.nanos < 0)) return false;
  return event.sequence <= maxSafe;
}

const maxSafe = BigInt(Number.MAX_SAFE_INTEGER);

/** `event` as field 1 of a response: its tag, its length, and the RunEvent's fields. */
function encodeEventField(event: RunEvent): Buffer {
  const sequence = Number(event.sequence);
  const time = event.time;
  const seconds = time ? Number(time.seconds) : 0;
  const nanos = time?.nanos ?? 0;
  const executionId = event.executionId;
  const oneof = event.event;
  const bodyField = oneof.case === undefined ? undefined : bodyFields.get(oneof.case);
  // A body of a few scalars is written in place (see flat-message-writer.ts); others by protobuf-es.
  const flatSize = bodyField?.flat ? bodyField.flat.size(oneof.value as object) : -1;
  const body = bodyField && flatSize < 0 ? toBinaryFast(bodyField.schema, oneof.value as object) : undefined;
  const bodySize = flatSize >= 0 ? flatSize : (body?.length ?? 0);

  const timeSize = (seconds === 0 ? 0 : 1 + varintSize(seconds)) + (nanos === 0 ? 0 : 1 + varintSize(nanos));
  const idSize = utf8Length(executionId);
  const eventSize =
    (sequence === 0 ? 0 : 1 + varintSize(sequence)) +
    (time ? 1 + varintSize(timeSize) + timeSize : 0) +
    (idSize === 0 ? 0 : 1 + varintSize(idSize) + idSize) +
    (bodyField ? varintSize(bodyField.tag) + varintSize(bodySize) + bodySize : 0);

  const out = Buffer.allocUnsafe(1 + varintSize(eventSize) + eventSize);
  let at = 0;
  out[at++] = tagEvent;
  at = writeVarint(out, at, eventSize);
  if (sequence !== 0) {
    out[at++] = tagSequence;
    at = writeVarint(out, at, sequence);
  }
  if (time) {
    out[at++] = tagTime;
    at = writeVarint(out, at, timeSize);
    if (seconds !== 0) {
      out[at++] = tagSeconds;
      at = writeVarint(out, at, seconds);
    }
    if (nanos !== 0) {
      out[at++] = tagNanos;
      at = writeVarint(out, at, nanos);
    }
  }
  if (idSize !== 0) {
    out[at++] = tagExecutionId;
    at = writeString(out, at, executionId);
  }
  if (bodyField) {
    at = writeVarint(out, at, bodyField.tag);
    at = writeVarint(out, at, bodySize);
    if (body) out.set(body, at);
    else bodyField.flat?.write(oneof.value as object, out, at);
  }
  return out;
}
