import { invalidRequest, type ToolRuntimeError } from "../errors/tool-runtime-error.js";

/** Longest namespaced tool name, in characters. */
export const maxToolNameLength = 128;
/** Most segments in a tool name (namespace segments plus the tool's own). */
export const maxToolNameSegments = 8;

// A segment: a lowercase ASCII letter, then up to 63 lowercase letters, digits, "_" or "-". ASCII
// only, so that no look-alike letters, whitespace, control characters or "__proto__" pass.
const segment = "[a-z][a-z0-9_-]{0,63}";
const segmentPattern = new RegExp(`^${segment}$`);
const toolNamePattern = new RegExp(`^${segment}(?:\\.${segment}){1,${maxToolNameSegments - 1}}$`);
const namespacePattern = new RegExp(`^${segment}(?:\\.${segment}){0,${maxToolNameSegments - 2}}$`);

/** The grammar of a tool name, as told to clients in error messages. */
const toolNameRule =
  'use 2 to 8 segments separated by ".", each a lowercase ASCII letter followed by lowercase letters, digits, "_" or "-", at most 128 characters in all (for example "fs.read_file")';

/** Quotes a client-supplied string for a message, escaped and cut to a readable length. */
export function quote(text: string): string {
  const shown = text.length > 80 ? `${text.slice(0, 77)}...` : text;
  return JSON.stringify(shown);
}

/**
 * Names found valid lately, at most {@link maxRememberedNames}: a run checks its tool's name several
 * times (authorising, preparing, and for a RunTool activating and deactivating), and most runs are
 * of a few tools; the pattern's test cost a microsecond of a RunTool stream's server time.
 */
const rememberedNames = new Set<string>();
const maxRememberedNames = 1024;

/** Whether `name` is a valid namespaced tool name (see ToolSpec.name in the proto). */
export function isToolName(name: string): boolean {
  if (rememberedNames.has(name)) return true;
  if (!(name.length <= maxToolNameLength && toolNamePattern.test(name))) return false;
  if (rememberedNames.size >= maxRememberedNames) rememberedNames.clear();
  rememberedNames.add(name);
  return true;
}

/** Returns an INVALID_ARGUMENT error when `name` is not a valid tool name, else undefined. */
export function checkToolName(name: string, field = "tool name"): ToolRuntimeError | undefined {
  if (name === "") return invalidRequest(`${field} is empty: ${toolNameRule}`);
  if (isToolName(name)) return undefined;
  return invalidRequest(`${field} ${quote(name)} is invalid: ${toolNameRule}`);
}

/**
 * Returns an INVALID_ARGUMENT error when `name` is neither empty nor one valid segment. Used for
 * registry, runner and tool_type names, where empty means the default.
 */
export function checkSegmentName(name: string, field: string): ToolRuntimeError | undefined {
  if (name === "" || segmentPattern.test(name)) return undefined;
  return invalidRequest(
    `${field} ${quote(name)} is invalid: use a lowercase ASCII letter followed by up to 63 lowercase letters, digits, "_" or "-"`,
  );
}

/** Returns an INVALID_ARGUMENT error when `namespace` is neither empty nor a valid namespace. */
export function checkNamespace(namespace: string): ToolRuntimeError | undefined {
  if (namespace === "" || namespacePattern.test(namespace)) return undefined;
  return invalidRequest(
    `namespace ${quote(namespace)} is invalid: use lowercase segments separated by "." (for example "fs")`,
  );
}

/** Throws the error of a check, if any. */
export function ensure(error: ToolRuntimeError | undefined): void {
  if (error) throw error;
}
