import type { Logger } from "pino";
import { NextFlight } from "../async/next-flight.js";
import type { RunStore } from "../stores/run-store.js";
import type { Ticket } from "./admission.js";

/** What a block needs from the replica that holds it. */
export interface SlotBlockHost {
  readonly store: RunStore;
  /** Most runs executing at once across the cluster (this replica's setting). */
  readonly maxConcurrent: number;
  /** Whether this replica trusts its lease now (see SharedRuns.trusted): a block is used only then. */
  trusted(): boolean;
  readonly logger: Logger | undefined;
}

/**
 * Slots asked for beyond those in use when a block grows, and kept free beyond the peak when it
 * shrinks: 16, or an eighth of the cluster's limit when that is less (at least one), so that one
 * replica's idle headroom never holds much of a small cluster's slots.
 */
const headroomOf = (maxConcurrent: number): number => Math.max(1, Math.min(16, Math.floor(maxConcurrent / 8)));
/** After a refused growth, how long runs go to the cluster's queue before the block asks again, in ms. */
const refusedBackoffMs = 100;
const grantedAlready: Promise<void> = Promise.resolve();

/**
 * This replica's block of the cluster's admission slots (see RunStore.resizeSlotBlock): a run of a
 * tool without a limit of its own takes a slot from it in memory, with no statement and no lock in
 * the store, so admission costs nothing per run while the cluster has room. The block grows when
 * its slots are all in use (by the headroom at least, doubling), never while runs wait in the
 * cluster's queue; every tick (the shared runs' poll, 500 ms) it shrinks to the last interval's
 * peak use plus the headroom. When a run joins the queue (the store rings), the block gives back
 * every free slot at once, admits nothing more, and gives back each slot as it is released,
 * until a tick finds the queue empty: the queue's runs get the slots in FIFO order. A run
 * admitted from a block can pass a queued run only within the ring's delivery (at worst a tick,
 * when the ring is lost): the one tolerance of the cluster's FIFO order. A block goes with the
 * lease: after a loss of the lease it is empty until it grows again.
 */
export class SlotBlock {
  readonly #host: SlotBlockHost;
  readonly #growing: NextFlight;
  #slots = 0;
  #inUse = 0;
  /** Most slots in use at once since the last tick. */
  #peak = 0;
  /** The lease losses the block was granted under: another loss empties it. */
  #losses: number;
  #refusedUntil = 0;
  /** Runs waiting in afterGrowth: the next growth asks for them too. */
  #demand = 0;
  /** Runs wait in the cluster's queue (rung, or seen by the last resize): slots go back to it. */
  #queueWaits = false;
  #resizing: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(host: SlotBlockHost) {
    this.#host = host;
    this.#losses = host.store.lease.losses();
    this.#growing = new NextFlight(() => this.#grow());
    host.store.onQueued(() => {
      this.#queueWaits = true;
      this.#giveBackFree();
    });
  }

  /** Slots in the block and in use now. */
  get size(): { slots: number; inUse: number } {
    return { slots: this.#slots, inUse: this.#inUse };
  }

  /**
   * A ticket for a slot of the block, at once, or undefined when the block is full or not to be
   * used now (see {@link afterGrowth}).
   */
  take(): Ticket | undefined {
    if (this.#closed || this.#queueWaits || !this.#host.trusted()) return undefined;
    const losses = this.#host.store.lease.losses();
    if (losses !== this.#losses) {
      this.#losses = losses;
      this.#slots = 0;
    }
    return this.#inUse < this.#slots ? this.#ticket() : undefined;
  }

  /**
   * After {@link take} found the block full: grows it (one statement shared by the runs that ask
   * meanwhile) and takes a slot; undefined when the store had none to give, or refused lately, or
   * the block is not to be used now. The run then asks the store for a slot, and may wait in the
   * cluster's queue.
   */
  async afterGrowth(): Promise<Ticket | undefined> {
    // Every run waiting for the growth counts in what it asks for; a burst larger than one growth
    // waits for the next, as long as the store keeps granting.
    this.#demand += 1;
    try {
      for (;;) {
        const mayGrow =
          !this.#closed &&
          !this.#queueWaits &&
          this.#host.trusted() &&
          Date.now() >= this.#refusedUntil &&
          this.#slots < this.#host.maxConcurrent;
        if (!mayGrow) return undefined;
        await this.#growing.run();
        const ticket = this.take();
        if (ticket) return ticket;
      }
    } catch (error) {
      this.#host.logger?.warn({ err: error }, "admission: the slot block could not grow; the run asks the store");
      return undefined;
    } finally {
      this.#demand -= 1;
    }
  }

  /**
   * Gives back what the last interval did not use (keeping the headroom), or every free slot when
   * runs wait in the cluster's queue, and learns whether they still do. A statement only while the
   * block holds free slots or runs were seen waiting.
   */
  async tick(): Promise<void> {
    if (this.#closed) return;
    if (this.#slots <= this.#inUse && !this.#queueWaits) {
      this.#peak = this.#inUse;
      return;
    }
    const target = Math.max(this.#inUse, Math.min(this.#slots, this.#peak + headroomOf(this.#host.maxConcurrent)));
    this.#peak = this.#inUse;
    const answer = await this.#resize(this.#queueWaits ? this.#inUse : target);
    this.#queueWaits = answer.waiting > 0;
    if (this.#queueWaits && this.#slots > this.#inUse) await this.#resize(this.#inUse);
  }

  /** Stops using the block; the store drops it with the replica. */
  close(): void {
    this.#closed = true;
  }

  #ticket(): Ticket {
    this.#inUse += 1;
    if (this.#inUse > this.#peak) this.#peak = this.#inUse;
    let released = false;
    return {
      granted: grantedAlready,
      immediate: true,
      position: 0,
      release: () => {
        if (released) return;
        released = true;
        this.#inUse -= 1;
        this.#refusedUntil = 0;
        if (this.#queueWaits) this.#giveBackFree();
      },
    };
  }

  /** Gives back the slots not in use, for the runs waiting in the cluster's queue. */
  #giveBackFree(): void {
    if (this.#closed || this.#slots <= this.#inUse) return;
    this.#resize(this.#inUse).catch((error: unknown) =>
      this.#host.logger?.warn({ err: error }, "admission: free block slots not given back; the next tick will"),
    );
  }

  async #grow(): Promise<void> {
    const headroom = headroomOf(this.#host.maxConcurrent);
    const wanted = Math.min(this.#host.maxConcurrent, Math.max(this.#inUse + this.#demand + headroom, this.#slots * 2));
    const before = this.#slots;
    const answer = await this.#resize(wanted);
    if (answer.slots <= before) this.#refusedUntil = Date.now() + refusedBackoffMs;
  }

  /**
   * Resizes the block in the store, one resize at a time. A shrink applies here first, before the
   * store hears of it, so no run takes a slot the store no longer counts; a growth applies once
   * the store granted it.
   */
  #resize(wanted: number): Promise<{ slots: number; waiting: number }> {
    const next = this.#resizing.then(async () => {
      const losses = this.#host.store.lease.losses();
      if (wanted < this.#slots) this.#slots = Math.max(wanted, this.#inUse);
      const answer = await this.#host.store.resizeSlotBlock(Math.max(wanted, this.#inUse), this.#host.maxConcurrent);
      // A loss of the lease meanwhile dropped the block in the store: it stays empty here too.
      this.#slots = losses === this.#host.store.lease.losses() ? answer.slots : 0;
      return answer;
    });
    this.#resizing = next.catch(() => undefined);
    return next;
  }
}
