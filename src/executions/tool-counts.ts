/**
 * Counts per tool name (its runs running, or its runs queued) that stay at zero rather than being
 * deleted: a Map that takes and drops a key for every run reallocates its table each time, and a
 * no-op run takes and drops its key within its call. The zeros are swept once the names kept pass
 * `max(sweepAbove, twice the names left by the last sweep)`, so a sweep costs O(1) a run, amortised.
 */
export class ToolCounts {
  readonly #counts = new Map<string, number>();
  #sweepAt: number;

  constructor(readonly sweepAbove = 4096) {
    this.#sweepAt = sweepAbove;
  }

  /** The count of `toolName`, 0 when it has none. */
  get(toolName: string): number {
    return this.#counts.get(toolName) ?? 0;
  }

  increment(toolName: string): void {
    this.#counts.set(toolName, this.get(toolName) + 1);
  }

  /** Takes one off the count of `toolName` (never below 0). */
  decrement(toolName: string): void {
    this.#counts.set(toolName, Math.max(0, this.get(toolName) - 1));
    if (this.#counts.size > this.#sweepAt) this.#sweep();
  }

  /** Names kept, zeros included. */
  get namesKept(): number {
    return this.#counts.size;
  }

  #sweep(): void {
    for (const [toolName, count] of this.#counts) if (count === 0) this.#counts.delete(toolName);
    this.#sweepAt = Math.max(this.sweepAbove, 2 * this.#counts.size);
  }
}
