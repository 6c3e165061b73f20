import type { ActivationStore } from "./activation-store.js";
import type { RunStore } from "./run-store.js";
import type { ToolStore } from "./tool-store.js";

/** The stores of a runtime, opened together; see openStores. */
export interface StoreSet {
  readonly tools: ToolStore;
  readonly activations: ActivationStore;
  /** Runs shared with other replicas; undefined for the memory store (runs stay in this process). */
  readonly runs: RunStore | undefined;
  /** "memory", or the store's URL with its password masked. */
  readonly description: string;
  /** Whether the store answers now; always true for the memory store. */
  readonly available: () => boolean;
  /** Calls `listener` each time the store becomes unavailable or available again. */
  readonly onAvailabilityChange: (listener: (available: boolean) => void) => void;
  /** Stops following the store and closes its connections. */
  close(): Promise<void>;
}
