import { invalidRequest } from "../../errors/tool-runtime-error.js";

// What an approval asked through MCP carries to the request that brings its answer. Both are
// pointers, not credentials: whoever presents one is checked against the stored run again
// (identity, permissions, tool, inputs digest), so a forged one reaches nothing its sender could
// not reach with ApproveExecution or GetExecution.

const requestIdPrefix = "io.toolruntime/approval:";

/** The run an approval question names: its id and the inputs digest it was shown. */
export interface ApprovalTarget {
  readonly executionId: string;
  readonly inputsDigest: string;
}

/**
 * The JSON-RPC id of a 2025-era `elicitation/create` request asking to approve a run. The client's
 * answer is a POST of its own that any replica may receive with no state of the call: the id
 * names the run and the digest, so the answer is decided from the id alone.
 */
export function toApprovalRequestId(target: ApprovalTarget): string {
  return `${requestIdPrefix}${target.executionId}:${target.inputsDigest}`;
}

/** The run a JSON-RPC response answers, when its id is one {@link toApprovalRequestId} made. */
export function parseApprovalRequestId(id: unknown): ApprovalTarget | undefined {
  if (typeof id !== "string" || !id.startsWith(requestIdPrefix)) return undefined;
  const [executionId, inputsDigest, ...rest] = id.slice(requestIdPrefix.length).split(":");
  if (!executionId || !inputsDigest || rest.length > 0) return undefined;
  return { executionId, inputsDigest };
}

/** What a 2026-07-28 tools/call that asked for approval hands its retry (as `requestState`). */
export interface ApprovalRequestState extends ApprovalTarget {
  /** Sequence number of the last event the first request forwarded as progress. */
  readonly afterSequence: number;
  /** Whether the first request started the run (so the retry cancels it when dropped). */
  readonly owned: boolean;
}

/** `state` as the opaque `requestState` string (base64url JSON). */
export function toRequestState(state: ApprovalRequestState): string {
  const json = JSON.stringify({
    execution_id: state.executionId,
    inputs_digest: state.inputsDigest,
    after_sequence: state.afterSequence,
    owned: state.owned,
  });
  return Buffer.from(json, "utf8").toString("base64url");
}

/** Reads a `requestState` made by {@link toRequestState}. Throws INVALID_ARGUMENT for anything else. */
export function parseRequestState(text: string, toolName: string): ApprovalRequestState {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    value = undefined;
  }
  const fields = (value ?? {}) as Record<string, unknown>;
  const executionId = fields["execution_id"];
  const inputsDigest = fields["inputs_digest"];
  const afterSequence = fields["after_sequence"];
  const owned = fields["owned"];
  if (
    typeof executionId !== "string" ||
    executionId === "" ||
    typeof inputsDigest !== "string" ||
    typeof afterSequence !== "number" ||
    !Number.isSafeInteger(afterSequence) ||
    afterSequence < 0 ||
    typeof owned !== "boolean"
  ) {
    throw invalidRequest(
      "requestState is not one this server gave: retry the tools/call with the requestState of its input_required result, unchanged",
      toolName,
    );
  }
  return { executionId, inputsDigest, afterSequence, owned };
}
