import type { Logger } from "pino";
import type { ReconnectOptions } from "../../providers/reconnect-delay.js";
import { ProviderError } from "../../providers/provider-hub.js";
import { quote } from "../../registry/names.js";
import type { ToolHandler } from "../../registry/tool-definition.js";
import type { ToolStore } from "../../stores/tool-store.js";
import { callMcpTool } from "./call-mcp-tool.js";
import { connectMcpServer, type McpConnection } from "./connect-mcp-server.js";
import { createImportedTools, type McpTool } from "./imported-tools.js";
import { listAllTools } from "./list-all-tools.js";
import type { McpServerSpec } from "./parse-mcp-server.js";
import { reportConnectFailure } from "./report-connect-failure.js";
import { superviseConnection } from "./supervise-connection.js";

/** Which MCP servers to import, and how far to trust them. */
export interface McpImportOptions {
  readonly servers: readonly McpServerSpec[];
  /** Names of servers whose readOnlyHint is trusted. Default: none. */
  readonly trustHints?: readonly string[];
  /** Names of servers whose idempotentHint is trusted. Default: none. */
  readonly trustIdempotent?: readonly string[];
  /** Backoff between connection attempts (see reconnectDelayMs). Default 250 ms doubling to 10 s. */
  readonly backoff?: ReconnectOptions;
}

/** The MCP servers being imported. */
export interface McpImports {
  /** The registry names of the tools each server has registered now, by server NAME. */
  toolNames(serverName: string): ReadonlySet<string>;
  /** Stops every connection (and stdio process) and removes their tools. */
  close(): Promise<void>;
}

/**
 * Serves the tools of MCP servers as ordinary tools: each server is connected with the official
 * client (see connectMcpServer), its tools listed and registered in the default registry as
 * `mcp.NAME.TOOL` (see createImportedTools), listed again at each `list_changed`, and removed
 * while it is down. A server that cannot be reached at start, or that goes away (a stdio server
 * that exits), is connected again with backoff, without blocking the start. Runs go through the
 * ordinary execution path; the handler calls the server (see callMcpTool).
 */
export function startMcpImports(store: ToolStore, options: McpImportOptions, logger: Logger): McpImports {
  const stop = new AbortController();
  const imports = options.servers.map((server) => importServer(server));
  return {
    toolNames: (serverName) => imports.find((entry) => entry.server.name === serverName)?.names ?? new Set(),
    async close() {
      stop.abort();
      await Promise.all(imports.map((entry) => entry.done));
    },
  };

  function importServer(server: McpServerSpec) {
    const log = logger.child({ mcpServer: server.name });
    let current: McpConnection | undefined;
    const imported = createImportedTools({
      serverName: server.name,
      trust: {
        hints: options.trustHints?.includes(server.name) ?? false,
        idempotent: options.trustIdempotent?.includes(server.name) ?? false,
      },
      store,
      logger: log,
      handlerFor: (mcpName): ToolHandler => {
        const connection = current;
        return (inputs, context) => {
          if (!connection) throw new ProviderError(`MCP server ${quote(server.name)} is not connected`);
          return callMcpTool(server.name, connection, mcpName, inputs, context);
        };
      },
    });
    const refresh = async (connection: McpConnection): Promise<void> => {
      const tools = await listAllTools<McpTool>((cursor) =>
        connection.client.listTools(cursor === undefined ? undefined : { cursor }),
      );
      if (current === connection) await imported.sync(tools);
    };
    const done = superviseConnection<McpConnection>({
      connect: (signal) =>
        connectMcpServer(
          server,
          {
            onToolsChanged: () => {
              const connection = current;
              if (connection)
                refresh(connection).catch((error: unknown) =>
                  log.warn({ err: error }, "MCP tools could not be listed again"),
                );
            },
            onStderr: (line) => log.debug({ stderr: line }, "MCP server stderr"),
          },
          signal,
        ),
      onUp: async (connection) => {
        current = connection;
        await refresh(connection);
        log.info({ tools: [...imported.names] }, "MCP server connected");
      },
      onDown: (connection) => {
        if (current === connection) current = undefined;
        void connection.close().catch(() => undefined);
        void imported.removeAll();
        if (!stop.signal.aborted) log.warn("MCP server disconnected: its tools are removed until it is back");
      },
      onRetry: (error, delayMs, attempt) => reportConnectFailure(log, server, error, delayMs, attempt),
      signal: stop.signal,
      ...(options.backoff ? { backoff: options.backoff } : {}),
    }).then(() => imported.removeAll());
    return { server, names: imported.names, done };
  }
}
