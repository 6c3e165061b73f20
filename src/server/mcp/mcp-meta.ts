/**
 * The `_meta` keys toolruntime reads and writes on MCP messages, all under its reverse-DNS prefix
 * `io.toolruntime/` (MCP reserves `io.modelcontextprotocol/` and leaves other prefixes to
 * implementations).
 */
export const mcpMeta = {
  /** On a Tool: the six capability flags, snake_case as in the contract (`read_only`, …). */
  capabilities: "io.toolruntime/capabilities",
  /** On a Tool: the registry version at which its spec was registered. */
  version: "io.toolruntime/version",
  /** On a tools/call result: the run's execution id, for GetExecution or WatchExecution. */
  executionId: "io.toolruntime/execution_id",
  /** On a failed tools/call result: the whole `ToolError` (`tool_name`, `error_type`, `details`). */
  error: "io.toolruntime/error",
  /** On a tools/call result: the result's metadata (timings, attempts, approval…). */
  metadata: "io.toolruntime/metadata",
  /** On a JSON-RPC error's data: the `ToolError` of a refused call. */
  toolError: "io.toolruntime/tool_error",
  /** In a tools/call request: `true` acknowledges running a tool flagged `unsafe`. */
  acknowledgeUnsafe: "io.toolruntime/acknowledge_unsafe",
  /** In a tools/call request: an idempotency key (at most 128 characters). */
  idempotencyKey: "io.toolruntime/idempotency_key",
  /** In a tools/call request: the run's timeout, in milliseconds. */
  timeoutMs: "io.toolruntime/timeout_ms",
} as const;
