import { pathToFileURL } from "node:url";
import path from "node:path";
import { defineTool, isDefinedTool, type DefinedTool, type ToolDefinitionInit } from "./tools/define-tool.js";

/**
 * Imports a module of tools and returns every tool it exports: each export that is a tool made
 * by `defineTool`, a plain definition (`{ name, handler, ... }`), or an array of either. Throws an
 * Error naming the module when it cannot be imported or exports no tool.
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
      else if (isToolDefinitionInit(candidate)) tools.push(defineTool(candidate));
    }
  }
  if (tools.length === 0) {
    throw new Error(
      `tool module ${JSON.stringify(modulePath)} exports no tool: export tools made with defineTool(), or objects with "name" and "handler"`,
    );
  }
  return tools;
}

function isToolDefinitionInit(value: unknown): value is ToolDefinitionInit {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { name?: unknown }).name === "string" &&
    typeof (value as { handler?: unknown }).handler === "function"
  );
}
