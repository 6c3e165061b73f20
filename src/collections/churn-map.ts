/**
 * A Map for entries that come and go all the time (the streams of an HTTP/2 session), which hands
 * its entries to a fresh Map after every so many deletions, so that no Map lives long under churn.
 *
 * Why: when a V8 Map grows or drops its deleted entries it moves them to a new table and links the
 * old table to the new one, for iterators that may still walk the old one; the old table keeps the
 * entries it had. Once a Map's table is in the old generation (a full collection moves every live
 * young object there), its next such move leaves a dead old table pointing at a young one. The
 * young collector takes old-to-young pointers as roots without asking whether their holder is
 * alive, so that young table survives, is promoted, and points at the next: a chain that keeps
 * every entry the Map ever held alive, and copies it twice, until the next full collection. With
 * the streams of a session, that is every call's objects: measured on a no-op ExecuteTool, each
 * young collection copied 7-10 MB instead of 1 MB and took 10-20 ms instead of 3-4.
 *
 * A fresh Map starts young and is replaced before many of its tables can pile up, so a chain
 * holds at most one Map's worth of entries. Renewing costs a copy of the live entries every
 * `max(64, 2 × size)` deletions: at most half a `set` per deletion.
 */
export class ChurnMap<K, V> {
  #entries = new Map<K, V>();
  #deletionsSinceRenewal = 0;
  /** Iterations in progress: the Map they walk is not replaced under them. */
  #iterating = 0;

  constructor(entries?: Iterable<readonly [K, V]>) {
    if (entries) for (const [key, value] of entries) this.#entries.set(key, value);
  }

  get size(): number {
    return this.#entries.size;
  }

  get [Symbol.toStringTag](): string {
    return "ChurnMap";
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  set(key: K, value: V): this {
    this.#entries.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    if (!this.#entries.delete(key)) return false;
    this.#deletionsSinceRenewal += 1;
    if (this.#iterating === 0 && this.#deletionsSinceRenewal >= Math.max(64, 2 * this.#entries.size)) this.#renew();
    return true;
  }

  clear(): void {
    this.#entries = new Map();
    this.#deletionsSinceRenewal = 0;
  }

  forEach(callback: (value: V, key: K, map: ChurnMap<K, V>) => void, thisArg?: unknown): void {
    this.#iterating += 1;
    try {
      this.#entries.forEach((value, key) => callback.call(thisArg, value, key, this));
    } finally {
      this.#iterating -= 1;
    }
  }

  /** Iterates as a Map does; an iterator left unfinished keeps the Map from being renewed. */
  entries(): IterableIterator<[K, V]> {
    return this.#walk(this.#entries.entries());
  }

  keys(): IterableIterator<K> {
    return this.#walk(this.#entries.keys());
  }

  values(): IterableIterator<V> {
    return this.#walk(this.#entries.values());
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries();
  }

  /**
   * The current Map's own iterator, with renewal held off until it is done (or returned). A plain
   * object rather than a generator: listing 10,000 retained runs through a generator took 12 times
   * as long as through the Map's iterator.
   */
  #walk<T>(iterator: IterableIterator<T>): IterableIterator<T> {
    this.#iterating += 1;
    let open = true;
    const release = (): void => {
      if (open) {
        open = false;
        this.#iterating -= 1;
      }
    };
    return {
      next(): IteratorResult<T> {
        const step = iterator.next();
        if (step.done === true) release();
        return step;
      },
      return(): IteratorResult<T> {
        release();
        return { done: true, value: undefined };
      },
      [Symbol.iterator]() {
        return this;
      },
    };
  }

  /** Moves the entries to a fresh Map; the old one is dropped whole, with no link to the new. */
  #renew(): void {
    this.#entries = new Map(this.#entries);
    this.#deletionsSinceRenewal = 0;
  }
}
