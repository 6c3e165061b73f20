import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import { ToolCounts } from "./tool-counts.js";

/**
 * Most runs executing at once by default. Tools are mostly I/O-bound (a call to a service, a
 * database, a model): a run waiting on I/O holds a few kilobytes and no CPU, so a low limit only
 * makes bursts queue and time out while the machine idles. 4,096 runs hold about 30 MB; a tool
 * that needs a CPU or a scarce connection declares its own `max_concurrency`.
 */
export const defaultMaxConcurrentRuns = 4096;

/** Most runs waiting for a slot by default. */
export const defaultMaxQueuedRuns = 10_000;

/** Limits of an {@link Admission}. */
export interface AdmissionOptions {
  /** Most runs executing at once, all tools together. Default {@link defaultMaxConcurrentRuns}. */
  readonly maxConcurrent?: number;
  /** Most runs waiting for a slot; beyond it admission fails fast. Default {@link defaultMaxQueuedRuns}. */
  readonly maxQueued?: number;
}

/** A place in line: granted at once or later, or withdrawn. */
export interface Ticket {
  /** Resolves when the run may start. Never rejects; withdraw the ticket to give up. */
  readonly granted: Promise<void>;
  /** Whether the slot was free at once. */
  readonly immediate: boolean;
  /** Runs ahead in the queue when the ticket was issued (0 when immediate). */
  readonly position: number;
  /** Gives the slot back once the run is done, or leaves the queue if still waiting. Idempotent. */
  release(): void;
}

/** The promise of a ticket granted before anyone asked for it. */
const grantedAlready: Promise<void> = Promise.resolve();

let releaseWaiter: (admission: Admission, waiter: Waiter) => void;

/**
 * A run's place in line, which is also its ticket: one object per run. Its `granted` promise is
 * made only when asked for: a run admitted at once never waits on it (a promise, its two resolve
 * functions and a release closure per run were most of what admission kept for a run in flight).
 */
class Waiter implements Ticket {
  state: "waiting" | "running" | "done" = "waiting";
  /** Neighbours in the queue while waiting. */
  prev: Waiter | undefined = undefined;
  next: Waiter | undefined = undefined;
  immediate = false;
  position = 0;
  #started = false;
  #granted: Promise<void> | undefined = undefined;
  #grant: (() => void) | undefined = undefined;

  constructor(
    readonly admission: Admission,
    readonly toolName: string,
    readonly toolLimit: number,
  ) {}

  get granted(): Promise<void> {
    if (this.#started) return grantedAlready;
    return (this.#granted ??= new Promise<void>((resolve) => (this.#grant = resolve)));
  }

  /** The run may start: whoever waits on `granted` goes on. */
  start(): void {
    this.#started = true;
    this.#grant?.();
  }

  release(): void {
    releaseWaiter(this.admission, this);
  }
}

/**
 * Admission control: a global limit on running runs, a per-tool limit, and one bounded FIFO queue.
 * A run whose tool is at its own limit lets later runs of other tools pass it. Everything is
 * synchronous, so the counts are exact under any number of concurrent callers. The queue is a
 * linked list with a count of waiters per tool, so admitting, leaving the queue and starting the
 * next run cost the same with 10,000 waiting as with none (a scan happens only past waiters whose
 * tool is at its own limit).
 */
export class Admission {
  static {
    releaseWaiter = (admission, waiter) => admission.#release(waiter);
  }

  readonly maxConcurrent: number;
  readonly maxQueued: number;
  #head: Waiter | undefined;
  #tail: Waiter | undefined;
  #queued = 0;
  readonly #queuedByTool = new ToolCounts();
  readonly #runningByTool = new ToolCounts();
  #running = 0;
  #maxQueuedSeen = 0;

  constructor(options: AdmissionOptions = {}) {
    this.maxConcurrent = options.maxConcurrent ?? defaultMaxConcurrentRuns;
    this.maxQueued = options.maxQueued ?? defaultMaxQueuedRuns;
  }

  /** Runs executing now. */
  get running(): number {
    return this.#running;
  }

  /** Runs waiting now. */
  get queued(): number {
    return this.#queued;
  }

  /** The longest the queue has been. */
  get maxQueuedSeen(): number {
    return this.#maxQueuedSeen;
  }

  /**
   * Asks for a slot for a run of `toolName`, whose own limit is `toolLimit` (0: none). Throws
   * RESOURCE_EXHAUSTED, with a retry delay, when the run would have to wait and the queue is full.
   */
  admit(toolName: string, toolLimit: number): Ticket {
    const waiter = new Waiter(this, toolName, toolLimit);
    // Queued runs never fit (dispatch starts every one that does), so they all wait for their own
    // tool's limit: a run that fits passes them, unless a run of its own tool waits ahead of it.
    const immediate = this.#fits(waiter) && this.#queuedByTool.get(toolName) === 0;
    const position = this.#queued;
    if (immediate) {
      this.#start(waiter);
    } else {
      if (this.#queued >= this.maxQueued) {
        throw new ToolRuntimeError(
          "RESOURCE_EXHAUSTED",
          ErrorType.ResourceExhausted,
          `run of ${quote(toolName)} cannot be queued: ${this.#queued} runs already wait, the most allowed; retry later`,
          toolName,
          this.#retryAfterMs(),
        );
      }
      this.#enqueue(waiter);
      this.#maxQueuedSeen = Math.max(this.#maxQueuedSeen, this.#queued);
    }
    waiter.immediate = immediate;
    waiter.position = position;
    return waiter;
  }

  #fits(waiter: Waiter): boolean {
    if (this.#running >= this.maxConcurrent) return false;
    return waiter.toolLimit === 0 || this.#runningByTool.get(waiter.toolName) < waiter.toolLimit;
  }

  #start(waiter: Waiter): void {
    waiter.state = "running";
    this.#running += 1;
    this.#runningByTool.increment(waiter.toolName);
    waiter.start();
  }

  #enqueue(waiter: Waiter): void {
    waiter.prev = this.#tail;
    if (this.#tail) this.#tail.next = waiter;
    else this.#head = waiter;
    this.#tail = waiter;
    this.#queued += 1;
    this.#queuedByTool.increment(waiter.toolName);
  }

  #dequeue(waiter: Waiter): void {
    if (waiter.prev) waiter.prev.next = waiter.next;
    else this.#head = waiter.next;
    if (waiter.next) waiter.next.prev = waiter.prev;
    else this.#tail = waiter.prev;
    waiter.prev = waiter.next = undefined;
    this.#queued -= 1;
    this.#queuedByTool.decrement(waiter.toolName);
  }

  #release(waiter: Waiter): void {
    if (waiter.state === "done") return;
    if (waiter.state === "waiting") {
      waiter.state = "done";
      this.#dequeue(waiter);
      return;
    }
    waiter.state = "done";
    this.#running -= 1;
    this.#runningByTool.decrement(waiter.toolName);
    this.#dispatch();
  }

  /** Starts queued runs, in order, while they fit. */
  #dispatch(): void {
    let waiter = this.#head;
    while (waiter && this.#running < this.maxConcurrent) {
      const next = waiter.next;
      if (this.#fits(waiter)) {
        this.#dequeue(waiter);
        this.#start(waiter);
      }
      waiter = next;
    }
  }

  /** A retry delay proportional to how full the queue is: 100 ms to 30 s. */
  #retryAfterMs(): number {
    return Math.min(30_000, Math.max(100, Math.round((this.#queued / Math.max(1, this.maxConcurrent)) * 100)));
  }
}
