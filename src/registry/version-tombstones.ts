/**
 * The last versions of registries that were reclaimed, by name, at most `capacity` of them. When a
 * name is forgotten to stay within the bound, its version still raises a floor that every later
 * registry starts from, so versions under any one name only ever grow.
 */
export class VersionTombstones {
  readonly #versions = new Map<string, bigint>();
  #floor = 0n;

  /** @param capacity most names remembered */
  constructor(readonly capacity: number) {}

  /** Whether a reclaimed registry of that name is remembered. */
  has(name: string): boolean {
    return this.#versions.has(name);
  }

  /** Remembers that the registry `name` ended at `version`; forgets the oldest name past capacity. */
  put(name: string, version: bigint): void {
    this.#versions.delete(name);
    this.#versions.set(name, version);
    for (const [oldest, oldestVersion] of this.#versions) {
      if (this.#versions.size <= this.capacity) break;
      this.#versions.delete(oldest);
      if (oldestVersion > this.#floor) this.#floor = oldestVersion;
    }
  }

  /** The version a new registry of that name starts at, forgetting the name's tombstone. */
  take(name: string): bigint {
    const version = this.#versions.get(name);
    this.#versions.delete(name);
    return version ?? this.#floor;
  }
}
