import { didYouMean } from "../errors/did-you-mean.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import type { CheckpointHooks } from "../registry/tool-definition.js";
import type { ToolCapabilityFlags, ToolDefinitionInit } from "./define-tool.js";

/** What each key of a definition holds; `satisfies` keeps the lists equal to the interfaces. */
const definitionKeys = {
  name: "string",
  description: "string",
  toolType: "string",
  capabilities: "object",
  inputSchema: "object",
  outputSchema: "object",
  defaultTimeoutMs: "count",
  maxTimeoutMs: "count",
  maxConcurrency: "count",
  handler: "function",
  hooks: "object",
} as const satisfies Record<keyof ToolDefinitionInit, KeyKind>;

const capabilityKeys = {
  readOnly: "boolean",
  writes: "boolean",
  checkpointable: "boolean",
  idempotent: "boolean",
  unsafe: "boolean",
  humanApprovalRequired: "boolean",
} as const satisfies Record<keyof ToolCapabilityFlags, KeyKind>;

const hookKeys = {
  checkpoint: "function",
  rollback: "function",
} as const satisfies Record<keyof CheckpointHooks, KeyKind>;

type KeyKind = "string" | "object" | "count" | "function" | "boolean";

const kindRules: Record<KeyKind, { readonly accepts: (value: unknown) => boolean; readonly use: string }> = {
  string: { accepts: (value) => typeof value === "string", use: "a string" },
  object: {
    accepts: (value) => typeof value === "object" && value !== null && !Array.isArray(value),
    use: "an object",
  },
  count: {
    accepts: (value) => typeof value === "number" && Number.isSafeInteger(value) && value >= 0,
    use: "a whole number, 0 or more",
  },
  function: { accepts: (value) => typeof value === "function", use: "a function" },
  boolean: { accepts: (value) => typeof value === "boolean", use: "true or false" },
};

/**
 * Checks the keys of a tool definition given to `defineTool` (or exported by a `--tools` module),
 * and of its `capabilities` and `hooks`: every key must be one the definition knows, holding a
 * value of the right kind (`undefined` counts as absent). Throws INVALID_ARGUMENT
 * ("RegistrationError") listing every problem, with the nearest known key for a misspelt one
 * (`input_schema` → `inputSchema`, `readonly` → `readOnly`).
 */
export function checkDefinitionKeys(definition: object): void {
  const name = (definition as { name?: unknown }).name;
  const subject = typeof name === "string" ? `tool ${quote(name)}` : "the tool definition";
  const problems = checkKeys(definition, definitionKeys, "");
  const { capabilities, hooks } = definition as { capabilities?: unknown; hooks?: unknown };
  if (kindRules.object.accepts(capabilities)) {
    problems.push(...checkKeys(capabilities as object, capabilityKeys, "capabilities."));
  }
  if (kindRules.object.accepts(hooks)) problems.push(...checkKeys(hooks as object, hookKeys, "hooks."));
  if (problems.length > 0) {
    throw new ToolRuntimeError(
      "INVALID_ARGUMENT",
      ErrorType.Registration,
      `${subject} ${problems.join("; ")}`,
      typeof name === "string" ? name : "",
    );
  }
}

function checkKeys(value: object, known: Readonly<Record<string, KeyKind>>, prefix: string): string[] {
  const problems: string[] = [];
  const names = Object.keys(known);
  for (const key of Object.keys(value)) {
    const entry = (value as Record<string, unknown>)[key];
    const kind = Object.hasOwn(known, key) ? known[key] : undefined;
    if (kind === undefined) {
      const hint = didYouMean(key, names);
      problems.push(
        `has the unknown key ${quote(prefix + key)}${hint || `: use ${names.map((n) => JSON.stringify(prefix + n)).join(", ")}`}`,
      );
    } else if (entry !== undefined && !kindRules[kind].accepts(entry)) {
      problems.push(`has ${quote(prefix + key)} = ${describeValue(entry)}: use ${kindRules[kind].use}`);
    }
  }
  return problems;
}

function describeValue(value: unknown): string {
  if (typeof value === "function") return "a function";
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "symbol") return value.toString();
  const text = JSON.stringify(value) ?? "undefined";
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
