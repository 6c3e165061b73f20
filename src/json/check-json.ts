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
  const walk: Walk = { label, limits, copy, bytes: 0, trail: [], ancestors: [] };
  // Inside the try: a proxy's traps (getPrototypeOf, a revoked proxy's every operation) throw from
  // the first look at the value.
  try {
    if (!isPlainObject(value)) {
      return { ok: false, problem: `${label} is ${describe(value)}: it must be a JSON object` };
    }
    const clone = copyJson(value, 1, walk);
    return { ok: true, copy: clone, bytes: walk.bytes };
  } catch (error) {
    if (error instanceof JsonProblem) return { ok: false, problem: error.message };
    if (error instanceof RangeError) {
      return { ok: false, problem: `${label} could not be checked: it is nested too deeply` };
    }
    return { ok: false, problem: `${label} could not be read: ${textOf(error)}` };
  }
}

/** What a getter or trap threw, as text of at most 1,000 characters; never throws. */
function textOf(thrown: unknown): string {
  try {
    const text = String(thrown);
    return text.length > 1000 ? `${text.slice(0, 999)}…` : text;
  } catch {
    return "a value that cannot be described";
  }
}

/**
 * One walk: its running size, whether it copies what it walks, and where it is. The path of the
 * value being walked is kept as the keys and indexes leading to it, and written out only for a
 * message: building it as a string for every value cost more than the rest of the check.
 */
interface Walk {
  readonly label: string;
  readonly limits: JsonLimits;
  readonly copy: boolean;
  bytes: number;
  /** Keys (object fields) and indexes (array items) from the top to the value being walked. */
  readonly trail: (string | number)[];
  /** The containers from the top to the one being walked: a value among them is a cycle. */
  readonly ancestors: object[];
}

/** The path of the value being walked, as messages name it: `inputs.items[2].name`. */
function pathOf(walk: Walk): string {
  let path = walk.label;
  for (const step of walk.trail) path += typeof step === "number" ? `[${step}]` : `.${step}`;
  return path;
}

/**
 * Copies a JSON value (or only walks it, unless `walk.copy`), adding its compact JSON size to
 * `walk.bytes`; throws a JsonProblem naming the path of the first thing that is not JSON or
 * breaks a limit.
 */
function copyJson(value: unknown, depth: number, walk: Walk): unknown {
  switch (typeof value) {
    case "string":
      walk.bytes += Buffer.byteLength(value) + 2;
      break;
    case "boolean":
      walk.bytes += value ? 4 : 5;
      break;
    case "number":
      if (!Number.isFinite(value)) {
        throw new JsonProblem(`${pathOf(walk)} is ${String(value)}: JSON numbers must be finite`);
      }
      walk.bytes += numberTextLength(value);
      break;
    case "object":
      return value === null ? ((walk.bytes += 4), null) : copyContainer(value, depth, walk);
    default:
      throw new JsonProblem(`${pathOf(walk)} is ${describe(value)}: it is not a JSON value`);
  }
  if (walk.bytes > walk.limits.maxBytes) throw tooLarge(walk);
  return value;
}

function copyContainer(value: object, depth: number, walk: Walk): unknown {
  if (depth > walk.limits.maxDepth) {
    throw new JsonProblem(`${pathOf(walk)} is nested deeper than ${walk.limits.maxDepth} levels`);
  }
  // The ancestors are at most maxDepth containers, usually a few: a scan costs less than a Set.
  if (walk.ancestors.includes(value)) {
    throw new JsonProblem(`${pathOf(walk)} is a reference to one of its ancestors: JSON cannot hold cycles`);
  }
  walk.ancestors.push(value);
  walk.bytes += 2;
  let copy: unknown;
  const trail = walk.trail;
  if (Array.isArray(value)) {
    const items: unknown[] | undefined = walk.copy ? [] : undefined;
    for (let index = 0; index < value.length; index++) {
      walk.bytes += 1;
      trail.push(index);
      const item = copyJson(value[index], depth + 1, walk);
      trail.pop();
      items?.push(item);
    }
    copy = items;
    if (value.length > 0) walk.bytes -= 1; // no comma after the last item
  } else if (isPlainObject(value)) {
    const fields: Record<string, unknown> | undefined = walk.copy ? {} : undefined;
    const keys = Object.keys(value);
    for (const key of keys) {
      walk.bytes += Buffer.byteLength(key) + 4;
      trail.push(key);
      const child = copyJson(value[key], depth + 1, walk);
      trail.pop();
      if (fields) {
        // defineProperty for "__proto__", which assignment would take as the prototype.
        if (key === "__proto__") {
          Object.defineProperty(fields, key, { value: child, enumerable: true, writable: true, configurable: true });
        } else {
          fields[key] = child;
        }
      }
    }
    copy = fields;
    if (keys.length > 0) walk.bytes -= 1;
  } else {
    throw new JsonProblem(`${pathOf(walk)} is ${describe(value)}: only plain objects and arrays are JSON`);
  }
  walk.ancestors.pop();
  return copy;
}

/**
 * The length of a finite number's JSON text. Integers, most numbers in practice, are counted by
 * their digits; converting every number to a string only to measure it was a good part of a
 * check of numeric inputs.
 */
function numberTextLength(value: number): number {
  if (!Number.isSafeInteger(value)) return String(value).length;
  // -0 is written "0".
  let length = value < 0 ? 2 : 1;
  for (let rest = Math.abs(value); rest >= 10; rest = Math.floor(rest / 10)) length += 1;
  return length;
}

function tooLarge(walk: Walk): JsonProblem {
  return new JsonProblem(`${pathOf(walk)} is larger than the limit of ${walk.limits.maxBytes} bytes`);
}

/** Whether `value` is an object whose prototype is Object.prototype or null. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * A short description of a value's kind for error messages: "a BigInt", "undefined", "a Map".
 * Never throws: a proxy whose traps throw is "an object that cannot be inspected".
 */
export function describe(value: unknown): string {
  try {
    return describeKind(value);
  } catch {
    return "an object that cannot be inspected";
  }
}

function describeKind(value: unknown): string {
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
