import type { RegistrySet } from "../../registry/registry-set.js";
import type { ToolStore } from "../tool-store.js";

/**
 * The embedded tool store: the registries of this process are the state, so every operation is
 * synchronous (hence atomic) and a view needs no refreshing. The default; nothing survives a
 * restart and nothing is shared with other processes.
 */
export function createMemoryToolStore(registries: RegistrySet): ToolStore {
  return {
    shared: false,
    // eslint-disable-next-line @typescript-eslint/require-await -- a rejected promise, never a throw
    async register(registryName, registration, options = {}) {
      // No other process writes, so adopting is plain registration.
      return registries.getOrCreate(registryName).register(registration, { replace: options.replace ?? false });
    },
    // eslint-disable-next-line @typescript-eslint/require-await -- a rejected promise, never a throw
    async remove(registryName, name, options = {}) {
      return registries.find(registryName)?.remove(name, options) ?? false;
    },
    view: (registryName) => registries.find(registryName),
    viewForWatch: (registryName) => registries.getForWatch(registryName),
    changesSince: (registry, version) => registry.changesSince(version),
    close: () => Promise.resolve(),
  };
}
