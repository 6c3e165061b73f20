import { pathToFileURL } from "node:url";
import path from "node:path";
import { suggestName } from "./errors/did-you-mean.js";
import { defineTool, isDefinedTool, type DefinedTool, type ToolDefinitionInit } from "./tools/define-tool.js";

/**
 * Imports a module of tools and returns every tool it exports: each export that is a tool made
 * by `defineTool`, a plain definition (`{ name, handler, ... }`), or an array of either. A plain
 * definition is checked like `defineTool` checks it (unknown keys are refused with the nearest known
 * one), and so is an object with a `name` and a key that looks like a misspelt `handler`. Throws an
 * Error naming the module when it cannot be imported, exports no tool, or exports an invalid
 * definition.
 */
export async function loadToolModule(modulePath: string): Promise<DefinedTool[]> {
  const url = pathToFileURL(path.resolve(modulePath)).href;
  let exports: Record<string, unknown>;
  try {
    exports = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`tool module ${JSON.stringify(modulePath)} could not be loaded: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const tools: DefinedTool[] = [];
  for (const value of Object.values(exports)) {
    for (const candidate of Array.isArray(value) ? value : [value]) {
      if (isDefinedTool(candidate)) tools.push(candidate);
      else if (isToolDefinitionInit(candidate)) tools.push(defineFromModule(modulePath, candidate));
    }
  }
  if (tools.length === 0) {
    throw new Error(
      `tool module ${JSON.stringify(modulePath)} exports no tool: export tools made with defineTool(), or objects with "name" and "handler"`,
    );
  }
  return tools;
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
