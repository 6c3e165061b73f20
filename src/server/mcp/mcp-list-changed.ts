import type { ServerNotifier } from "@modelcontextprotocol/server";
import { isAllowed, type Identity } from "../../auth/permissions.js";
import type { ToolChange } from "../../registry/change-log.js";
import type { ToolRegistry } from "../../registry/tool-registry.js";

/** The part of a Node response (HTTP/1.1 or HTTP/2) a notification stream uses. */
export interface StreamResponse {
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: string): unknown;
  end(): unknown;
  once(event: "close", listener: () => void): unknown;
}

/** Interval of SSE comment frames on an idle listen stream, in milliseconds (under proxies' idle timeouts). */
const keepAliveMs = 15_000;

const listChangedFrame = `event: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" })}\n\n`;

/** Registry changes as MCP `notifications/tools/list_changed`, to both protocol eras. */
export interface McpListChanged {
  /**
   * Serves a 2025-era standalone SSE stream (GET /mcp) carrying `notifications/tools/list_changed`
   * for the changes of tools `caller` may read, until the client or the server closes it.
   */
  openStream(caller: Identity, response: StreamResponse): void;
  /** Ends every stream and stops following the registry. */
  close(): void;
}

/**
 * Follows `registry` (the subscription that also feeds WatchTools) and tells MCP clients when its
 * tools changed: 2026-07-28 clients through the SDK's `subscriptions/listen` streams (`notifier`),
 * 2025-era clients through the SSE streams opened with {@link McpListChanged.openStream}, each
 * only for changes to tools its caller may read. Changes within one turn of the event loop are
 * told once. A reset of the registry (a shared store reloaded) is a change of every tool.
 */
export function followRegistryForMcp(registry: ToolRegistry, notifier: ServerNotifier): McpListChanged {
  const streams = new Map<StreamResponse, { caller: Identity; pending: boolean }>();
  let modernPending = false;
  const flush = (): void => {
    if (modernPending) notifier.toolsChanged();
    modernPending = false;
    for (const [response, stream] of streams) {
      if (stream.pending) response.write(listChangedFrame);
      stream.pending = false;
    }
  };
  let scheduled = false;
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      flush();
    });
  };
  const onChange = (change: ToolChange | undefined): void => {
    modernPending = true;
    for (const stream of streams.values()) {
      if (change === undefined || isAllowed(stream.caller, "read", change.spec.name)) stream.pending = true;
    }
    schedule();
  };
  const unsubscribe = registry.subscribe(onChange, () => onChange(undefined));
  return {
    openStream(caller, response) {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache, no-store" });
      // An empty comment sends the headers now, so the client knows the stream is open.
      response.write(": listening for notifications/tools/list_changed\n\n");
      streams.set(response, { caller, pending: false });
      const keepAlive = setInterval(() => response.write(": keepalive\n\n"), keepAliveMs);
      response.once("close", () => {
        clearInterval(keepAlive);
        streams.delete(response);
      });
    },
    close() {
      unsubscribe();
      for (const response of streams.keys()) response.end();
      streams.clear();
    },
  };
}
