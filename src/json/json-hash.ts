/**
 * Hashing JSON values for equality as ajv's deep equality (`fast-deep-equal`) has it, for JSON
 * values: numbers by `===` (so 0 and -0 are equal), arrays in order, objects whatever the order of
 * their keys. A hash finds the values that may be equal in time linear in their size, where
 * comparing every pair takes time quadratic in their number; {@link jsonEquals} settles each
 * candidate. The hash is seeded at random per process, so that no one can pick values that collide.
 */

/** A value's hash, and its size: 1 per value it holds, itself included, plus 1 per 8 characters of its strings and names. */
export interface HashedJson {
  readonly hash: number;
  readonly size: number;
}

const seed = (Math.random() * 0x1_0000_0000) >>> 0;
const numberBits = new Float64Array(1);
const numberWords = new Int32Array(numberBits.buffer);

/** Hashes `value`; undefined once its size passes `maxSize` (a value larger than all others equals none of them). */
export function hashJson(value: unknown, maxSize = Number.POSITIVE_INFINITY): HashedJson | undefined {
  const state = { size: 0, maxSize };
  const hash = hashValue(value, state);
  return hash === undefined ? undefined : { hash, size: state.size };
}

interface HashState {
  size: number;
  readonly maxSize: number;
}

function hashValue(value: unknown, state: HashState): number | undefined {
  if (++state.size > state.maxSize) return undefined;
  switch (typeof value) {
    case "string":
      state.size += value.length >> 3;
      return state.size > state.maxSize ? undefined : mix(hashString(value, seed) ^ 0x1);
    case "number": {
      // -0 and 0 are equal, and hash alike.
      if (value === 0) return mix(seed ^ 0x2);
      numberBits[0] = value;
      return mix(Math.imul((numberWords[0] as number) ^ seed, 0x01000193) ^ (numberWords[1] as number) ^ 0x2);
    }
    case "boolean":
      return mix(seed ^ (value ? 0x3 : 0x4));
    case "undefined":
      return mix(seed ^ 0x5);
    case "object": {
      if (value === null) return mix(seed ^ 0x6);
      if (Array.isArray(value)) {
        let hash = seed ^ 0x7;
        for (let index = 0; index < value.length; index++) {
          const item = hashValue(value[index], state);
          if (item === undefined) return undefined;
          hash = mix(Math.imul(hash, 31) + item);
        }
        return mix(hash ^ value.length);
      }
      // Entries are summed: the order of the keys does not change the sum.
      let sum = 0;
      let count = 0;
      const object = value as Record<string, unknown>;
      for (const key in object) {
        state.size += 1 + (key.length >> 3);
        const item = hashValue(object[key], state);
        if (item === undefined) return undefined;
        sum = (sum + mix(hashString(key, seed) ^ Math.imul(item, 0x9e3779b1))) | 0;
        count++;
      }
      return mix(sum ^ Math.imul(count, 0x85ebca6b) ^ 0x8);
    }
    default:
      return mix(seed ^ 0x9);
  }
}

/** FNV-1a over UTF-16 code units. */
function hashString(text: string, start: number): number {
  let hash = start ^ 0x811c9dc5;
  for (let index = 0; index < text.length; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  return hash;
}

/** MurmurHash3's final mix: every bit of the input moves every bit of the output. */
function mix(value: number): number {
  let hash = value ^ (value >>> 16);
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) >>> 0;
}

/** Whether two JSON values are deep-equal as ajv finds them. */
export function jsonEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let index = 0; index < a.length; index++) if (!jsonEquals(a[index], b[index])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(right, key) || !jsonEquals(left[key], right[key])) return false;
  }
  return true;
}
