import type { RegistrySet } from "../../registry/registry-set.js";
import type { RunnerSet } from "../../runner/runner-set.js";
import type { StoreSet } from "../store-set.js";
import { createMemoryActivationStore } from "./memory-activation-store.js";
import { createMemoryToolStore } from "./memory-tool-store.js";

/** The embedded stores: this process's registries and runners are the state. The default. */
export function createMemoryStoreSet(registries: RegistrySet, runners: RunnerSet): StoreSet {
  return {
    tools: createMemoryToolStore(registries),
    activations: createMemoryActivationStore(runners),
    runs: undefined,
    description: "memory",
    available: () => true,
    onAvailabilityChange: () => undefined,
    close: () => Promise.resolve(),
  };
}
