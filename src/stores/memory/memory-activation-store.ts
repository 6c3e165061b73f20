import type { RunnerSet } from "../../runner/runner-set.js";
import type { ActivationStore } from "../activation-store.js";

/** The embedded activation store: the runners of this process hold the state. */
export function createMemoryActivationStore(runners: RunnerSet): ActivationStore {
  return {
    // eslint-disable-next-line @typescript-eslint/require-await -- a rejected promise, never a throw
    activate: async (runnerName, toolName) => runners.activate(runnerName, toolName),
    // eslint-disable-next-line @typescript-eslint/require-await -- a rejected promise, never a throw
    deactivate: async (runnerName, toolName) => runners.deactivate(runnerName, toolName),
    sync: () => undefined,
  };
}
