/**
 * A single-consumer queue that turns pushed items into an async iterable. An item for which
 * `replaces(queued, next)` holds takes the place of the newest queued item instead of growing the
 * queue, so a producer that reports faster than the consumer reads (progress) cannot grow memory.
 */
export class EventQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #ended = false;
  #wake: (() => void) | undefined;

  /** @param replaces whether `next` may replace `queued`, the newest item not yet read */
  constructor(private readonly replaces: (queued: T, next: T) => boolean = () => false) {}

  /** Number of items waiting to be read. */
  get length(): number {
    return this.#items.length;
  }

  /** Adds an item; ignored once the queue has ended. */
  push(item: T): void {
    if (this.#ended) return;
    const last = this.#items[this.#items.length - 1];
    if (last !== undefined && this.replaces(last, item)) this.#items[this.#items.length - 1] = item;
    else this.#items.push(item);
    this.#signal();
  }

  /** Ends the queue: the iteration finishes after the items already queued. */
  end(): void {
    this.#ended = true;
    this.#signal();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #signal(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
