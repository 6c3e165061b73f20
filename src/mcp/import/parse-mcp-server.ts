import { invalidRequest, type ToolRuntimeError } from "../../errors/tool-runtime-error.js";
import { checkSegmentName, quote } from "../../registry/names.js";
import { splitCommandLine } from "./split-command-line.js";

/** An MCP server reached by starting a child process and speaking MCP over its stdio. */
export interface StdioMcpServer {
  readonly kind: "stdio";
  /** The segment its tools are registered under: `mcp.NAME.TOOL`. */
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
}

/** An MCP server reached over Streamable HTTP. */
export interface HttpMcpServer {
  readonly kind: "http";
  /** The segment its tools are registered under: `mcp.NAME.TOOL`. */
  readonly name: string;
  readonly url: URL;
}

/** One `--mcp-server` value, parsed. */
export type McpServerSpec = StdioMcpServer | HttpMcpServer;

/**
 * Parses one `--mcp-server` value: `NAME=https://…` or `NAME=http://…` (Streamable HTTP), else
 * `NAME=COMMAND ARGS…` (stdio), split by {@link splitCommandLine}. NAME must be one valid name
 * segment. Throws INVALID_ARGUMENT naming the value and what would fix it.
 */
export function parseMcpServer(value: string): McpServerSpec {
  const equals = value.indexOf("=");
  if (equals < 0) throw bad(value, "expected NAME=COMMAND ARGS... or NAME=https://...");
  const name = value.slice(0, equals);
  const target = value.slice(equals + 1).trim();
  if (name === "") throw bad(value, "NAME is empty");
  const nameError = checkSegmentName(name, "mcp server name");
  if (nameError) throw bad(value, nameError.message);
  if (target === "") throw bad(value, 'the command or URL after "=" is empty');
  if (/^https?:\/\//i.test(target)) {
    if (!URL.canParse(target)) throw bad(value, `${quote(target)} is not a valid URL`);
    return { kind: "http", name, url: new URL(target) };
  }
  let words: string[];
  try {
    words = splitCommandLine(target);
  } catch (error) {
    throw bad(value, (error as Error).message);
  }
  const [command, ...args] = words;
  if (command === undefined) throw bad(value, 'the command after "=" is empty');
  return { kind: "stdio", name, command, args };
}

/** Checks that no two servers share a NAME; throws INVALID_ARGUMENT naming the duplicate. */
export function checkDistinctNames(servers: readonly McpServerSpec[]): void {
  const seen = new Set<string>();
  for (const server of servers) {
    if (seen.has(server.name)) {
      throw invalidRequest(
        `mcp server name ${quote(server.name)} is given twice: give each --mcp-server a distinct NAME`,
      );
    }
    seen.add(server.name);
  }
}

function bad(value: string, why: string): ToolRuntimeError {
  return invalidRequest(`--mcp-server value ${quote(value)} is invalid: ${why}`);
}
