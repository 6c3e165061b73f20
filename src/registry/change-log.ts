import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";

/** What happened to a tool. */
export type ToolChangeKind = "added" | "updated" | "removed";

/** One change of a registry, numbered by the registry version it produced. */
export interface ToolChange {
  readonly kind: ToolChangeKind;
  /** The new spec, or for "removed" the spec the tool had. */
  readonly spec: ToolSpec;
  /** The registry version after this change. */
  readonly version: bigint;
}

/** The most recent changes of a registry, at most `capacity`, so watchers can resume. */
export class ChangeLog {
  readonly #changes: (ToolChange | undefined)[];
  #count = 0;
  #next = 0;

  /** @param capacity how many of the latest changes are retained */
  constructor(readonly capacity: number) {
    this.#changes = new Array<ToolChange | undefined>(capacity);
  }

  /** Records a change; the oldest is forgotten when full. */
  append(change: ToolChange): void {
    this.#changes[this.#next] = change;
    this.#next = (this.#next + 1) % this.capacity;
    this.#count = Math.min(this.#count + 1, this.capacity);
  }

  /** Forgets every change (the registry was reloaded). */
  clear(): void {
    this.#changes.fill(undefined);
    this.#count = 0;
    this.#next = 0;
  }

  /**
   * The changes after `version`, oldest first, given that the registry is at `current`. Undefined
   * when some of them are no longer retained.
   */
  since(version: bigint, current: bigint): ToolChange[] | undefined {
    const wanted = current - version;
    if (wanted <= 0n) return [];
    if (wanted > BigInt(this.#count)) return undefined;
    const result: ToolChange[] = [];
    const start = (this.#next - Number(wanted) + this.capacity) % this.capacity;
    for (let offset = 0; offset < Number(wanted); offset++) {
      result.push(this.#changes[(start + offset) % this.capacity] as ToolChange);
    }
    return result;
  }
}
