import crypto from "node:crypto";

/**
 * SHA-256 (hex) of a text: the one-shot `crypto.hash` (Node 20.12 and later), which makes no Hash
 * object (StartExecution answers with a digest for every run), else a Hash.
 */
export const sha256Hex: (text: string) => string =
  typeof crypto.hash === "function"
    ? (text) => crypto.hash("sha256", text, "hex")
    : (text) => crypto.createHash("sha256").update(text).digest("hex");

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
  return sha256Hex(text);
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
