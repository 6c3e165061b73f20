import { isToolName } from "../../registry/names.js";

/** Result of mapping one MCP server's tool names to registry names. */
export interface MappedToolNames {
  /** Registry name (`mcp.SERVER.TOOL`) → the MCP tool name to call. */
  readonly mapped: ReadonlyMap<string, string>;
  /** MCP tool names refused, with the reason (collision or unmappable), for the log. */
  readonly refused: ReadonlyArray<{ readonly mcpName: string; readonly reason: string }>;
}

/**
 * Maps one MCP tool name to the last segment of a registry name: lowercased, every character other
 * than a-z, 0-9, "_" and "-" becomes "_", a leading character that is not a letter gets a "t"
 * prefix, cut to 64 characters. Returns undefined when nothing usable remains (an empty name).
 */
export function toToolSegment(mcpName: string): string | undefined {
  if (mcpName === "") return undefined;
  let segment = mcpName.toLowerCase().replace(/[^a-z0-9_-]/g, "_");
  if (!/^[a-z]/.test(segment)) segment = `t${segment}`;
  return segment.slice(0, 64);
}

/**
 * Maps the tool names of MCP server `server` to `mcp.SERVER.SEGMENT`. When two MCP names map to the
 * same registry name, neither is registered (a caller could not tell which one it runs), and both
 * are reported in `refused`. Names whose full registry name is still invalid (too long) are refused.
 */
export function mapToolNames(server: string, mcpNames: readonly string[]): MappedToolNames {
  const byTarget = new Map<string, string[]>();
  const refused: Array<{ mcpName: string; reason: string }> = [];
  for (const mcpName of mcpNames) {
    const segment = toToolSegment(mcpName);
    const target = segment === undefined ? undefined : `mcp.${server}.${segment}`;
    if (target === undefined || !isToolName(target)) {
      refused.push({ mcpName, reason: `MCP tool name ${JSON.stringify(mcpName)} cannot be mapped to a tool name` });
      continue;
    }
    byTarget.set(target, [...(byTarget.get(target) ?? []), mcpName]);
  }
  const mapped = new Map<string, string>();
  for (const [target, sources] of byTarget) {
    if (sources.length === 1) {
      mapped.set(target, sources[0] as string);
      continue;
    }
    const names = sources.map((source) => JSON.stringify(source)).join(", ");
    for (const mcpName of sources) {
      refused.push({ mcpName, reason: `MCP tool names ${names} all map to "${target}": none of them is registered` });
    }
  }
  return { mapped, refused };
}
