import type { JsonObject } from "@bufbuild/protobuf";

/** Bounds on a JSON value; see {@link checkJsonObject}. */
export interface JsonLimits {
  /** Deepest nesting of objects and arrays allowed; the top-level object is depth 1. Default 64. */
  readonly maxDepth: number;
  /** Largest size allowed, in bytes of its compact JSON text (strings counted without escapes). */
  readonly maxBytes: number;
}

/** The default {@link JsonLimits}: 64 levels and 4 MiB. */
export const defaultJsonLimits: JsonLimits = { maxDepth: 64, maxBytes: 4 * 1024 * 1024 };

/** Limits on one chunk of partial output: 64 levels and 1 MiB. */
export const outputChunkLimits: JsonLimits = { maxDepth: 64, maxBytes: 1024 * 1024 };

/** The outcome of {@link checkJsonObject}. */
export type JsonCheck =
  | { readonly ok: true; readonly value: JsonObject; readonly bytes: number }
  | { readonly ok: false; readonly problem: string };

/** The outcome of {@link measureJsonObject}. */
export type JsonMeasure =
  { readonly ok: true; readonly bytes: number } | { readonly ok: false; readonly problem: string };

class JsonProblem extends Error {}

/**
 * Checks that `value` is a plain JSON object that survives a round trip through JSON unchanged:
 * only plain objects, arrays, strings, finite numbers, booleans and null, no cycles, within `limits`.
 * Never throws, even for proxies or getters that throw. `label` names the value in messages
 * ("inputs", "output"). The value returned is a fresh copy, so later changes to the original (by a
 * handler that keeps running, say) cannot alter what was checked.
 */
export function checkJsonObject(value: unknown, label: string, limits: JsonLimits): JsonCheck {
  const walk = walkJsonObject(value, label, limits, true);
  return walk.ok ? { ok: true, value: walk.copy as JsonObject, bytes: walk.bytes } : walk;
}

/**
 * The checks of {@link checkJsonObject} with the same messages, without the copy: for a value that
 * is kept as it is (a tool's schema), where a copy would only be garbage. Never throws.
 */
export function measureJsonObject(value: unknown, label: string, limits: JsonLimits): JsonMeasure {
  const walk = walkJsonObject(value, label, limits, false);
  return walk.ok ? { ok: true, bytes: walk.bytes } : walk;
}

function walkJsonObject(
  value: unknown,
  label: string,
  limits: JsonLimits,
  copy: boolean,
): { ok: true; copy: unknown; bytes: number } | { ok: false; problem: string } {
  if (!isPlainObject(value)) {
    return { ok: false, problem: `${label} is ${describe(value)}: it must be a JSON object` };
  }
  try {
    const total = { bytes: 0, copy };
    const clone = copyJson(value, label, 1, limits, new Set(), total);
    return { ok: true, copy: clone, bytes: total.bytes };
  } catch (error) {
    if (error instanceof JsonProblem) return { ok: false, problem: error.message };
    if (error instanceof RangeError) {
      return { ok: false, problem: `${label} could not be checked: it is nested too deeply` };
    }
    return { ok: false, problem: `${label} could not be read: ${String(error)}` };
  }
}

/** The running size of a walk, and whether it copies what it walks. */
interface WalkTotal {
  bytes: number;
  readonly copy: boolean;
}

/**
 * Copies a JSON value (or only walks it, unless `total.copy`), adding its compact JSON size to
 * `total.bytes`; throws a JsonProblem naming the path of the first thing that is not JSON or
 * breaks a limit.
 */
function copyJson(
  value: unknown,
  path: string,
  depth: number,
  limits: JsonLimits,
  ancestors: Set<object>,
  total: WalkTotal,
): unknown {
  switch (typeof value) {
    case "string":
      total.bytes += Buffer.byteLength(value) + 2;
      break;
    case "boolean":
      total.bytes += value ? 4 : 5;
      break;
    case "number":
      if (!Number.isFinite(value)) {
        throw new JsonProblem(`${path} is ${String(value)}: JSON numbers must be finite`);
      }
      total.bytes += String(value).length;
      break;
    case "object":
      return value === null ? ((total.bytes += 4), null) : copyContainer(value, path, depth, limits, ancestors, total);
    default:
      throw new JsonProblem(`${path} is ${describe(value)}: it is not a JSON value`);
  }
  if (total.bytes > limits.maxBytes) throw tooLarge(path, limits);
  return value;
}

function copyContainer(
  value: object,
  path: string,
  depth: number,
  limits: JsonLimits,
  ancestors: Set<object>,
  total: WalkTotal,
): unknown {
  if (depth > limits.maxDepth) {
    throw new JsonProblem(`${path} is nested deeper than ${limits.maxDepth} levels`);
  }
  if (ancestors.has(value)) {
    throw new JsonProblem(`${path} is a reference to one of its ancestors: JSON cannot hold cycles`);
  }
  ancestors.add(value);
  total.bytes += 2;
  let copy: unknown;
  if (Array.isArray(value)) {
    const items: unknown[] | undefined = total.copy ? [] : undefined;
    for (let index = 0; index < value.length; index++) {
      total.bytes += 1;
      const item = copyJson(value[index], `${path}[${index}]`, depth + 1, limits, ancestors, total);
      items?.push(item);
    }
    copy = items;
    if (value.length > 0) total.bytes -= 1; // no comma after the last item
  } else if (isPlainObject(value)) {
    const fields: Record<string, unknown> | undefined = total.copy ? {} : undefined;
    const keys = Object.keys(value);
    for (const key of keys) {
      total.bytes += Buffer.byteLength(key) + 4;
      const child = copyJson(value[key], `${path}.${key}`, depth + 1, limits, ancestors, total);
      // defineProperty, not assignment: a key such as "__proto__" stays an ordinary field.
      if (fields)
        Object.defineProperty(fields, key, { value: child, enumerable: true, writable: true, configurable: true });
    }
    copy = fields;
    if (keys.length > 0) total.bytes -= 1;
  } else {
    throw new JsonProblem(`${path} is ${describe(value)}: only plain objects and arrays are JSON`);
  }
  ancestors.delete(value);
  return copy;
}

function tooLarge(path: string, limits: JsonLimits): JsonProblem {
  return new JsonProblem(`${path} is larger than the limit of ${limits.maxBytes} bytes`);
}

/** Whether `value` is an object whose prototype is Object.prototype or null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** A short description of a value's kind for error messages: "a BigInt", "undefined", "a Map". */
export function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "bigint":
      return "a BigInt";
    case "function":
      return "a function";
    case "symbol":
      return "a symbol";
    case "string":
      return "a string";
    case "number":
      return "a number";
    case "boolean":
      return "a boolean";
    default: {
      const constructorName = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } })?.constructor?.name;
      return typeof constructorName === "string" && constructorName !== "Object" ? `a ${constructorName}` : "an object";
    }
  }
}
