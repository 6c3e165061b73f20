import { Server, type AuthInfo, type McpServerFactory } from "@modelcontextprotocol/server";
import type { Logger } from "pino";
import { anonymousAdmin, isAllowed, type Identity } from "../../auth/permissions.js";
import type { ToolRuntime } from "../../runtime.js";
import { callMcpTool } from "./mcp-call-tool.js";
import { cancellationKey, type McpCancellations } from "./mcp-cancellations.js";
import { toMcpError } from "./to-mcp-error.js";
import { toMcpTool } from "./to-mcp-tool.js";

/** What the per-request MCP servers share. */
export interface McpServerFactoryOptions {
  readonly logger: Logger;
  /** Tools per tools/list page. */
  readonly pageSize: number;
  /** Requests a 2025-era `notifications/cancelled` can reach. */
  readonly cancellations: McpCancellations;
  /** The version the server reports in `serverInfo`. */
  readonly version: string;
}

/** The session id header of Streamable HTTP (lowercase, as fetch's Headers give it). */
export const sessionIdHeader = "mcp-session-id";

/** The authentication info the endpoint hands the SDK for an authenticated identity. */
export function toAuthInfo(identity: Identity, token: string): AuthInfo {
  return { token, clientId: identity.name, scopes: [], extra: { identity } };
}

/**
 * Builds the MCP server the SDK creates for each request (the SDK is stateless per request: any
 * replica can serve any request). It serves `tools/list`, paging the default registry in name
 * order over the tools that can run here (a handler or a provider) and that the caller may read,
 * and `tools/call` (see callMcpTool). It advertises `tools.listChanged`.
 */
export function createMcpServerFactory(runtime: ToolRuntime, options: McpServerFactoryOptions): McpServerFactory {
  return (context) => {
    const caller = (context.authInfo?.extra?.["identity"] as Identity | undefined) ?? anonymousAdmin;
    const server = new Server(
      { name: "toolruntime", version: options.version },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.setRequestHandler("tools/list", async (request) => {
      try {
        if (runtime.stores.tools.shared) await runtime.stores.tools.view("");
        const page = runtime.registries.default.list({
          pageSize: options.pageSize,
          pageToken: request.params?.cursor ?? "",
          include: (spec) => spec.hasHandler && isAllowed(caller, "read", spec.name),
        });
        return {
          tools: page.tools.map(toMcpTool),
          ...(page.nextPageToken === "" ? {} : { nextCursor: page.nextPageToken }),
        };
      } catch (error) {
        throw toMcpError(error, options.logger);
      }
    });
    server.setRequestHandler("tools/call", async (request, handlerContext) => {
      const name = request.params.name;
      const sessionId = handlerContext.http?.req?.headers.get(sessionIdHeader) ?? "";
      const tracked = options.cancellations.track(cancellationKey(sessionId, caller.name, handlerContext.mcpReq.id));
      try {
        return await callMcpTool(runtime, {
          name,
          arguments: request.params.arguments,
          meta: { ...request.params._meta, ...handlerContext.mcpReq._meta },
          caller,
          signal: AbortSignal.any([handlerContext.mcpReq.signal, tracked.signal]),
          notifyProgress: (params) => handlerContext.mcpReq.notify({ method: "notifications/progress", params }),
        });
      } catch (error) {
        throw toMcpError(error, options.logger, name);
      } finally {
        tracked.release();
      }
    });
    return server;
  };
}
