/** One stretch of a {@link FifoIndex}: items in arrival order and where each id is among them. */
interface Chunk<T> {
  /** Items in arrival order; a removed item's slot is undefined. */
  readonly items: (T | undefined)[];
  /** Each id's position in `items` (removed ones stay until the chunk goes). */
  readonly positions: Map<string, number>;
  /** Position of the oldest item not removed. */
  head: number;
}

/**
 * Items that arrive one after another, are found by id, and leave oldest first: the finished
 * records a retention bound keeps.
 *
 * One Map of every item, as the execution store had, costs a large table two accesses per item
 * that miss the processor's caches: each item is inserted into a table of thousands (10,000
 * retained runs by default) and, thousands of items later, deleted from it, when its bucket, its
 * entry and its key string are long out of cache. With a no-op run per call, those two accesses
 * were the largest cost the server added to a call (about 2 µs of some 45 per call, by `perf`).
 *
 * Here items are held in chunks of at most `chunkSize`, each with a Map from id to position. An
 * item goes into the newest chunk, whose Map is small and recently used; removing the oldest item
 * moves its chunk's head and clears its slot, and a chunk whose items are all removed is dropped
 * whole: no Map entry is ever deleted. A lookup tries the chunks newest first. A removed item is
 * released at once; only its id stays in its chunk's Map until the chunk goes (at most
 * `chunkSize` ids).
 */
export class FifoIndex<T extends { readonly id: string }> {
  readonly #chunkSize: number;
  /** Oldest chunk first. */
  #chunks: Chunk<T>[] = [];
  #size = 0;

  constructor(chunkSize: number) {
    if (!Number.isSafeInteger(chunkSize) || chunkSize < 1)
      throw new RangeError(`chunk size ${chunkSize} is not a positive integer`);
    this.#chunkSize = chunkSize;
  }

  /** Items held (arrived and not removed). */
  get size(): number {
    return this.#size;
  }

  /** Adds `item` as the newest. */
  push(item: T): void {
    let newest = this.#chunks[this.#chunks.length - 1];
    if (!newest || newest.items.length === this.#chunkSize) {
      newest = { items: [], positions: new Map(), head: 0 };
      this.#chunks.push(newest);
    }
    newest.positions.set(item.id, newest.items.length);
    newest.items.push(item);
    this.#size += 1;
  }

  /** The oldest item held, or undefined when none is. */
  oldest(): T | undefined {
    const chunk = this.#chunks[0];
    return chunk === undefined ? undefined : chunk.items[chunk.head];
  }

  /** Removes the oldest item and returns it; undefined when none is held. */
  shift(): T | undefined {
    const chunk = this.#chunks[0];
    if (chunk === undefined) return undefined;
    const item = chunk.items[chunk.head];
    chunk.items[chunk.head] = undefined;
    chunk.head += 1;
    this.#size -= 1;
    if (chunk.head === chunk.items.length) this.#chunks.shift();
    return item;
  }

  /** The item of that id, or undefined when none held has it. With two of one id, the newer. */
  get(id: string): T | undefined {
    for (let index = this.#chunks.length - 1; index >= 0; index--) {
      const chunk = this.#chunks[index] as Chunk<T>;
      const position = chunk.positions.get(id);
      // Items leave oldest first: when the newest item of this id has left, so have older ones.
      if (position !== undefined) return chunk.items[position];
    }
    return undefined;
  }

  /** The items held, oldest first. */
  values(): T[] {
    const values: T[] = [];
    for (const chunk of this.#chunks) {
      for (let position = chunk.head; position < chunk.items.length; position++)
        values.push(chunk.items[position] as T);
    }
    return values;
  }
}
