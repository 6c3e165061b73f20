/** MCP tool annotations as sent by a server (all optional hints). */
export interface McpToolAnnotations {
  readonly readOnlyHint?: boolean | undefined;
  readonly destructiveHint?: boolean | undefined;
  readonly idempotentHint?: boolean | undefined;
  readonly openWorldHint?: boolean | undefined;
}

/** What the operator trusts about one MCP server's hints. Both default to false. */
export interface McpTrust {
  /** `--mcp-trust-hints NAME`: readOnlyHint may make a tool read_only. */
  readonly hints: boolean;
  /** `--mcp-trust-idempotent NAME`: idempotentHint may make a tool idempotent. */
  readonly idempotent: boolean;
}

/** The capability flags an imported MCP tool gets. */
export interface ImportedFlags {
  readonly readOnly: boolean;
  readonly writes: boolean;
  readonly idempotent: boolean;
}

/**
 * Turns untrusted MCP hints into capability flags, conservatively:
 * - read_only only when the operator trusts the server's hints and readOnlyHint is true; otherwise
 *   writes=true (MCP's own default for a tool without hints is destructive);
 * - idempotent only when the operator trusts the server's idempotency and idempotentHint is true
 *   (MCP defines idempotentHint only for tools that write, so a read_only tool is idempotent too
 *   when idempotency is trusted).
 */
export function toImportedFlags(annotations: McpToolAnnotations | undefined, trust: McpTrust): ImportedFlags {
  const readOnly = trust.hints && annotations?.readOnlyHint === true;
  const idempotent = trust.idempotent && (readOnly || annotations?.idempotentHint === true);
  return { readOnly, writes: !readOnly, idempotent };
}
