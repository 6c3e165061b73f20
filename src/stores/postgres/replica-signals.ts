/**
 * Facts the lease keeper's thread and the main thread share through one SharedArrayBuffer, so that
 * each reads the other's latest without a message: the thread keeps them current while the main
 * thread's event loop may be busy (a handler that blocks it does not stop the lease), and the main
 * thread reads them at no cost on every call.
 */
export class ReplicaSignals {
  readonly buffer: SharedArrayBuffer;
  readonly #slots: Float64Array;

  /** New signals, or a view of `buffer` made by another thread's signals. */
  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(Slot.count * 8)) {
    this.buffer = buffer;
    this.#slots = new Float64Array(buffer);
  }

  /**
   * Until when (this process's clock, ms since the epoch) this replica's lease surely holds: the
   * time its last successful renewal was sent plus the lease. 0 before the first renewal.
   */
  get leaseValidUntil(): number {
    return this.#get(Slot.leaseValidUntil);
  }
  set leaseValidUntil(ms: number) {
    this.#set(Slot.leaseValidUntil, ms);
  }

  /** How many times the thread found the lease expired and took a new one (its runs may be gone). */
  get leaseLosses(): number {
    return this.#get(Slot.leaseLosses);
  }
  set leaseLosses(count: number) {
    this.#set(Slot.leaseLosses, count);
  }

  /** The database's clock minus this process's, in milliseconds, as last measured (0 until then). */
  get clockOffsetMs(): number {
    return this.#get(Slot.clockOffsetMs);
  }
  set clockOffsetMs(ms: number) {
    this.#set(Slot.clockOffsetMs, ms);
  }

  /** When the store last answered the thread's own connection (ms since the epoch; 0: never). */
  get storeAnsweredAt(): number {
    return this.#get(Slot.storeAnsweredAt);
  }
  set storeAnsweredAt(ms: number) {
    this.#set(Slot.storeAnsweredAt, ms);
  }

  /** When the main thread's event loop last ran its beat (ms since the epoch). */
  get mainBeatAt(): number {
    return this.#get(Slot.mainBeatAt);
  }
  set mainBeatAt(ms: number) {
    this.#set(Slot.mainBeatAt, ms);
  }

  // A Float64Array's elements are read and written whole on every platform Node runs on (8-byte
  // aligned), and each slot has one writer, so no Atomics are needed.
  #get(slot: Slot): number {
    return this.#slots[slot] as number;
  }
  #set(slot: Slot, value: number): void {
    this.#slots[slot] = value;
  }
}

const enum Slot {
  leaseValidUntil,
  leaseLosses,
  clockOffsetMs,
  storeAnsweredAt,
  mainBeatAt,
  count,
}
