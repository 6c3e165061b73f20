import type { ElicitRequestFormParams } from "@modelcontextprotocol/server";
import { ensureExecutionAccess, type OwnedRun } from "../../auth/execution-access.js";
import type { Identity } from "../../auth/permissions.js";
import { ErrorType, ToolRuntimeError } from "../../errors/tool-runtime-error.js";
import type { ExecutionManager } from "../../executions/execution-manager.js";

/** The key of the approval question in a 2026-07-28 `inputRequests` (and of its answer in `inputResponses`). */
export const approvalInputKey = "approval";

/** Longest excerpt of a run's inputs an approval question shows, in characters. */
const maxInputsExcerptChars = 512;

/** A decision an MCP client sent back: approve or reject, with the approver's comment. */
export interface ApprovalAnswer {
  readonly approved: boolean;
  readonly comment: string;
}

/**
 * The form-mode elicitation that asks the calling client to approve or reject a run awaiting
 * approval: a message naming the tool, the execution id and the inputs digest (with an excerpt of
 * the inputs), and a form with a required "decision" ("approve" or "reject") and an optional
 * "comment" recorded with the decision.
 */
export function approvalElicitation(
  toolName: string,
  executionId: string,
  inputsDigest: string,
  inputs: unknown,
): ElicitRequestFormParams {
  const json = JSON.stringify(inputs) ?? "{}";
  const excerpt = json.length > maxInputsExcerptChars ? `${json.slice(0, maxInputsExcerptChars)}…` : json;
  return {
    mode: "form",
    message:
      `Tool "${toolName}" requires human approval before it runs. ` +
      `Approve run ${executionId} (inputs digest ${inputsDigest}) with inputs ${excerpt}?`,
    requestedSchema: {
      type: "object",
      properties: {
        decision: {
          type: "string",
          title: "Decision",
          description: "approve lets the run start; reject ends it with ApprovalRejectedError",
          enum: ["approve", "reject"],
        },
        comment: {
          type: "string",
          title: "Comment",
          description: "Optional: recorded with the decision",
          maxLength: 1024,
        },
      },
      required: ["decision"],
    },
  };
}

/**
 * Reads an elicitation result (`{ action, content }`, from a client: untrusted) as a decision.
 * "accept" with decision "approve" approves; "accept" with "reject", "decline" and "cancel"
 * reject, with the form's comment or one saying how the client answered; "accept" without a
 * valid decision rejects too (never approve on a malformed answer). Undefined when `value` is
 * no elicitation result at all.
 */
export function readApprovalAnswer(value: unknown): ApprovalAnswer | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const { action, content } = value as { action?: unknown; content?: unknown };
  const form = content !== null && typeof content === "object" ? (content as Record<string, unknown>) : {};
  const comment = typeof form["comment"] === "string" ? form["comment"] : "";
  switch (action) {
    case "accept":
      if (form["decision"] === "approve") return { approved: true, comment };
      if (form["decision"] === "reject") return { approved: false, comment };
      return { approved: false, comment: comment || 'the MCP client accepted without a "decision"' };
    case "decline":
      return { approved: false, comment: comment || "declined in the MCP client" };
    case "cancel":
      return { approved: false, comment: comment || "dismissed in the MCP client" };
    default:
      return undefined;
  }
}

/**
 * Whether declared client capabilities cover a form-mode elicitation: `elicitation.form`, or a
 * bare `elicitation: {}` (what it meant before elicitation had modes).
 */
export function declaresFormElicitation(capabilities: unknown): boolean {
  const elicitation = (capabilities as { elicitation?: unknown } | undefined)?.elicitation;
  if (elicitation === null || typeof elicitation !== "object") return false;
  const modes = elicitation as { form?: unknown; url?: unknown };
  return modes.form !== undefined || modes.url === undefined;
}

/**
 * Whether `caller` may approve its own `run`, which is what asking it through MCP amounts to: the
 * same rule as ApproveExecution (`approve` on the tool, and self-approval allowed, or the
 * anonymous caller of a server without authentication).
 */
export function mayApproveOwnRun(caller: Identity, run: OwnedRun, allowSelfApproval: boolean): boolean {
  try {
    ensureExecutionAccess(caller, "approve", run, { allowSelfApproval });
    return true;
  } catch {
    return false;
  }
}

/**
 * Decides `run` with an answer an MCP client gave, through the same checks and the same
 * `decideRun` as ApproveExecution and RejectExecution (decided by `caller`). Returns false when
 * the run was no longer awaiting a decision (another decision, or its timeout, came first).
 * Throws what those RPCs throw otherwise: PERMISSION_DENIED, NOT_FOUND, INVALID_ARGUMENT (another
 * inputs digest).
 */
export async function decideFromMcp(
  executions: ExecutionManager,
  caller: Identity,
  run: OwnedRun,
  inputsDigest: string,
  answer: ApprovalAnswer,
  allowSelfApproval: boolean,
): Promise<boolean> {
  ensureExecutionAccess(caller, answer.approved ? "approve" : "reject", run, { allowSelfApproval });
  try {
    await executions.decideRun(run.id, answer.approved, inputsDigest, caller.name, answer.comment);
    return true;
  } catch (error) {
    if (error instanceof ToolRuntimeError && error.errorType === ErrorType.ApprovalNotPending) return false;
    throw error;
  }
}
