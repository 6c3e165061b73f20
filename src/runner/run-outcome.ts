import { create, type JsonObject } from "@bufbuild/protobuf";
import { ToolErrorSchema, ToolResultSchema, type ToolResult } from "../../gen/toolruntime/v1/tool_pb.js";
import type { DeclaredErrorType } from "./declared-failure.js";

/**
 * Builds a successful ToolResult: the message `create` makes, written as a literal (every run makes
 * one, and `create` initialises field by field through reflection).
 */
export function succeeded(output: JsonObject, durationMs: number, metadata: JsonObject): ToolResult {
  return { $typeName: "toolruntime.v1.ToolResult", success: true, output, durationMs, metadata };
}

/**
 * Builds a failed ToolResult whose error names the tool, the category (the runtime's, or one a
 * provider's handler declared) and the reason.
 */
export function failed(
  toolName: string,
  errorType: DeclaredErrorType,
  details: string,
  durationMs: number,
  metadata: JsonObject,
): ToolResult {
  return create(ToolResultSchema, {
    success: false,
    output: {},
    error: create(ToolErrorSchema, { toolName, errorType, details }),
    durationMs,
    metadata,
  });
}

/**
 * A readable account of anything a handler threw: an Error's message, or for other values their
 * kind and a JSON rendering. Never throws, even for values whose getters or toString throw.
 */
export function describeThrown(thrown: unknown): string {
  try {
    if (thrown instanceof Error) {
      const name = thrown.name && thrown.name !== "Error" ? `${thrown.name}: ` : "";
      // Cut like any other value: a message of megabytes would make the result larger than a
      // message may be, and the caller would get the transport's RESOURCE_EXHAUSTED instead.
      return cut(`${name}${thrown.message || "(no message)"}`);
    }
    if (typeof thrown === "string") return `threw a string: ${JSON.stringify(cut(thrown))}`;
    if (thrown === undefined) return "threw undefined";
    if (typeof thrown === "bigint") return `threw a BigInt: ${thrown}`;
    if (typeof thrown === "symbol" || typeof thrown === "function") return `threw a ${typeof thrown}`;
    return `threw a non-Error value: ${cut(JSON.stringify(thrown) ?? Object.prototype.toString.call(thrown))}`;
  } catch {
    return "threw a value that cannot be described";
  }
}

/** `text` cut to at most 1,000 characters. */
export function cut(text: string): string {
  return text.length > 1000 ? `${text.slice(0, 997)}...` : text;
}
