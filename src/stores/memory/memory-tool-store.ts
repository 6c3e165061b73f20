import { create } from "@bufbuild/protobuf";
import { ToolSpecSchema } from "../../../gen/toolruntime/v1/tool_pb.js";
import type { RegistrySet } from "../../registry/registry-set.js";
import { sameDefinition } from "../../registry/same-definition.js";
import { validateSpec } from "../../registry/validate-spec.js";
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
      const registry = registries.getOrCreate(registryName);
      const existing = registry.get(registration.spec.name);
      if (options.adopt && existing && registration.handler) {
        const fresh = create(ToolSpecSchema, { ...validateSpec(registration.spec).spec, hasHandler: true });
        if (sameDefinition(existing.spec, fresh)) {
          registry.attachHandler(fresh.name, registration.handler, registration.hooks);
          registry.refreshHandler(fresh.name);
          return { spec: existing.spec, replaced: false };
        }
      }
      return registry.register(registration, { replace: (options.replace ?? false) || (options.adopt ?? false) });
    },
    // eslint-disable-next-line @typescript-eslint/require-await -- a rejected promise, never a throw
    async remove(registryName, name, options = {}) {
      return registries.find(registryName)?.remove(name, options) ?? false;
    },
    // eslint-disable-next-line @typescript-eslint/require-await -- a rejected promise, never a throw
    async registerProvided(registryName, registration) {
      // The provider hub already refused names served otherwise: this process is the whole state.
      return registries.getOrCreate(registryName).register(registration);
    },
    // eslint-disable-next-line @typescript-eslint/require-await -- a rejected promise, never a throw
    async withdrawProvided(registryName, toolName, providerName) {
      return registries.find(registryName)?.remove(toolName, { offlineProvider: providerName }) ?? false;
    },
    view: (registryName) => registries.find(registryName),
    currentView: (registryName) => registries.find(registryName),
    viewForWatch: (registryName) => registries.getForWatch(registryName),
    changesSince: (registry, version) => registry.changesSince(version),
    close: () => Promise.resolve(),
  };
}
