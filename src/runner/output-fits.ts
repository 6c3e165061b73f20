import type { JsonValue } from "@bufbuild/protobuf";
import { valueFieldsSize } from "../codec/struct-binary.js";
import { outputChunkLimits } from "../json/check-json.js";

/**
 * Room a result leaves for what travels with its output (metadata, error, ids, the event or
 * record around it): 64 KiB, or an eighth of a smaller message limit.
 */
export function roomForOutput(maxMessageBytes: number): number {
  return maxMessageBytes - Math.min(64 * 1024, Math.floor(maxMessageBytes / 8));
}

/**
 * A Struct or Value's protobuf form is at most this many times its compact JSON text, plus a few
 * bytes: a list of one-digit numbers (`0,` is 2 bytes, its item 11), the worst case. Below the
 * bound the exact size need not be counted.
 */
const protobufPerJsonByte = 6;

/**
 * Why `value` (already checked as JSON, `jsonBytes` of compact text) cannot travel in a message
 * of `maxBytes`, or undefined when it fits. Both forms count: the JSON text (Connect's JSON, the
 * MCP gateway) and the protobuf (gRPC), which can be several times larger; without this check an
 * output within the JSON limit made a response over the message limit, and the caller got the
 * transport's RESOURCE_EXHAUSTED instead of a result.
 */
export function sizeProblem(label: string, value: JsonValue, jsonBytes: number, maxBytes: number): string | undefined {
  if (jsonBytes > maxBytes)
    return `${label} is larger than the limit of ${maxBytes} bytes (${jsonBytes} bytes of JSON)`;
  if (jsonBytes * protobufPerJsonByte + 16 <= maxBytes) return undefined;
  const encoded = valueFieldsSize(value);
  return encoded > maxBytes
    ? `${label} is larger than the limit of ${maxBytes} bytes once encoded as protobuf (${encoded} bytes)`
    : undefined;
}

/**
 * Why a partial output chunk (already checked as JSON, `jsonBytes` of text) cannot travel, or
 * undefined: within {@link outputChunkLimits} and the room a message of `maxMessageBytes` leaves,
 * in both forms.
 */
export function chunkSizeProblem(chunk: JsonValue, jsonBytes: number, maxMessageBytes: number): string | undefined {
  const limit = Math.min(outputChunkLimits.maxBytes, roomForOutput(maxMessageBytes));
  return sizeProblem("output chunk", chunk, jsonBytes, limit);
}
