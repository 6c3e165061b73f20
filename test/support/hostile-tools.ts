// Tools whose input schemas pass registration but whose checks a hostile input makes costly: the
// bounded-validation wire test serves them through a provider, bench/hostile-inputs.ts loads them
// with --tools.
import type { JsonObject } from "@bufbuild/protobuf";
import { defineTool } from "../../src/tools/define-tool.js";

/** Definitions l0 … l{levels}, each applying the next twice under `keyword`. */
export function doublingChain(keyword: "anyOf" | "allOf", levels: number, last: JsonObject): JsonObject {
  const $defs: JsonObject = {};
  for (let level = 0; level < levels; level++) {
    const next = `#/$defs/l${level + 1}`;
    $defs[`l${level}`] = { [keyword]: [{ $ref: next }, { $ref: next }] };
  }
  $defs[`l${levels}`] = last;
  return $defs;
}

/** Tools a provider places, whose schemas pass registration but whose checks a hostile input makes costly. */
export const hostileTools = [
  defineTool({
    name: "hostile.contains",
    description: "Its inputs.a must contain one of 500 constants.",
    inputSchema: {
      type: "object",
      properties: {
        a: { type: "array", contains: { anyOf: Array.from({ length: 500 }, (_, i) => ({ const: `v${i}` })) } },
      },
    },
    handler: () => ({ ok: true }),
  }),
  defineTool({
    name: "hostile.enum",
    description: "Its inputs.a holds values of an enum of 10,000.",
    inputSchema: {
      type: "object",
      properties: { a: { type: "array", items: { enum: Array.from({ length: 10_000 }, (_, i) => i) } } },
    },
    handler: () => ({ ok: true }),
  }),
  defineTool({
    name: "hostile.unique",
    description: "Its inputs.a holds distinct values, of no declared type.",
    inputSchema: { type: "object", properties: { a: { type: "array", uniqueItems: true } } },
    handler: () => ({ ok: true }),
  }),
  defineTool({
    name: "hostile.nested",
    description: "Its inputs.a must contain a string, or an array that holds only such values.",
    inputSchema: {
      type: "object",
      properties: { a: { type: "array", contains: { $ref: "#/$defs/x" } } },
      $defs: { x: { anyOf: [{ type: "string" }, { type: "array", items: { $ref: "#/$defs/x" } }] } },
    },
    handler: () => ({ ok: true }),
  }),
];
