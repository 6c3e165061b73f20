import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";
import { anonymousAdmin, ensureAllowed, isAllowed, type Identity } from "./permissions.js";

/** What a caller wants to do with a run: see it (get, watch, list), cancel it, or approve or reject it. */
export type ExecutionAccess = "read" | "cancel" | "approve" | "reject";

/** The facts about a run that decide who may touch it. */
export interface OwnedRun {
  readonly id: string;
  readonly toolName: string;
  /** Name of the identity that started the run. */
  readonly owner: string;
}

/** Options of the ownership rules. */
export interface ExecutionAccessOptions {
  /** Let the identity that started a run approve it. Default false. */
  readonly allowSelfApproval?: boolean;
}

/** Whether `identity` started `run`. With authentication off every caller is the same anonymous owner. */
export function isOwner(identity: Identity, run: OwnedRun): boolean {
  return identity.name === run.owner;
}

/**
 * Whether `identity` may see `run`: `read` on its tool, and for another identity's run
 * `executions.read_all` on it too. Listings filter with this.
 */
export function mayReadExecution(identity: Identity, run: OwnedRun): boolean {
  return (
    isAllowed(identity, "read", run.toolName) &&
    (isOwner(identity, run) || isAllowed(identity, "executions.read_all", run.toolName))
  );
}

/**
 * Throws PERMISSION_DENIED unless `identity` may do `access` on `run`. Reading needs `read` (and
 * `executions.read_all` for another's run); cancelling needs `execute` (and `executions.cancel_all`
 * for another's run); approving and rejecting need `approve`, and the identity that started a run
 * may not approve it unless `allowSelfApproval`. The anonymous caller of a server without
 * authentication is exempt from the self-approval rule.
 */
export function ensureExecutionAccess(
  identity: Identity,
  access: ExecutionAccess,
  run: OwnedRun,
  options: ExecutionAccessOptions = {},
): void {
  switch (access) {
    case "read":
      ensureAllowed(identity, "read", run.toolName);
      if (!isOwner(identity, run)) ensureAllOf(identity, "executions.read_all", "read", run);
      return;
    case "cancel":
      ensureAllowed(identity, "execute", run.toolName);
      if (!isOwner(identity, run)) ensureAllOf(identity, "executions.cancel_all", "cancel", run);
      return;
    case "approve":
      ensureAllowed(identity, "approve", run.toolName);
      if (isOwner(identity, run) && identity !== anonymousAdmin && !options.allowSelfApproval) {
        throw new ToolRuntimeError(
          "PERMISSION_DENIED",
          ErrorType.PermissionDenied,
          `identity ${quote(identity.name)} started execution ${quote(run.id)} and may not approve it: another identity with "approve" must decide, or the server must allow self-approval`,
          run.toolName,
        );
      }
      return;
    case "reject":
      ensureAllowed(identity, "approve", run.toolName);
      return;
  }
}

function ensureAllOf(
  identity: Identity,
  action: "executions.read_all" | "executions.cancel_all",
  verb: string,
  run: OwnedRun,
): void {
  if (isAllowed(identity, action, run.toolName)) return;
  throw new ToolRuntimeError(
    "PERMISSION_DENIED",
    ErrorType.PermissionDenied,
    `identity ${quote(identity.name)} may not ${verb} execution ${quote(run.id)}, which another identity started: grant it "${action}" on a pattern matching tool ${quote(run.toolName)}`,
    run.toolName,
  );
}
