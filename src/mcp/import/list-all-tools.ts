/** One page of an MCP `tools/list` answer. */
export interface McpToolsPage<Tool> {
  readonly tools: readonly Tool[];
  readonly nextCursor?: string | undefined;
}

/** Options of {@link listAllTools}. */
export interface ListAllToolsOptions {
  /** Most pages read before giving up, against a server whose cursors never end. Default 100. */
  readonly maxPages?: number;
  /** Ends the listing early; the pending page's promise decides what is thrown. */
  readonly signal?: AbortSignal;
}

/**
 * Lists every tool of an MCP server by following `nextCursor` until a page has none. Throws an
 * Error when a cursor repeats or `maxPages` pages were read (a server that would loop forever), and
 * the signal's reason when it is aborted between pages.
 */
export async function listAllTools<Tool>(
  listPage: (cursor: string | undefined) => Promise<McpToolsPage<Tool>>,
  options: ListAllToolsOptions = {},
): Promise<Tool[]> {
  const maxPages = options.maxPages ?? 100;
  const tools: Tool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    options.signal?.throwIfAborted();
    const answer = await listPage(cursor);
    tools.push(...answer.tools);
    if (answer.nextCursor === undefined) return tools;
    if (seen.has(answer.nextCursor)) throw new Error(`tools/list repeated cursor ${JSON.stringify(answer.nextCursor)}`);
    seen.add(answer.nextCursor);
    cursor = answer.nextCursor;
  }
  throw new Error(`tools/list did not end within ${maxPages} pages`);
}
