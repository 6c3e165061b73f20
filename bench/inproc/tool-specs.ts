import { create, type JsonObject } from "@bufbuild/protobuf";
import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { seededRandom, shuffled } from "../lib/seeded-random.js";

const verbs = ["read", "write", "list", "search", "fetch", "update", "delete", "sync", "scan", "render"];
const nouns = ["file", "issue", "record", "page", "invoice", "ticket", "image", "report", "user", "event"];
const kinds = ["string", "integer", "number", "boolean"] as const;

function property(random: () => number, name: string, index: number): JsonObject {
  const kind = kinds[Math.floor(random() * kinds.length)] ?? "string";
  const description = `The ${name} of the request (#${index}); see the tool's documentation for details.`;
  switch (kind) {
    case "string":
      return { type: "string", description, minLength: 1, maxLength: 64 + Math.floor(random() * 1000) };
    case "integer":
      return { type: "integer", description, minimum: 0, maximum: 1000 + Math.floor(random() * 100_000) };
    case "number":
      return { type: "number", description, exclusiveMinimum: 0, multipleOf: 0.5 };
    case "boolean":
      return { type: "boolean", description, default: random() < 0.5 };
  }
}

/**
 * The input JSON Schema of tool number `index`: an object of 5 to 7 typed, described properties,
 * one of them an enum, about 1 KiB of JSON, and different for every index.
 */
export function inputSchemaFor(index: number): JsonObject {
  const random = seededRandom(index + 1);
  const properties: Record<string, JsonObject> = {};
  const count = 4 + Math.floor(random() * 3);
  for (let p = 0; p < count; p++) {
    const name = `${nouns[(index + p) % nouns.length] ?? "field"}_${p}_${index % 97}`;
    properties[name] = property(random, name, index);
  }
  properties["mode"] = {
    type: "string",
    description: "How thoroughly to work: quick answers sooner, thorough looks further.",
    enum: ["quick", "normal", "thorough", `custom_${index % 13}`],
  };
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    title: `Inputs of tool ${index}`,
    properties,
    required: Object.keys(properties).slice(0, 2),
    additionalProperties: false,
  };
}

/** The namespaced name of tool number `index`, e.g. "ns042.read_file_17": 256 namespaces. */
export function toolNameFor(index: number): string {
  const verb = verbs[index % verbs.length] ?? "run";
  const noun = nouns[Math.floor(index / verbs.length) % nouns.length] ?? "thing";
  return `ns${String(index % 256).padStart(3, "0")}.${verb}_${noun}_${index}`;
}

/** A realistic ToolSpec for tool number `index`, with a ~1 KiB input schema unlike any other. */
export function toolSpecFor(index: number): ToolSpec {
  return create(ToolSpecSchema, {
    name: toolNameFor(index),
    description: `Tool ${index}: ${verbs[index % verbs.length] ?? "run"}s things for the benchmark's registry.`,
    toolType: index % 3 === 0 ? "http" : "function",
    capabilities: { readOnly: index % 2 === 0, idempotent: index % 4 === 0 },
    inputSchema: inputSchemaFor(index),
    defaultTimeoutMs: 1000 * (1 + (index % 60)),
  });
}

/** The indices 0 … count-1 in a shuffled but repeatable order, the order tools are registered in. */
export function shuffledIndices(count: number, seed = 7): number[] {
  return shuffled(
    Array.from({ length: count }, (_, index) => index),
    seededRandom(seed),
  );
}
