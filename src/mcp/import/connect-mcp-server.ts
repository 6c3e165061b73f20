import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { McpStartError } from "./mcp-start-error.js";
import type { McpServerSpec } from "./parse-mcp-server.js";
import { StdioChildTransport } from "./stdio-child-transport.js";

/** A live client connection to one MCP server. */
export interface McpConnection {
  readonly client: Client;
  /** Settles when the connection is gone (the child exited, the transport closed). */
  readonly closed: Promise<void>;
  /** Closes the connection (and stops a stdio server's process). */
  close(): Promise<void>;
  /**
   * Sends the server's `notifications/progress` carrying `token` to `listener` until the returned
   * function is called. (The client's own `onprogress` loses a notification that arrives in the same
   * read as the response: it dispatches notifications a microtask later but forgets the request at
   * once.)
   */
  onProgress(token: string, listener: (progress: McpProgress) => void): () => void;
}

/** One progress notification of a server. */
export interface McpProgress {
  readonly progress: number;
  readonly total?: number | undefined;
  readonly message?: string | undefined;
}

/** What a connection reports while it is up. */
export interface McpConnectionHooks {
  /** The server said its tools changed (`notifications/tools/list_changed`). */
  readonly onToolsChanged: () => void;
  /** A stdio server's stderr line, for the log. */
  readonly onStderr?: (line: string) => void;
}

/**
 * Connects to `server` with the official v2 client: a stdio server is started as a child process
 * (no shell; the 2025 handshake, since probing for 2026-07-28 would start the command twice); an
 * HTTP server is probed for 2026-07-28 and falls back to the 2025 handshake. Rejects when the
 * server cannot be started or reached (a stdio server with a {@link McpStartError} that carries its
 * exit and last stderr lines), or `signal` aborts first.
 */
export async function connectMcpServer(
  server: McpServerSpec,
  hooks: McpConnectionHooks,
  signal: AbortSignal,
): Promise<McpConnection> {
  const client = new Client(
    { name: "toolruntime", version: "0.1.0" },
    {
      listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: () => hooks.onToolsChanged() } },
      ...(server.kind === "http" ? { versionNegotiation: { mode: "auto" as const } } : {}),
    },
  );
  const progressListeners = new Map<string, (progress: McpProgress) => void>();
  client.setNotificationHandler("notifications/progress", (notification) => {
    const { progressToken, ...progress } = notification.params;
    progressListeners.get(String(progressToken))?.(progress);
  });
  let markClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  client.onclose = () => markClosed();
  const transport =
    server.kind === "stdio"
      ? new StdioChildTransport({ command: server.command, args: [...server.args] })
      : new StreamableHTTPClientTransport(server.url);
  if (transport instanceof StdioChildTransport && hooks.onStderr) {
    const onStderr = hooks.onStderr;
    transport.stderr?.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) if (line !== "") onStderr(line);
    });
  }
  const onAbort = (): void => void client.close().catch(() => undefined);
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    await client.connect(transport);
    signal.throwIfAborted();
  } catch (error) {
    await client.close().catch(() => undefined);
    if (transport instanceof StdioChildTransport && !signal.aborted)
      throw new McpStartError(await transport.report(), error);
    throw error;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  return {
    client,
    closed,
    close: () => client.close(),
    onProgress(token, listener) {
      progressListeners.set(token, listener);
      return () => progressListeners.delete(token);
    },
  };
}
