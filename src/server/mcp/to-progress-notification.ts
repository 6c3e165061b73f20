import type { RunEvent } from "../../../gen/toolruntime/v1/run_event_pb.js";
import { toProgressMessage } from "./to-progress-message.js";

/** The parameters of an MCP `notifications/progress`, without its token. */
export interface McpProgress {
  /** The run event's sequence number: it increases with every notification, as MCP requires. */
  readonly progress: number;
  /** Set when the event carries the tool's fraction f > 0: `progress / f`, so `progress / total` is f. */
  readonly total?: number;
  readonly message: string;
}

/**
 * The MCP progress notification a run event becomes, or undefined for events an MCP client has no
 * use for (see toProgressMessage).
 *
 * `progress` stays the event sequence (a gRPC client reattaches after it, and MCP wants it to grow
 * with every notification even when a tool's fraction stands still or starts again on a retry);
 * the tool's fraction travels as the ratio `progress / total`, which is what hosts draw as a
 * percentage. A fraction of 0 has no finite total, so it is sent without one, as are events that
 * carry no fraction.
 */
export function toProgressNotification(event: RunEvent, toolName: string): McpProgress | undefined {
  const message = toProgressMessage(event, toolName);
  if (message === undefined) return undefined;
  const progress = Number(event.sequence);
  const fraction = event.event.case === "progress" ? event.event.value.fraction : undefined;
  if (fraction === undefined || !(fraction > 0)) return { progress, message };
  return { progress, total: progress / fraction, message };
}
