import { firstRangeReaching, type NameRange } from "./name-ranges.js";

/** Most names in one chunk; a fuller chunk is split in two. */
const maxChunkLength = 512;

/**
 * A set of strings kept in ascending (UTF-16 code unit) order, so that a page of names starting
 * anywhere is found by binary search: listing cost does not grow with the number of names. The
 * names are held in chunks of at most 512, so that adding or removing one moves at most a chunk's
 * worth of entries (one sorted array of 100,000 names moved 50,000 on average, tens of
 * microseconds per registration).
 */
export class SortedNames {
  /** Non-empty sorted chunks; every name of a chunk is less than every name of the next. */
  #chunks: string[][] = [];
  #size = 0;

  /** Number of names held. */
  get size(): number {
    return this.#size;
  }

  /** Adds `name`; does nothing when it is already present. */
  add(name: string): void {
    if (this.#chunks.length === 0) {
      this.#chunks.push([name]);
      this.#size = 1;
      return;
    }
    // Past the last chunk's last name, the name goes at the end of the last chunk.
    const chunkIndex = Math.min(this.#chunkFor(name), this.#chunks.length - 1);
    const chunk = this.#chunks[chunkIndex] as string[];
    const index = lowerBound(chunk, name);
    if (chunk[index] === name) return;
    chunk.splice(index, 0, name);
    this.#size++;
    if (chunk.length > maxChunkLength) this.#chunks.splice(chunkIndex + 1, 0, chunk.splice(maxChunkLength >> 1));
  }

  /** Removes `name`; does nothing when it is absent. */
  delete(name: string): void {
    const chunkIndex = this.#chunkFor(name);
    const chunk = this.#chunks[chunkIndex];
    if (!chunk) return;
    const index = lowerBound(chunk, name);
    if (chunk[index] !== name) return;
    chunk.splice(index, 1);
    this.#size--;
    if (chunk.length === 0) this.#chunks.splice(chunkIndex, 1);
  }

  /** Removes every name. */
  clear(): void {
    this.#chunks = [];
    this.#size = 0;
  }

  /** The names not less than `start`, in order ("" for all of them). */
  *from(start: string): Generator<string> {
    let chunkIndex = this.#chunkFor(start);
    const first = this.#chunks[chunkIndex];
    if (!first) return;
    for (let index = lowerBound(first, start); index < first.length; index++) yield first[index] as string;
    for (chunkIndex++; chunkIndex < this.#chunks.length; chunkIndex++) yield* this.#chunks[chunkIndex] as string[];
  }

  /**
   * The names in `ranges` (normalized, see normalizeRanges) not less than `start`, in order. Each
   * range is found by binary search, so names outside the ranges are never visited.
   */
  *within(ranges: readonly NameRange[], start: string): Generator<string> {
    for (let index = firstRangeReaching(ranges, start); index < ranges.length; index++) {
      const range = ranges[index] as NameRange;
      for (const name of this.from(range.from > start ? range.from : start)) {
        if (range.to !== undefined && name >= range.to) break;
        yield name;
      }
    }
  }

  /** Index of the first chunk whose last name is not less than `name`; the chunk count when none is. */
  #chunkFor(name: string): number {
    let low = 0;
    let high = this.#chunks.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const chunk = this.#chunks[middle] as string[];
      if ((chunk[chunk.length - 1] as string) < name) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

/** Index of the first name of `names` (sorted) that is not less than `name`. */
function lowerBound(names: readonly string[], name: string): number {
  let low = 0;
  let high = names.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((names[middle] as string) < name) low = middle + 1;
    else high = middle;
  }
  return low;
}
