import type { ServiceImpl } from "@connectrpc/connect";
import type { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { checkToolName, ensure, quote } from "../registry/names.js";
import { watchRegistry, type WatchItem } from "../registry/watch-registry.js";
import type { ToolRuntime } from "../runtime.js";

const changeTypes: Record<WatchItem["kind"], ToolChangeType> = {
  snapshot: ToolChangeType.SNAPSHOT,
  snapshot_end: ToolChangeType.SNAPSHOT_END,
  added: ToolChangeType.ADDED,
  updated: ToolChangeType.UPDATED,
  removed: ToolChangeType.REMOVED,
  heartbeat: ToolChangeType.HEARTBEAT,
};

/** The RegistryService RPCs over a runtime, written once for every transport. */
export function createRegistryService(runtime: ToolRuntime): ServiceImpl<typeof RegistryService> {
  const { registries } = runtime;
  return {
    registerTool(request) {
      const registry = registries.getOrCreate(request.registry);
      if (!request.spec) {
        throw new ToolRuntimeError(
          "INVALID_ARGUMENT",
          ErrorType.Registration,
          "spec is missing: send the tool's ToolSpec",
        );
      }
      return registry.register({ spec: request.spec }, { replace: request.replace });
    },

    getTool(request) {
      ensure(checkToolName(request.name));
      const registry = registries.get(request.registry);
      const tool = registry.get(request.name);
      if (!tool) {
        throw new ToolRuntimeError(
          "NOT_FOUND",
          ErrorType.NotFound,
          `tool ${quote(request.name)} is not registered in registry ${quote(registry.name)}: check the name with ListTools`,
          request.name,
        );
      }
      return { spec: tool.spec };
    },

    listTools(request) {
      const page = registries.get(request.registry).list(request);
      return { tools: page.tools, nextPageToken: page.nextPageToken, registryVersion: page.version };
    },

    removeTool(request) {
      ensure(checkToolName(request.name));
      const registry = registries.find(request.registry);
      return { removed: registry?.remove(request.name) ?? false };
    },

    async *watchTools(request, context) {
      const registry = registries.get(request.registry);
      const items = watchRegistry(registry, {
        fromVersion: request.fromVersion,
        signal: context.signal,
        heartbeatIntervalMs: runtime.heartbeatIntervalMs,
      });
      for await (const item of items) {
        yield { type: changeTypes[item.kind], version: item.version, ...(item.spec ? { spec: item.spec } : {}) };
      }
    },
  };
}
