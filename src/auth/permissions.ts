import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { quote } from "../registry/names.js";

/** What an identity may do, on the tools whose names match a grant's patterns. */
export const actions = [
  "read",
  "register",
  "execute",
  "execute_unsafe",
  "approve",
  "provide",
  "executions.read_all",
  "executions.cancel_all",
  "registries.create",
  "metrics.read",
  "admin",
] as const;

/**
 * One permission: `read` (get, list, discover, watch), `register` (register, remove), `execute`
 * (activate, execute, deactivate, run), `execute_unsafe` (execute tools flagged unsafe), `approve`,
 * `provide` (serve tools as a provider), `executions.read_all` (get, watch and list runs that other
 * identities started), `executions.cancel_all` (cancel them), `registries.create` (create a named
 * registry; its patterns match the registry name), `metrics.read` (scrape /metrics; needs the
 * pattern "*", because metrics name every tool), `admin` (everything).
 */
export type Action = (typeof actions)[number];

/** Actions allowed on the tools matching any of `patterns`. */
export interface Grant {
  readonly actions: readonly Action[];
  /**
   * Tool name patterns: "*" matches every tool, "fs.*" every tool in namespace "fs" and below,
   * anything else one exact name.
   */
  readonly patterns: readonly string[];
}

/** A caller the server recognises, with what it may do. */
export interface Identity {
  /** Name used in logs, audit records and messages. */
  readonly name: string;
  readonly grants: readonly Grant[];
}

/** The identity of every caller when authentication is off: may do everything. */
export const anonymousAdmin: Identity = { name: "anonymous", grants: [{ actions: ["admin"], patterns: ["*"] }] };

/** Whether `pattern` matches the tool name `name`. */
export function matchesPattern(pattern: string, name: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith(".*")) return name.startsWith(pattern.slice(0, -1));
  return pattern === name;
}

/** Whether `identity` may do `action` on the tool `toolName`. */
export function isAllowed(identity: Identity, action: Action, toolName: string): boolean {
  return identity.grants.some(
    (grant) =>
      (grant.actions.includes(action) || grant.actions.includes("admin")) &&
      grant.patterns.some((pattern) => matchesPattern(pattern, toolName)),
  );
}

/** Throws PERMISSION_DENIED unless `identity` may do `action` on `toolName`. */
export function ensureAllowed(identity: Identity, action: Action, toolName: string): void {
  if (isAllowed(identity, action, toolName)) return;
  throw new ToolRuntimeError(
    "PERMISSION_DENIED",
    ErrorType.PermissionDenied,
    `identity ${quote(identity.name)} may not ${action.replace("_", " ")} tool ${quote(toolName)}: grant it "${action}" on a pattern matching the name`,
    toolName,
  );
}
