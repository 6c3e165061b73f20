import type { JsonValue } from "@bufbuild/protobuf";
import { defineTool } from "./define-tool.js";

/** `builtin.json_pointer`: picks values out of a JSON document by RFC 6901 pointers. */
export const jsonPointerTool = defineTool({
  name: "builtin.json_pointer",
  description:
    'Picks values out of "document" with RFC 6901 JSON pointers: "pointers" maps output names to pointers such as "/items/0/id". Returns {"values": {name: value}} and {"missing": [names]} for pointers that match nothing.',
  toolType: "function",
  capabilities: { readOnly: true, idempotent: true },
  inputSchema: {
    type: "object",
    required: ["document", "pointers"],
    properties: {
      document: {},
      pointers: { type: "object", additionalProperties: { type: "string", pattern: "^(/.*)?$" } },
    },
    additionalProperties: false,
  },
  handler: (inputs) => {
    const values: Record<string, JsonValue> = {};
    const missing: string[] = [];
    for (const [name, pointer] of Object.entries(inputs["pointers"] as Record<string, string>)) {
      const found = resolvePointer(inputs["document"] as JsonValue, pointer);
      if (found === undefined) missing.push(name);
      else Object.defineProperty(values, name, { value: found, enumerable: true });
    }
    return { values, missing };
  },
});

/** Resolves an RFC 6901 pointer in `document`; undefined when it matches nothing. */
export function resolvePointer(document: JsonValue, pointer: string): JsonValue | undefined {
  if (pointer === "") return document;
  let current: JsonValue | undefined = document;
  for (const raw of pointer.slice(1).split("/")) {
    const token = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (typeof current === "object" && current !== null && Object.hasOwn(current, token)) {
      current = current[token];
    } else {
      return undefined;
    }
    if (current === undefined) return undefined;
  }
  return current;
}
