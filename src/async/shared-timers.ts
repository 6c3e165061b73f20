import { performance } from "node:perf_hooks";

/** A callback scheduled on {@link SharedTimers}. */
export interface ScheduledTimer {
  /** Stops it from running; nothing happens once it ran. */
  cancel(): void;
}

/** The longest delay one Node timer takes; longer ones are reached in steps. */
const maxTimerDelayMs = 2 ** 31 - 1;

/**
 * A scheduled callback in its list. `cancel` is a method reaching the list through a field: a
 * closure per entry was two more objects for every run's timeout and heartbeat. The callback is
 * called with `argument`, so that callers can pass one function shared by every run and the run
 * it is about, instead of a closure per run.
 */
class Entry implements ScheduledTimer {
  next: Entry | undefined = undefined;

  constructor(
    readonly list: TimerList,
    readonly due: number,
    readonly callback: (argument: unknown) => void,
    readonly argument: unknown,
    public prev: Entry | undefined,
  ) {}

  cancel(): void {
    this.list.unlink(this);
  }
}

/**
 * One list of callbacks that share a delay. Each is appended at its due time, so the list stays
 * in due order, and one Node timer, armed for the head, serves them all. Cancelling unlinks in
 * constant time. While the list is empty its timer does not keep the process alive.
 */
class TimerList {
  #head: Entry | undefined;
  #tail: Entry | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Set while {@link #fire} runs the due callbacks. */
  #firing = false;

  /** `onEmpty` is called when the timer fired and found the list empty: the list is then done with. */
  constructor(
    readonly delayMs: number,
    private readonly onEmpty: () => void,
  ) {}

  /**
   * Appends a callback due `delayMs` after `since` (a `performance.now()` time; now when absent).
   * A due time before the tail's is moved to the tail's, so that the list stays in order: it can
   * only be earlier by the time a run took to schedule its timer after its start (microseconds).
   */
  add(callback: (argument: unknown) => void, argument: unknown, since?: number): ScheduledTimer {
    const tail = this.#tail;
    const due = Math.max((since ?? performance.now()) + this.delayMs, tail ? tail.due : 0);
    const entry = new Entry(this, due, callback, argument, tail);
    if (tail) tail.next = entry;
    else this.#head = entry;
    this.#tail = entry;
    // While the list fires, the timer is armed at the end, for the head (see #fire).
    if (this.#firing) return entry;
    if (!this.#timer) this.#arm(due - performance.now());
    else if (entry === this.#head) this.#timer.ref();
    return entry;
  }

  /** Takes `entry` out of the list; nothing happens when it is out already (it ran or was cancelled). */
  unlink(entry: Entry): void {
    // An entry that ran or was cancelled is out of the list: neither neighbour points at it.
    if (entry.prev) entry.prev.next = entry.next;
    else if (this.#head === entry) this.#head = entry.next;
    else return;
    if (entry.next) entry.next.prev = entry.prev;
    else this.#tail = entry.prev;
    entry.prev = entry.next = undefined;
    if (!this.#head) this.#timer?.unref();
  }

  #arm(delayMs: number): void {
    this.#timer = setTimeout(() => this.#fire(), Math.min(Math.max(delayMs, 1), maxTimerDelayMs));
  }

  #fire(): void {
    this.#timer = undefined;
    this.#firing = true;
    // Node's timers may fire up to a millisecond before performance.now() says the delay is over
    // (libuv counts whole milliseconds from a clock read at the start of its loop): an entry not
    // yet due waits for the timer armed again below, so that no callback runs early (a run's
    // TimeoutError never reports less time than its timeout).
    const now = performance.now();
    while (this.#head && this.#head.due <= now) {
      const entry = this.#head;
      this.unlink(entry);
      try {
        entry.callback(entry.argument);
      } catch (error) {
        // The other callbacks still run, and the timer is armed again; the error is not lost.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    this.#firing = false;
    // Armed for the head, whatever the callbacks added: a callback that schedules itself again on
    // this list (a heartbeat) made the timer be armed for its new entry, one delay away, and the
    // entries due before it waited that long (a 15 s timeout fired at 30 s).
    if (this.#head) this.#arm(this.#head.due - performance.now());
    else this.onEmpty();
  }
}

/**
 * Timers for many runs at the cost of a few: callbacks with the same delay (every run's default
 * timeout, every run's heartbeat interval) share one Node timer, instead of one each that is
 * created and cleared per run. Delays above 2^31-1 ms, which Node would clamp to 1 ms, are honoured.
 */
export class SharedTimers {
  readonly #lists = new Map<number, TimerList>();

  /**
   * Calls `callback` after `delayMs` (rounded to whole milliseconds) unless cancelled first, with
   * `argument` when one is given.
   */
  schedule(delayMs: number, callback: () => void): ScheduledTimer;
  schedule<T>(delayMs: number, callback: (argument: T) => void, argument: T): ScheduledTimer;
  schedule(delayMs: number, callback: (argument: unknown) => void, argument?: unknown): ScheduledTimer {
    return this.#list(delayMs).add(callback, argument);
  }

  /**
   * {@link schedule}, with the delay counted from `since`, a `performance.now()` time already
   * passed: for a timer that is armed only once it is known to be needed (a run's timeout, once
   * its handler returned a promise) but counts from the start.
   */
  scheduleSince<T>(since: number, delayMs: number, callback: (argument: T) => void, argument: T): ScheduledTimer {
    return this.#list(delayMs).add(callback as (argument: unknown) => void, argument, since);
  }

  /** The list of that delay (rounded to whole milliseconds). */
  #list(delayMs: number): TimerList {
    const delay = Math.max(0, Math.round(delayMs));
    let list = this.#lists.get(delay);
    if (!list) {
      // Emptied lists are dropped, so delays that vary per run (a caller's deadline) leave nothing behind.
      list = new TimerList(delay, () => this.#lists.delete(delay));
      this.#lists.set(delay, list);
    }
    return list;
  }
}

/** The process's shared timers. */
export const sharedTimers = new SharedTimers();
