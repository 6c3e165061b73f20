import { performance } from "node:perf_hooks";

/** Something whose memory can be made smaller later (see RegistryEntry.pack). */
export interface Packable {
  /** Does the work; returns whether there was any. */
  pack(): boolean;
}

/** How long registrations must pause before packing starts, in milliseconds. */
const quietMs = 200;
/** Longest slice of packing in one turn of the event loop, in milliseconds. */
const sliceMs = 4;

/**
 * Packs specs after a burst of registrations rather than in it: a spec costs tens of microseconds
 * to pack (zlib's setup per call is most of it), a quarter of a registration's time. Entries wait
 * here, unpacked, until no registration came for {@link quietMs}; they are then packed in slices of
 * at most {@link sliceMs}, each in its own turn, so calls arriving meanwhile wait no longer than a
 * slice. The timers never keep the process alive.
 */
export class BackgroundPacking {
  #queue: (Packable | undefined)[] = [];
  #head = 0;
  #lastAddedAt = 0;
  #timer: NodeJS.Timeout | undefined;

  /** Entries waiting to be packed. */
  get pending(): number {
    return this.#queue.length - this.#head;
  }

  add(entry: Packable): void {
    this.#queue.push(entry);
    this.#lastAddedAt = performance.now();
    this.#timer ??= setTimeout(this.#run, quietMs).unref();
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
