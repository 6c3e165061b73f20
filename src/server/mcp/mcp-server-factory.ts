import { codeFromString } from "@connectrpc/connect/protocol-connect";
import {
  CLIENT_CAPABILITIES_META_KEY,
  Server,
  type AuthInfo,
  type McpServerFactory,
  type ProtocolError,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { Logger } from "pino";
import { allowedNameRanges } from "../../auth/allowed-name-ranges.js";
import { anonymousAdmin, isAllowed, type Identity } from "../../auth/permissions.js";
import type { ToolRuntime } from "../../runtime.js";
import { callMcpTool } from "./mcp-call-tool.js";
import { declaresFormElicitation } from "./mcp-approval.js";
import { cancellationKey, type McpCancellations } from "./mcp-cancellations.js";
import { okCode, type McpOutcome } from "./mcp-request-outcome.js";
import { sessionAnswersElicitation, sessionIdHeader } from "./mcp-session-id.js";
import type { McpApprovalChannel } from "./mcp-tool-call.js";
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
  /** Whether an identity may approve the runs it started (`--allow-self-approval`). */
  readonly allowSelfApproval: boolean;
}

/**
 * The authentication info the endpoint hands the SDK for an authenticated identity, with where
 * the request's handler records its outcome (for the request metrics).
 */
export function toAuthInfo(identity: Identity, token: string, outcome: McpOutcome): AuthInfo {
  return { token, clientId: identity.name, scopes: [], extra: { identity, outcome } };
}

/**
 * Builds the MCP server the SDK creates for each request (the SDK is stateless per request: any
 * replica can serve any request). It serves `tools/list`, paging the default registry in name
 * order over the tools that can run here (a handler or a provider) and that the caller may read,
 * and `tools/call` (see callMcpTool). It advertises `tools.listChanged`. A client that declared
 * form elicitation (at `initialize` in the 2025 era, as its session id tells; in each request's
 * `_meta` on 2026-07-28) can be asked to approve the runs it starts (see approvalChannel).
 */
export function createMcpServerFactory(runtime: ToolRuntime, options: McpServerFactoryOptions): McpServerFactory {
  return (context) => {
    const caller = (context.authInfo?.extra?.["identity"] as Identity | undefined) ?? anonymousAdmin;
    const outcome = (context.authInfo?.extra?.["outcome"] as McpOutcome | undefined) ?? { code: undefined };
    const refused = (error: ProtocolError): ProtocolError => {
      const named = (error.data as { code?: unknown } | undefined)?.code;
      outcome.code = (typeof named === "string" ? codeFromString(named) : undefined) ?? outcome.code;
      return error;
    };
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
          // An index of the tools that can run here and the ranges the caller may read: a page
          // visits only tools it lists (isAllowed stays the authority).
          runnableOnly: true,
          within: allowedNameRanges(caller, "read"),
          include: (tool) => isAllowed(caller, "read", tool.name),
        });
        const result = {
          tools: page.tools.map(toMcpTool),
          ...(page.nextPageToken === "" ? {} : { nextCursor: page.nextPageToken }),
        };
        outcome.code = okCode;
        return result;
      } catch (error) {
        throw refused(toMcpError(error, options.logger));
      }
    });
    server.setRequestHandler("tools/call", async (request, handlerContext) => {
      const name = request.params.name;
      const sessionId = handlerContext.http?.req?.headers.get(sessionIdHeader) ?? "";
      const tracked = options.cancellations.track(cancellationKey(sessionId, caller.name, handlerContext.mcpReq.id));
      const modern = context.era === "modern";
      const requestState = modern ? handlerContext.mcpReq.requestState() : undefined;
      try {
        const result = await callMcpTool(runtime, {
          name,
          arguments: request.params.arguments,
          meta: { ...request.params._meta, ...handlerContext.mcpReq._meta },
          caller,
          signal: AbortSignal.any([handlerContext.mcpReq.signal, tracked.signal]),
          notifyProgress: (params) => handlerContext.mcpReq.notify({ method: "notifications/progress", params }),
          approval: approvalChannel(server, handlerContext, modern, sessionId),
          allowSelfApproval: options.allowSelfApproval,
          retry:
            typeof requestState === "string"
              ? { requestState, inputResponses: handlerContext.mcpReq.inputResponses }
              : undefined,
        });
        outcome.code = okCode;
        return result;
      } catch (error) {
        throw refused(toMcpError(error, options.logger, name));
      } finally {
        tracked.release();
      }
    });
    return server;
  };
}

/**
 * How this request's client can be asked to approve a run, if it declared form elicitation:
 * on 2026-07-28, by answering `input_required`; in the 2025 era, by an `elicitation/create`
 * request on the call's SSE stream, written with an id of the gateway's choosing (the SDK's own
 * `elicitInput` refuses here: a per-request server never saw the client's `initialize`, and it
 * could not route the answer, which comes back in a POST of its own, to this server anyway).
 */
function approvalChannel(
  server: Server,
  context: ServerContext,
  modern: boolean,
  sessionId: string,
): McpApprovalChannel | undefined {
  if (modern) {
    // The SDK's declarations type the envelope as {}: its keys are read as what they are on the wire.
    const envelope = context.mcpReq.envelope as Readonly<Record<string, unknown>> | undefined;
    const declared = envelope?.[CLIENT_CAPABILITIES_META_KEY];
    return declaresFormElicitation(declared) ? { kind: "input_required" } : undefined;
  }
  if (!sessionAnswersElicitation(sessionId)) return undefined;
  const relatedRequestId = context.mcpReq.id;
  return {
    kind: "request",
    send: async (id, params) => {
      await server.transport?.send({ jsonrpc: "2.0", id, method: "elicitation/create", params }, { relatedRequestId });
    },
  };
}
