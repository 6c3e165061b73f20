/**
 * What the health port's thread reads of the main thread through one SharedArrayBuffer: whether
 * the server reports itself serving, and when its event loop last turned. The thread answers
 * probes from these without waiting for the main thread, so a flood that keeps the main event
 * loop busy does not delay them.
 */
export class HealthSignals {
  readonly buffer: SharedArrayBuffer;
  readonly #slots: Float64Array;

  /** New signals, or a view of `buffer` made by another thread's signals. */
  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(Slot.count * 8)) {
    this.buffer = buffer;
    this.#slots = new Float64Array(buffer);
  }

  /** Whether the server reports SERVING (ready); false before the start and once shutdown began. */
  get serving(): boolean {
    return this.#slots[Slot.serving] === 1;
  }
  set serving(serving: boolean) {
    this.#slots[Slot.serving] = serving ? 1 : 0;
  }

  /** When the main thread's event loop last ran its beat (ms since the epoch). */
  get mainBeatAt(): number {
    return this.#slots[Slot.mainBeatAt] as number;
  }
  set mainBeatAt(ms: number) {
    // A Float64Array's aligned element is written whole, and each slot has one writer: no Atomics.
    this.#slots[Slot.mainBeatAt] = ms;
  }
}

const enum Slot {
  serving,
  mainBeatAt,
  count,
}
