import { SortedNames } from "./sorted-names.js";

/** What the indexes read of a tool: fixed for the life of an entry. */
export interface IndexedTool {
  readonly name: string;
  readonly toolType: string;
  readonly hasHandler: boolean;
}

/**
 * The sorted name indexes a listing walks: every name, the names of the tools some process serves
 * (`has_handler`), and the names of each tool_type. A listing filtered on one of these walks its
 * index, so the tools it would skip are never visited: with 100,000 tools registered without a
 * handler, MCP's tools/list walked all of them for every page. The registry keeps them in step
 * with its entries: every put, removal and reset goes through here.
 */
export class ListingIndexes {
  readonly all = new SortedNames();
  readonly #runnable = new SortedNames();
  readonly #byToolType = new Map<string, SortedNames>();

  /** Indexes `tool`, which replaces `previous` (a tool of the same name) when given. */
  put(tool: IndexedTool, previous: IndexedTool | undefined): void {
    if (previous) {
      if (previous.hasHandler === tool.hasHandler && previous.toolType === tool.toolType) return;
      this.delete(previous);
    }
    this.all.add(tool.name);
    if (tool.hasHandler) this.#runnable.add(tool.name);
    if (tool.toolType !== "") {
      let ofType = this.#byToolType.get(tool.toolType);
      if (!ofType) this.#byToolType.set(tool.toolType, (ofType = new SortedNames()));
      ofType.add(tool.name);
    }
  }

  /** Forgets `tool`. */
  delete(tool: IndexedTool): void {
    this.all.delete(tool.name);
    this.#runnable.delete(tool.name);
    const ofType = this.#byToolType.get(tool.toolType);
    if (!ofType) return;
    ofType.delete(tool.name);
    if (ofType.size === 0) this.#byToolType.delete(tool.toolType);
  }

  clear(): void {
    this.all.clear();
    this.#runnable.clear();
    this.#byToolType.clear();
  }

  /**
   * The smallest index holding every tool of type `toolType` ("" for any) that some process
   * serves (or any, unless `runnableOnly`): exactly those when only one of the two filters is set.
   * Undefined when no tool has that type.
   */
  indexFor(toolType: string, runnableOnly: boolean): SortedNames | undefined {
    if (toolType !== "") return this.#byToolType.get(toolType);
    return runnableOnly ? this.#runnable : this.all;
  }
}
