import type { DefinedTool } from "./tools/define-tool.js";

/** A tool loaded from a module, with where it came from, so that errors can point at it. */
export interface LoadedTool {
  readonly tool: DefinedTool;
  /** The module's path as given (to --tools, say). */
  readonly modulePath: string;
  /** The export that holds it: `greet`, or `tools[2]` for an item of an exported array. */
  readonly exportName: string;
}

/** Where a tool to serve was defined: a module's export, or the built-in tools. */
export type ToolOrigin = LoadedTool | { readonly tool: DefinedTool; readonly builtin: true };

/**
 * Throws an Error when two tools share a name, naming the tool and where each was defined (module
 * path and export, or the built-in tools), so the author knows which export to rename. Checked
 * before the server starts: the registry would otherwise refuse the second with ALREADY_EXISTS and
 * name neither.
 */
export function assertUniqueToolNames(origins: readonly ToolOrigin[]): void {
  const first = new Map<string, ToolOrigin>();
  for (const origin of origins) {
    const earlier = first.get(origin.tool.spec.name);
    if (earlier === undefined) {
      first.set(origin.tool.spec.name, origin);
      continue;
    }
    throw new Error(
      `tool ${JSON.stringify(origin.tool.spec.name)} is defined twice, by ${describeOrigin(earlier)} and by ${describeOrigin(origin)}: rename one of them, or export it once`,
    );
  }
}

function describeOrigin(origin: ToolOrigin): string {
  if ("builtin" in origin) return "the built-in tools (leave them out with --no-builtin-tools)";
  return `module ${JSON.stringify(origin.modulePath)} (export ${JSON.stringify(origin.exportName)})`;
}
