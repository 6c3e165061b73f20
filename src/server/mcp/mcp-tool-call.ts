import type { ElicitRequestFormParams } from "@modelcontextprotocol/server";
import type { Identity } from "../../auth/permissions.js";

/**
 * How the gateway may ask the calling client itself to approve a run awaiting approval:
 * - "request" (2025-11-25): an `elicitation/create` request on the call's SSE stream, sent with
 *   the given JSON-RPC id; the client answers in a POST of its own (see the endpoint);
 * - "input_required" (2026-07-28): the call answers `input_required` with the question, and the
 *   client retries it with the answer (see {@link McpToolCall.retry}).
 */
export type McpApprovalChannel =
  | {
      readonly kind: "request";
      readonly send: (id: string, params: ElicitRequestFormParams) => Promise<void>;
    }
  | { readonly kind: "input_required" };

/** One MCP `tools/call`, as the gateway sees it. */
export interface McpToolCall {
  readonly name: string;
  readonly arguments: unknown;
  /** The request's `_meta`: the progress token and toolruntime's own keys (see mcpMeta). */
  readonly meta: Readonly<Record<string, unknown>> | undefined;
  readonly caller: Identity;
  /** Aborts when the client cancels the request or drops it. */
  readonly signal: AbortSignal;
  /** Sends a `notifications/progress` related to the request. */
  readonly notifyProgress: (params: {
    progressToken: string | number;
    progress: number;
    total?: number;
    message: string;
  }) => Promise<void>;
  /**
   * How to ask the client to approve the run, when the client declared form elicitation;
   * undefined otherwise. It is used only when the caller may approve its own run.
   */
  readonly approval: McpApprovalChannel | undefined;
  /** Whether the server lets an identity approve the runs it started (`--allow-self-approval`). */
  readonly allowSelfApproval: boolean;
  /** A 2026-07-28 retry of a call that asked for approval: what it carries back. */
  readonly retry:
    | { readonly requestState: string; readonly inputResponses: Readonly<Record<string, unknown>> | undefined }
    | undefined;
}
