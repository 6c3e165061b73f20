import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";

/** Limits of an {@link Admission}. */
export interface AdmissionOptions {
  /** Most runs executing at once, all tools together. Default 256. */
  readonly maxConcurrent?: number;
  /** Most runs waiting for a slot; beyond it admission fails fast. Default 10,000. */
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

interface Waiter {
  readonly toolName: string;
  readonly toolLimit: number;
  readonly grant: () => void;
  state: "waiting" | "running" | "done";
}

/**
 * Admission control: a global limit on running runs, a per-tool limit, and one bounded FIFO queue.
 * A run whose tool is at its own limit lets later runs of other tools pass it. Everything is
 * synchronous, so the counts are exact under any number of concurrent callers.
 */
export class Admission {
  readonly maxConcurrent: number;
  readonly maxQueued: number;
  readonly #queue: Waiter[] = [];
  readonly #runningByTool = new Map<string, number>();
  #running = 0;
  #maxQueuedSeen = 0;

  constructor(options: AdmissionOptions = {}) {
    this.maxConcurrent = options.maxConcurrent ?? 256;
    this.maxQueued = options.maxQueued ?? 10_000;
  }

  /** Runs executing now. */
  get running(): number {
    return this.#running;
  }

  /** Runs waiting now. */
  get queued(): number {
    return this.#queue.length;
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
    let grant: () => void = () => undefined;
    const granted = new Promise<void>((resolve) => (grant = resolve));
    const waiter: Waiter = { toolName, toolLimit, grant, state: "waiting" };
    // Queued runs never fit (dispatch starts every one that does), so they all wait for their own
    // tool's limit: a run that fits passes them, unless a run of its own tool waits ahead of it.
    const immediate = this.#fits(waiter) && !this.#queue.some((queued) => queued.toolName === toolName);
    const position = this.#queue.length;
    if (immediate) {
      this.#start(waiter);
    } else {
      if (this.#queue.length >= this.maxQueued) {
        throw new ToolRuntimeError(
          "RESOURCE_EXHAUSTED",
          ErrorType.ResourceExhausted,
          `run of ${quote(toolName)} cannot be queued: ${this.#queue.length} runs already wait, the most allowed; retry later`,
          toolName,
          this.#retryAfterMs(),
        );
      }
      this.#queue.push(waiter);
      this.#maxQueuedSeen = Math.max(this.#maxQueuedSeen, this.#queue.length);
    }
    return {
      granted,
      immediate,
      position,
      release: () => this.#release(waiter),
    };
  }

  #fits(waiter: Waiter): boolean {
    if (this.#running >= this.maxConcurrent) return false;
    return waiter.toolLimit === 0 || (this.#runningByTool.get(waiter.toolName) ?? 0) < waiter.toolLimit;
  }

  #start(waiter: Waiter): void {
    waiter.state = "running";
    this.#running += 1;
    this.#runningByTool.set(waiter.toolName, (this.#runningByTool.get(waiter.toolName) ?? 0) + 1);
    waiter.grant();
  }

  #release(waiter: Waiter): void {
    if (waiter.state === "done") return;
    if (waiter.state === "waiting") {
      waiter.state = "done";
      const index = this.#queue.indexOf(waiter);
      if (index >= 0) this.#queue.splice(index, 1);
      return;
    }
    waiter.state = "done";
    this.#running -= 1;
    const left = (this.#runningByTool.get(waiter.toolName) ?? 1) - 1;
    if (left === 0) this.#runningByTool.delete(waiter.toolName);
    else this.#runningByTool.set(waiter.toolName, left);
    this.#dispatch();
  }

  /** Starts queued runs, in order, while they fit. */
  #dispatch(): void {
    for (let index = 0; index < this.#queue.length && this.#running < this.maxConcurrent;) {
      const waiter = this.#queue[index] as Waiter;
      if (this.#fits(waiter)) {
        this.#queue.splice(index, 1);
        this.#start(waiter);
      } else {
        index += 1;
      }
    }
  }

  /** A retry delay proportional to how full the queue is: 100 ms to 30 s. */
  #retryAfterMs(): number {
    return Math.min(30_000, Math.max(100, Math.round((this.#queue.length / Math.max(1, this.maxConcurrent)) * 100)));
  }
}
