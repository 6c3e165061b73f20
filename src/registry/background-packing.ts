import { performance } from "node:perf_hooks";
import { specPackingWorker, type OffThreadPacker, type PackingJob } from "./spec-packing-worker.js";

/** Something whose memory can be made smaller later (see RegistryEntry.pack). */
export interface Packable {
  /** Does the work here, now; returns whether there was any. */
  pack(): boolean;
  /** What packing it elsewhere needs, or undefined when there is nothing to pack. */
  packingJob(): PackingJob | undefined;
  /** Takes the packed form made elsewhere from its job (nothing if it was packed meanwhile). */
  adoptPacked(packed: string): void;
}

/** Entries sent to the packing thread together; `current` until let go (drained, cleared, refused). */
interface Batch {
  readonly entries: Packable[];
  current: boolean;
}

/** How long registrations must pause before packing starts, in milliseconds. */
export const quietMs = 200;
/** Longest slice of packing on the event loop in one turn, in milliseconds (when there is no packing thread). */
const sliceMs = 4;
/** Entries in one batch for the packing thread: about 7 ms of its time, 1 ms of the event loop's (encoding them). */
export const batchSize = 256;
/** Batches at the packing thread at once; past them, an entry over the bound is packed on the event loop. */
export const maxBatchesInFlight = 4;
/**
 * Most entries of one registry left unpacked while registrations go on: a guard on memory for the
 * longest imports, not a way to save work. Packing in a pause costs less in all than packing as
 * registrations come (20,000 registrations and the packing after them: 3.3–4.0 s of server CPU
 * with no bound, 3.9–5.0 s with a bound of 8,192, whose registrations past it ran at about 0.7×
 * the rate when packing was on the event loop). An unpacked spec of a 1 KiB schema holds about
 * 1.1 KB of heap more than its packed form (twice that with the bytes its schemas were read from,
 * kept for the packer: see struct-echo.ts), so waiting costs a registry about 36–72 MB of heap at
 * most; without a bound, 100,000 registrations without a pause of {@link quietMs} held every spec
 * unpacked (600 MB of RSS at their end, against 223 MB once packed).
 */
export const defaultMaxPending = 32_768;

/**
 * Packs specs after a burst of registrations rather than in it, on the packing thread (see
 * SpecPackingWorker): a spec costs tens of microseconds to pack (zlib's setup per call is most of
 * it), a quarter of a registration's time. Entries wait here, unpacked, until no registration came
 * for {@link quietMs}; they then go to the thread in batches, and the next batch goes when one comes
 * back and registrations are still paused (else after the next pause). Registrations that never
 * pause pack too: once more than `maxPending` wait, the oldest {@link batchSize} go to the thread,
 * so that memory stays bounded (at most `maxPending` waiting here and {@link maxBatchesInFlight}
 * batches there, batches let go by {@link clear} or {@link drain} included until the thread answers
 * them); should the thread fall that far behind, the oldest are packed at once here. A batch the
 * thread refuses waits here again, in its place; once the thread failed for good, everything is
 * packed here.
 *
 * With no packing thread (none given, or it failed), packing is done here: in slices of at most
 * {@link sliceMs}, each in its own turn, so calls arriving meanwhile wait no longer than a slice,
 * stopping at the end of a slice when a registration came meanwhile; past the bound, the oldest at
 * each add. The timers never keep the process alive.
 */
export class BackgroundPacking {
  readonly #maxPending: number;
  #offThread: OffThreadPacker | null;
  #queue: (Packable | undefined)[] = [];
  #head = 0;
  #lastAddedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Set while {@link refill} runs: nothing is packed at once. */
  #refilling = false;
  /** Batches at the packing thread, in the order sent, until it answers each. */
  readonly #inFlight = new Set<Batch>();
  #whenSettled: (() => void)[] = [];

  /**
   * @param maxPending most entries left waiting; past it the oldest are packed (see the class comment)
   * @param offThread where batches are packed; `null` packs on the event loop
   */
  constructor(maxPending = defaultMaxPending, offThread: OffThreadPacker | null = specPackingWorker) {
    // At least one waits: a spec packed before its registration is answered would be unpacked again
    // by the first watcher's event or read of it.
    if (!(maxPending >= 1)) throw new RangeError(`maxPending is ${maxPending}: it must be 1 or more`);
    this.#maxPending = maxPending;
    this.#offThread = offThread;
  }

  /** Entries waiting to be packed, not counting those at the packing thread. */
  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /** Entries at the packing thread, those of batches let go included, until it answers them. */
  get inFlight(): number {
    let entries = 0;
    for (const batch of this.#inFlight) entries += batch.entries.length;
    return entries;
  }

  /** Slots of the queue, the packed ones not yet dropped included (for tests of its compaction). */
  get slots(): number {
    return this.#queue.length;
  }

  /**
   * Resolves once no batch is at the packing thread (at once if none is): entries may still wait
   * here, and a batch may go to the thread right after (for tests and benchmarks).
   */
  settled(): Promise<void> {
    if (this.#inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#whenSettled.push(resolve));
  }

  /** Queues an entry. Past the bound, the oldest waiting are packed (but see {@link refill}). */
  add(entry: Packable): void {
    this.#queue.push(entry);
    this.#lastAddedAt = performance.now();
    if (!this.#refilling && this.pending > this.#maxPending) {
      if (this.#offThread && this.#inFlight.size < maxBatchesInFlight) this.#sendBatch(this.#offThread);
      // More than one over only after the thread refused batches, which wait here again.
      else while (this.pending > this.#maxPending) this.#packNext();
    }
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
    this.#letGoOfInFlight();
    this.#reset();
  }

  /** Packs everything waiting, now, here: the entries at the packing thread too (its answer is then dropped). */
  drain(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const batch of this.#inFlight) if (batch.current) for (const entry of batch.entries) entry.pack();
    this.#letGoOfInFlight();
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
    if (this.#offThread) {
      // Each batch's answer sends the next while registrations stay paused (see #answered).
      while (this.pending > 0 && this.#inFlight.size < maxBatchesInFlight) this.#sendBatch(this.#offThread);
      return;
    }
    const sliceEnd = performance.now() + sliceMs;
    while (this.#head < this.#queue.length && performance.now() < sliceEnd) this.#packNext();
    // The next slice comes at once, or after the next pause if a registration came meanwhile.
    if (this.#head < this.#queue.length) this.#timer = setTimeout(this.#run, 0).unref();
    else this.#reset();
  };

  /** Sends the oldest waiting entries, up to a batch, to the packing thread. */
  #sendBatch(offThread: OffThreadPacker): void {
    const batch: Batch = { entries: [], current: true };
    const jobs: PackingJob[] = [];
    while (jobs.length < batchSize && this.#head < this.#queue.length) {
      const entry = this.#queue[this.#head] as Packable;
      this.#queue[this.#head++] = undefined;
      const job = entry.packingJob();
      if (!job) continue;
      batch.entries.push(entry);
      jobs.push(job);
    }
    // Everything taken: the queue lets go of its emptied slots (an import of 100,000 left 800 KB).
    if (this.#head === this.#queue.length) this.#reset();
    if (jobs.length === 0) return;
    this.#inFlight.add(batch);
    offThread.packAll(jobs).then(
      (packed) => {
        // A batch let go meanwhile (drain packed it, clear dropped it) takes nothing.
        if (batch.current)
          for (const [index, entry] of batch.entries.entries()) entry.adoptPacked(packed[index] as string);
        this.#answered(batch);
      },
      () => {
        if (offThread.failure) this.#offThread = null; // for good (it warned why): packed here from now on
        this.#requeueRefused();
        this.#answered(batch);
      },
    );
  }

  /**
   * Puts the entries of every batch still current back at the head of the queue, oldest first: a
   * refusal refuses every batch at the thread, and the first refusal's turn takes them all.
   */
  #requeueRefused(): void {
    const refused: Packable[] = [];
    for (const batch of this.#inFlight) {
      if (!batch.current) continue;
      batch.current = false;
      refused.push(...batch.entries);
    }
    if (refused.length > 0) this.#queue.splice(this.#head, 0, ...refused);
  }

  #answered(batch: Batch): void {
    if (this.#inFlight.delete(batch) && this.#inFlight.size === 0) this.#settle();
    if (this.pending === 0 || this.#timer) return;
    // More waiting: on while registrations are paused, else after the next pause.
    const quietFor = performance.now() - this.#lastAddedAt;
    if (quietFor >= quietMs && this.#offThread) this.#sendBatch(this.#offThread);
    else this.#timer = setTimeout(this.#run, Math.max(0, quietMs - quietFor)).unref();
  }

  #packNext(): void {
    const entry = this.#queue[this.#head] as Packable;
    this.#queue[this.#head++] = undefined;
    entry.pack();
  }

  /**
   * Lets go of the batches at the packing thread: their answers, when they come, change nothing.
   * They still count against {@link maxBatchesInFlight} until then (the thread still works on them).
   */
  #letGoOfInFlight(): void {
    for (const batch of this.#inFlight) batch.current = false;
  }

  #settle(): void {
    const settled = this.#whenSettled;
    this.#whenSettled = [];
    for (const resolve of settled) resolve();
  }

  #reset(): void {
    this.#queue = [];
    this.#head = 0;
  }
}
