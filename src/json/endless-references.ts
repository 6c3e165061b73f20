import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  descendingArrayKeywords,
  descendingKeywords,
  descendingMapKeywords,
  sameValueArrayKeywords,
  sameValueKeywords,
  sameValueMapKeywords,
} from "./schema-keywords.js";

/**
 * The `$ref` that closes a loop of subschemas applied to one and the same value, or undefined
 * when there is none: `{"$ref": "#"}`, `{"allOf": [{"$ref": "#"}]}`, `$defs` entries that refer
 * to each other. ajv compiles some of these, and then checking any value recurses until the stack
 * overflows (or its compiler does): such a schema can check nothing, so it is refused when it is
 * registered. A loop through a keyword that descends into the value (`properties`, `items`…) ends
 * with the value, and is how recursive structures are described. Only references within the
 * document by JSON pointer ("#", "#/$defs/a") are followed; others are left to the compiler.
 */
export function findEndlessReference(root: JsonObject): string | undefined {
  // Most schemas refer to nothing: one look at their keys settles it. References resolved against
  // base URIs or anchors (`$id`, `$anchor`, `$dynamicRef`) are not followed here: such a loop is
  // left to the compiled check, which reports a value it cannot check as a problem.
  if (!holdsOnlyLocalReferences(root)) return undefined;
  /** Schemas on the path of same-value steps being followed (1), or done with (2). */
  const state = new Map<JsonObject, 1 | 2>();
  /** Schemas reached by descending, each to be followed in turn as the start of a path. */
  const starts: JsonObject[] = [root];
  const queued = new Set<JsonObject>([root]);

  const queue = (value: JsonValue | undefined): void => {
    if (isObject(value) && !queued.has(value)) {
      queued.add(value);
      starts.push(value);
    }
  };
  /** Follows the same-value steps from `schema`; returns the `$ref` that closes a loop. */
  const follow = (schema: JsonObject): string | undefined => {
    state.set(schema, 1);
    const next: [JsonValue | undefined, string | undefined][] = [];
    for (const key of Object.keys(schema)) {
      const value = schema[key];
      if (key === "$ref" && typeof value === "string") next.push([resolve(root, value), value]);
      else if (sameValueKeywords.has(key)) next.push([value, undefined]);
      else if (sameValueArrayKeywords.has(key) && Array.isArray(value))
        for (const item of value) next.push([item, undefined]);
      else if (sameValueMapKeywords.has(key) && isObject(value))
        for (const item of Object.values(value)) next.push([item, undefined]);
      else if (descendingKeywords.has(key)) queue(value);
      else if (descendingArrayKeywords.has(key) && Array.isArray(value)) value.forEach(queue);
      else if (descendingMapKeywords.has(key) && isObject(value)) Object.values(value).forEach(queue);
    }
    for (const [target, reference] of next) {
      if (!isObject(target)) continue;
      const seen = state.get(target);
      // A loop made of same-value steps only: the last step that closes it names it, or the
      // first reference on it when the last is a plain keyword.
      if (seen === 1) return reference ?? "#";
      if (seen === undefined) {
        const found = follow(target);
        if (found !== undefined) return reference ?? found;
      }
    }
    state.set(schema, 2);
    return undefined;
  };

  for (let index = 0; index < starts.length; index++) {
    const start = starts[index] as JsonObject;
    if (state.get(start) === 2) continue;
    const found = follow(start);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Keys that give a schema a base URI or an anchor, which {@link resolve} does not model. */
const scopingKeys = new Set(["$id", "$anchor", "$dynamicAnchor", "$dynamicRef"]);

/** Whether `value` holds a `$ref` and nothing that scopes references otherwise. */
function holdsOnlyLocalReferences(value: JsonValue): boolean {
  let found = false;
  const pending: JsonValue[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (Array.isArray(next)) {
      for (const item of next) if (typeof item === "object" && item !== null) pending.push(item);
      continue;
    }
    if (!isObject(next)) continue;
    for (const key of Object.keys(next)) {
      // "$" first: one comparison for most keys.
      if (key.charCodeAt(0) === 0x24) {
        if (key === "$ref") found = true;
        else if (scopingKeys.has(key)) return false;
      }
      const child = next[key];
      if (typeof child === "object" && child !== null) pending.push(child);
    }
  }
  return found;
}

/** The value a local JSON pointer reference ("#", "#/a/0") names in `root`, or undefined. */
function resolve(root: JsonObject, reference: string): JsonValue | undefined {
  if (reference === "#" || reference === "#/") return root;
  if (!reference.startsWith("#/")) return undefined;
  let target: JsonValue | undefined = root;
  for (const part of reference.slice(2).split("/")) {
    let key: string;
    try {
      key = decodeURIComponent(part).replaceAll("~1", "/").replaceAll("~0", "~");
    } catch {
      return undefined;
    }
    if (Array.isArray(target)) target = /^(?:0|[1-9]\d*)$/.test(key) ? target[Number(key)] : undefined;
    else if (isObject(target) && Object.prototype.hasOwnProperty.call(target, key)) target = target[key];
    else return undefined;
    if (target === undefined) return undefined;
  }
  return target;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
