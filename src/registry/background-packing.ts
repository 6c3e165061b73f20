import { performance } from "node:perf_hooks";

/** Something whose memory can be made smaller later (see RegistryEntry.pack). */
export interface Packable {
  /** Does the work; returns whether there was any. */
  pack(): boolean;
}

/** How long registrations must pause before packing starts, in milliseconds. */
export const quietMs = 200;
/** Longest slice of packing in one turn of the event loop, in milliseconds. */
const sliceMs = 4;
/**
 * Most entries of one registry left unpacked while registrations go on: a guard on memory for the
 * longest imports, not a way to save work. Packing in a pause costs less in all than packing as
 * registrations come (20,000 registrations and the packing after them: 3.3–4.0 s of server CPU
 * with no bound, 3.9–5.0 s with a bound of 8,192, whose registrations past it ran at about 0.7×
 * the rate). An unpacked spec of a 1 KiB schema holds about 1.1 KB of heap more than its packed
 * form (twice that with the bytes its schemas were read from, kept for the packer: see
 * struct-echo.ts), so waiting costs a registry about 36–72 MB of heap at most; without a bound,
 * 100,000 registrations without a pause of {@link quietMs} held every spec unpacked (600 MB of RSS
 * at their end, against 223 MB once packed).
 */
export const defaultMaxPending = 32_768;

/**
 * Packs specs after a burst of registrations rather than in it: a spec costs tens of microseconds
 * to pack (zlib's setup per call is most of it), a quarter of a registration's time. Entries wait
 * here, unpacked, until no registration came for {@link quietMs}; they are then packed in slices of
 * at most {@link sliceMs}, each in its own turn, so calls arriving meanwhile wait no longer than a
 * slice, and packing stops at the end of a slice when a registration came meanwhile (it waits for
 * the next pause). Registrations that never pause pack too, one entry each once more than
 * `maxPending` wait: memory stays bounded, at the price of a pack per registration past the bound.
 * The timers never keep the process alive.
 */
export class BackgroundPacking {
  readonly #maxPending: number;
  #queue: (Packable | undefined)[] = [];
  #head = 0;
  #lastAddedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Set while {@link refill} runs: nothing is packed at once. */
  #refilling = false;

  /** @param maxPending most entries left waiting; each add beyond packs the oldest at once */
  constructor(maxPending = defaultMaxPending) {
    // At least one waits: a spec packed before its registration is answered would be unpacked again
    // by the first watcher's event or read of it.
    if (!(maxPending >= 1)) throw new RangeError(`maxPending is ${maxPending}: it must be 1 or more`);
    this.#maxPending = maxPending;
  }

  /** Entries waiting to be packed. */
  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /** Slots of the queue, the packed ones not yet dropped included (for tests of its compaction). */
  get slots(): number {
    return this.#queue.length;
  }

  /** Queues an entry. Past the bound, the oldest waiting entry is packed at once (but see {@link refill}). */
  add(entry: Packable): void {
    this.#queue.push(entry);
    this.#lastAddedAt = performance.now();
    if (!this.#refilling && this.#queue.length - this.#head > this.#maxPending) this.#packNext();
    // The packed head is dropped once it is half the queue, so that a queue that never empties
    // (registrations that never pause) does not grow.
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    this.#timer ??= setTimeout(this.#run, quietMs).unref();
  }

  /**
   * Forgets every entry waiting, then runs `fill`, whose adds pack nothing at once: a registry
   * reloaded wholesale queues every spec in one turn, where packing most of them at once would hold
   * the event loop for seconds (they are packed in the background).
   */
  refill(fill: () => void): void {
    this.clear();
    this.#refilling = true;
    try {
      fill();
    } finally {
      this.#refilling = false;
    }
  }

  /** Forgets every entry waiting (their registry let go of them), packing none. */
  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#reset();
  }

  /** Packs everything waiting, now. */
  drain(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#head < this.#queue.length) this.#packNext();
    this.#reset();
  }

  readonly #run = (): void => {
    this.#timer = undefined;
    const quietFor = performance.now() - this.#lastAddedAt;
    if (quietFor < quietMs) {
      this.#timer = setTimeout(this.#run, quietMs - quietFor).unref();
      return;
    }
    const sliceEnd = performance.now() + sliceMs;
    while (this.#head < this.#queue.length && performance.now() < sliceEnd) this.#packNext();
    // The next slice comes at once, or after the next pause if a registration came meanwhile.
    if (this.#head < this.#queue.length) this.#timer = setTimeout(this.#run, 0).unref();
    else this.#reset();
  };

  #packNext(): void {
    const entry = this.#queue[this.#head] as Packable;
    this.#queue[this.#head++] = undefined;
    entry.pack();
  }

  #reset(): void {
    this.#queue = [];
    this.#head = 0;
  }
}
