import { ChurnMap } from "./churn-map.js";

/**
 * A Set for members that come and go all the time (the calls in flight), kept in a
 * {@link ChurnMap} so that it does not keep its former members alive through the young
 * collections: see churn-map.ts for why a long-lived Set under churn does.
 */
export class ChurnSet<T> {
  readonly #members = new ChurnMap<T, true>();

  constructor(members?: Iterable<T>) {
    if (members) for (const member of members) this.#members.set(member, true);
  }

  get size(): number {
    return this.#members.size;
  }

  get [Symbol.toStringTag](): string {
    return "ChurnSet";
  }

  has(member: T): boolean {
    return this.#members.has(member);
  }

  add(member: T): this {
    this.#members.set(member, true);
    return this;
  }

  delete(member: T): boolean {
    return this.#members.delete(member);
  }

  clear(): void {
    this.#members.clear();
  }

  forEach(callback: (member: T, again: T, set: ChurnSet<T>) => void, thisArg?: unknown): void {
    this.#members.forEach((_, member) => callback.call(thisArg, member, member, this));
  }

  /** Iterates as a Set does; an iterator left unfinished keeps the set from being renewed. */
  values(): IterableIterator<T> {
    return this.#members.keys();
  }

  [Symbol.iterator](): IterableIterator<T> {
    return this.#members.keys();
  }
}
