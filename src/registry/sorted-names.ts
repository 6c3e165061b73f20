/**
 * A set of strings kept in ascending (UTF-16 code unit) order, so that a page of names starting
 * anywhere is found by binary search: listing cost does not grow with the number of names.
 */
export class SortedNames {
  readonly #names: string[] = [];

  /** Number of names held. */
  get size(): number {
    return this.#names.length;
  }

  /** Adds `name`; does nothing when it is already present. */
  add(name: string): void {
    const index = this.lowerBound(name);
    if (this.#names[index] !== name) this.#names.splice(index, 0, name);
  }

  /** Removes `name`; does nothing when it is absent. */
  delete(name: string): void {
    const index = this.lowerBound(name);
    if (this.#names[index] === name) this.#names.splice(index, 1);
  }

  /** Removes every name. */
  clear(): void {
    this.#names.length = 0;
  }

  /** Index of the first name that is not less than `name`. */
  lowerBound(name: string): number {
    let low = 0;
    let high = this.#names.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.#names[middle] as string) < name) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Names from index `start` on, in order. */
  *from(start: number): Generator<string> {
    for (let index = start; index < this.#names.length; index++) yield this.#names[index] as string;
  }
}
