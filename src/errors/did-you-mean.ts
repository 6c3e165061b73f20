import leven from "leven";

/**
 * The candidate an author most likely meant by `input`, or undefined when none is close: first one
 * that differs only in case, "_" or "-" (`input_schema` → `inputSchema`, `readonly` → `readOnly`),
 * else the nearest by edit distance: at most 1 for names under 4 characters, else at most 2 or a
 * third of the length, whichever is more (`requried` → `required`, `cuont` → `count`). Names
 * longer than 256 characters are only compared up to case, "_" and "-": an edit distance takes
 * time in the product of the lengths, and an input can be long.
 */
export function suggestName(input: string, candidates: Iterable<string>): string | undefined {
  const normalized = normalize(input);
  const lowered = input.toLowerCase();
  let best: string | undefined;
  let bestDistance = (input.length < 4 ? 1 : Math.max(2, Math.floor(input.length / 3))) + 1;
  for (const candidate of candidates) {
    if (candidate === input) continue;
    if (normalize(candidate) === normalized) return candidate;
    const other = candidate.toLowerCase();
    // The distance is at least the difference in length: no need to compute it past that.
    if (Math.abs(other.length - lowered.length) >= bestDistance) continue;
    if (lowered.length > maxComparedLength || other.length > maxComparedLength) continue;
    const distance = leven(lowered, other);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** `: did you mean "x"?` for the nearest candidate, or "" when none is close. */
export function didYouMean(input: string, candidates: Iterable<string>): string {
  const suggestion = suggestName(input, candidates);
  return suggestion === undefined ? "" : `: did you mean ${JSON.stringify(suggestion)}?`;
}

/** Longest name compared by edit distance, in UTF-16 code units. */
const maxComparedLength = 256;

function normalize(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, "");
}
