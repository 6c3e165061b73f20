import { createHash } from "node:crypto";

/**
 * SHA-256 (hex) of a JSON value's canonical text: object keys sorted, no whitespace. Two inputs
 * with the same content have the same digest whatever their key order. A value that is not JSON
 * (a cycle, say) gets the digest of the text "(not JSON)".
 */
export function inputsDigest(value: unknown): string {
  let text: string;
  try {
    text = canonicalJson(value, new Set());
  } catch {
    text = "(not JSON)";
  }
  return createHash("sha256").update(text).digest("hex");
}

function canonicalJson(value: unknown, ancestors: Set<object>): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value) ?? "null";
  if (ancestors.has(value)) throw new Error("cycle");
  ancestors.add(value);
  const text = Array.isArray(value)
    ? `[${value.map((item) => canonicalJson(item, ancestors)).join(",")}]`
    : `{${Object.keys(value)
        .sort()
        .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key], ancestors)}`)
        .join(",")}}`;
  ancestors.delete(value);
  return text;
}
