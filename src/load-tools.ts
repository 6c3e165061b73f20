import { pathToFileURL } from "node:url";
import path from "node:path";
import { suggestName } from "./errors/did-you-mean.js";
import { assertUniqueToolNames, type LoadedTool } from "./unique-tool-names.js";
import { defineTool, isDefinedTool, type DefinedTool, type ToolDefinitionInit } from "./tools/define-tool.js";

/**
 * Imports a module of tools and returns every tool it exports: each export that is a tool made
 * by `defineTool`, a plain definition (`{ name, handler, ... }`), or an array of either. A plain
 * definition is checked like `defineTool` checks it (unknown keys are refused with the nearest known
 * one), and so is an object with a `name` and a key that looks like a misspelt `handler`. Throws an
 * Error naming the module when it cannot be imported, exports no tool, or exports an invalid
 * definition, and one naming both exports when two different tools share a name. The same object
 * exported twice (alone and in an array, say) counts once.
 */
export async function loadToolModule(modulePath: string): Promise<DefinedTool[]> {
  return (await loadToolModuleWithOrigins(modulePath)).map((loaded) => loaded.tool);
}

/** {@link loadToolModule}, with the module and export of each tool. */
export async function loadToolModuleWithOrigins(modulePath: string): Promise<LoadedTool[]> {
  const url = pathToFileURL(path.resolve(modulePath)).href;
  let exports: Record<string, unknown>;
  try {
    exports = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`tool module ${JSON.stringify(modulePath)} could not be loaded: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const loaded: LoadedTool[] = [];
  const seen = new Set<unknown>();
  for (const [name, value] of Object.entries(exports)) {
    const candidates = Array.isArray(value)
      ? value.map((item: unknown, index) => [`${name}[${index}]`, item] as const)
      : [[name, value] as const];
    for (const [exportName, candidate] of candidates) {
      if (seen.has(candidate)) continue;
      if (isDefinedTool(candidate)) loaded.push({ tool: candidate, modulePath, exportName });
      else if (isToolDefinitionInit(candidate))
        loaded.push({ tool: defineFromModule(modulePath, candidate), modulePath, exportName });
      else continue;
      seen.add(candidate);
    }
  }
  if (loaded.length === 0) {
    throw new Error(
      `tool module ${JSON.stringify(modulePath)} exports no tool: export tools made with defineTool(), or objects with "name" and "handler"`,
    );
  }
  assertUniqueToolNames(loaded);
  return loaded;
}

function defineFromModule(modulePath: string, definition: ToolDefinitionInit): DefinedTool {
  try {
    return defineTool(definition);
  } catch (error) {
    throw new Error(`tool module ${JSON.stringify(modulePath)}: ${(error as Error).message}`, { cause: error });
  }
}

function isToolDefinitionInit(value: unknown): value is ToolDefinitionInit {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { name?: unknown }).name === "string" &&
    Object.keys(value).some((key) => key === "handler" || suggestName(key, ["handler"]) === "handler")
  );
}
