import type { ServiceImpl } from "@connectrpc/connect";
import type { ProviderService } from "../../gen/toolruntime/v1/provider_pb.js";
import { ensureAllowed } from "../auth/permissions.js";
import type { ToolRuntime } from "../runtime.js";
import { callerOf } from "./call-context.js";

/**
 * The ProviderService RPC over a runtime: a provider's stream, served by the runtime's provider
 * hub. Serving a tool needs the caller's `provide` permission on its name.
 */
export function createProviderService(runtime: ToolRuntime): ServiceImpl<typeof ProviderService> {
  return {
    async *connect(requests, context) {
      const caller = callerOf(context);
      yield* runtime.providers.serve(requests, context.signal, (toolName) =>
        ensureAllowed(caller, "provide", toolName),
      );
    },
  };
}
