import { create, toJsonString, type JsonObject } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import { ToolSpecSchema, type ToolSpec } from "../../../gen/toolruntime/v1/tool_pb.js";
import { isToolRuntimeError } from "../../errors/tool-runtime-error.js";
import type { ToolHandler } from "../../registry/tool-definition.js";
import type { ToolStore } from "../../stores/tool-store.js";
import { toImportedFlags, type McpToolAnnotations, type McpTrust } from "./annotation-flags.js";
import { mapToolNames } from "./map-tool-names.js";

/** An MCP tool as tools/list gives it (the fields the import reads). */
export interface McpTool {
  readonly name: string;
  readonly title?: string | undefined;
  readonly description?: string | undefined;
  readonly inputSchema?: Record<string, unknown> | undefined;
  readonly outputSchema?: Record<string, unknown> | undefined;
  readonly annotations?: McpToolAnnotations | undefined;
}

/** What {@link createImportedTools} needs. */
export interface ImportedToolsOptions {
  /** The `--mcp-server` NAME: tools are registered as `mcp.NAME.TOOL`. */
  readonly serverName: string;
  readonly trust: McpTrust;
  /** Where the tools are registered (the default registry). */
  readonly store: ToolStore;
  readonly logger: Logger;
  /** The handler of one MCP tool, bound to the live connection. */
  readonly handlerFor: (mcpName: string) => ToolHandler;
}

/** The tools of one MCP server in the registry, kept equal to its latest listing. */
export interface ImportedTools {
  /** Registers, replaces and removes tools so the registry holds exactly `tools` (mapped). */
  sync(tools: readonly McpTool[]): Promise<void>;
  /** Removes every tool of the server (its connection is down). */
  removeAll(): Promise<void>;
  /** The registry names registered now. */
  readonly names: ReadonlySet<string>;
}

const maxDescriptionLength = 4096;

/**
 * Keeps one MCP server's tools registered as `mcp.NAME.TOOL` (see mapToolNames; refused names are
 * logged), with flags from its hints as far as the operator trusts them (toImportedFlags), its
 * schemas (a schema the registry refuses, e.g. an unknown keyword, is dropped with a warning, since
 * the MCP server checks its inputs itself) and a handler calling the server. Syncs run one at a
 * time. A tool whose name is taken by another tool is logged and skipped.
 */
export function createImportedTools(options: ImportedToolsOptions): ImportedTools {
  const { serverName, store, logger } = options;
  const registered = new Map<string, string>(); // registry name → spec fingerprint
  const names = new Set<string>();
  const syncNames = (): void => {
    names.clear();
    for (const name of registered.keys()) names.add(name);
  };
  let queue: Promise<void> = Promise.resolve();
  const serially = (work: () => Promise<void>): Promise<void> => (queue = queue.then(work, work));

  const register = async (spec: ToolSpec, mcpName: string): Promise<void> => {
    const registration = { spec, handler: options.handlerFor(mcpName), hooks: undefined };
    try {
      await store.register("", registration);
    } catch (error) {
      const schemaRefused =
        isToolRuntimeError(error) && error.code === "INVALID_ARGUMENT" && (spec.inputSchema || spec.outputSchema);
      if (!schemaRefused) throw error;
      logger.warn(
        { mcpServer: serverName, tool: spec.name, err: error },
        "MCP tool schema refused: registered without it",
      );
      const bare = create(ToolSpecSchema, { ...spec, inputSchema: undefined, outputSchema: undefined });
      await store.register("", { ...registration, spec: bare });
    }
  };
  const remove = async (name: string): Promise<void> => {
    registered.delete(name);
    await store.remove("", name).catch((error: unknown) => {
      logger.warn({ mcpServer: serverName, tool: name, err: error }, "MCP tool could not be removed");
    });
  };

  return {
    names,
    sync: (tools) =>
      serially(async () => {
        const { mapped, refused } = mapToolNames(
          serverName,
          tools.map((tool) => tool.name),
        );
        for (const { mcpName, reason } of refused) logger.warn({ mcpServer: serverName, mcpName }, reason);
        const byMcpName = new Map(tools.map((tool) => [tool.name, tool]));
        for (const name of [...registered.keys()]) if (!mapped.has(name)) await remove(name);
        for (const [name, mcpName] of mapped) {
          const spec = toSpec(name, byMcpName.get(mcpName) as McpTool, options.trust);
          const fingerprint = toJsonString(ToolSpecSchema, spec);
          if (registered.get(name) === fingerprint) continue;
          if (registered.has(name)) await remove(name);
          try {
            await register(spec, mcpName);
            registered.set(name, fingerprint);
          } catch (error) {
            logger.warn({ mcpServer: serverName, tool: name, err: error }, "MCP tool could not be registered");
          }
        }
        syncNames();
      }),
    removeAll: () =>
      serially(async () => {
        for (const name of [...registered.keys()]) await remove(name);
        syncNames();
      }),
  };
}

/** The spec an MCP tool is registered with. */
function toSpec(name: string, tool: McpTool, trust: McpTrust): ToolSpec {
  const flags = toImportedFlags(tool.annotations, trust);
  const description = tool.description ?? tool.title ?? "";
  return create(ToolSpecSchema, {
    name,
    description: description.slice(0, maxDescriptionLength),
    toolType: "mcp",
    capabilities: flags,
    ...(tool.inputSchema ? { inputSchema: withoutDialect(tool.inputSchema) } : {}),
    ...(tool.outputSchema ? { outputSchema: withoutDialect(tool.outputSchema) } : {}),
  });
}

/** A schema without `$schema`: the registry reads every schema as draft 2020-12 anyway. */
function withoutDialect(schema: Record<string, unknown>): JsonObject {
  const rest = { ...schema };
  delete rest["$schema"];
  return rest as JsonObject;
}
