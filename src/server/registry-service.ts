import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type RegistryService, ToolChangeType } from "../../gen/toolruntime/v1/registry_pb.js";
import { allowedNameRanges } from "../auth/allowed-name-ranges.js";
import { ensureAllowed, isAllowed } from "../auth/permissions.js";
import { ensureMayCreateRegistry } from "../auth/registry-access.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { checkToolName, ensure, isToolName, quote } from "../registry/names.js";
import { registryNotFound, resolveRegistryName } from "../registry/registry-set.js";
import { toolNotFound } from "../registry/tool-not-found.js";
import { watchRegistry, type WatchItem } from "../registry/watch-registry.js";
import type { ToolRuntime } from "../runtime.js";
import { callerOf } from "./call-context.js";
import { defaultConnectionOptions } from "./connection-options.js";
import { endAtShutdown } from "./end-at-shutdown.js";
import { fitToolPage } from "./fit-tool-page.js";
import { ShutdownNotice } from "./shutdown-notice.js";

const defaultMaxMessageBytes = defaultConnectionOptions.maxMessageBytes;

const changeTypes: Record<WatchItem["kind"], ToolChangeType> = {
  snapshot: ToolChangeType.SNAPSHOT,
  snapshot_end: ToolChangeType.SNAPSHOT_END,
  added: ToolChangeType.ADDED,
  updated: ToolChangeType.UPDATED,
  removed: ToolChangeType.REMOVED,
  heartbeat: ToolChangeType.HEARTBEAT,
};

/**
 * The RegistryService RPCs over a runtime, written once for every transport. Each checks the
 * caller's permission: `register` to register or remove, `read` to get; listings and watches only
 * show the tools the caller may read. Registering into a registry that does not exist creates it,
 * which needs `registries.create` on its name. A watch ends with UNAVAILABLE once `shutdown`
 * begins (default: a notice that never does).
 */
export function createRegistryService(
  runtime: ToolRuntime,
  maxMessageBytes = defaultMaxMessageBytes,
  shutdown = new ShutdownNotice(),
): ServiceImpl<typeof RegistryService> {
  const store = runtime.stores.tools;
  /** The up-to-date view of a registry; NOT_FOUND when it does not exist. */
  const existing = async (name: string) => {
    const view = await store.view(name);
    if (!view) throw registryNotFound(resolveRegistryName(name));
    return view;
  };
  const readable = (context: HandlerContext) => {
    const caller = callerOf(context);
    return (name: string): boolean => isAllowed(caller, "read", name);
  };
  return {
    async registerTool(request, context) {
      if (!request.spec) {
        throw new ToolRuntimeError(
          "INVALID_ARGUMENT",
          ErrorType.Registration,
          "spec is missing: send the tool's ToolSpec",
        );
      }
      // An invalid name is the registry's RegistrationError; only a valid one can be authorised.
      if (isToolName(request.spec.name)) ensureAllowed(callerOf(context), "register", request.spec.name);
      if (!(await store.view(request.registry))) {
        ensureMayCreateRegistry(callerOf(context), resolveRegistryName(request.registry));
      }
      // The request's spec was decoded for this call alone: the registry may keep its objects.
      return store.register(request.registry, { spec: request.spec, owned: true }, { replace: request.replace });
    },

    async getTool(request, context) {
      ensure(checkToolName(request.name));
      ensureAllowed(callerOf(context), "read", request.name);
      const registry = await existing(request.registry);
      const tool = registry.get(request.name);
      if (!tool) {
        throw toolNotFound(
          registry,
          request.name,
          `tool ${quote(request.name)} is not registered in registry ${quote(registry.name)}: check the name with ListTools`,
        );
      }
      return { spec: tool.spec };
    },

    async listTools(request, context) {
      const mayRead = readable(context);
      const page = (await existing(request.registry)).list({
        ...request,
        within: allowedNameRanges(callerOf(context), "read"),
        include: (tool) => mayRead(tool.name),
      });
      return { ...fitToolPage(page, maxMessageBytes), registryVersion: page.version };
    },

    async removeTool(request, context) {
      ensure(checkToolName(request.name));
      ensureAllowed(callerOf(context), "register", request.name);
      return { removed: await store.remove(request.registry, request.name) };
    },

    watchTools(request, context) {
      const retry = "watch again from the last version seen, against another replica or the restarted server";
      return endAtShutdown(shutdown, context, retry, async function* (signal) {
        const mayRead = readable(context);
        const registry = await store.viewForWatch(request.registry);
        const items = watchRegistry(registry, {
          fromVersion: request.fromVersion,
          history: (version) => store.changesSince(registry, version),
          signal,
          heartbeatIntervalMs: runtime.heartbeatIntervalMs,
        });
        for await (const item of items) {
          if (item.spec && !mayRead(item.spec.name)) continue;
          yield { type: changeTypes[item.kind], version: item.version, ...(item.spec ? { spec: item.spec } : {}) };
        }
      });
    },
  };
}
