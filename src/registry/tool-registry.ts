import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { keepForOneMoreCopy } from "../codec/struct-echo.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { ChangeLog, type ToolChange, type ToolChangeKind } from "./change-log.js";
import { checkNamespace, checkSegmentName, ensure, quote } from "./names.js";
import { decodePageToken, encodePageToken, resolvePageSize } from "./page-token.js";
import { ListingIndexes } from "./listing-indexes.js";
import { allNames, intersectRanges, rangeOfPrefix, type NameRange } from "./name-ranges.js";
import type { CheckpointHooks, RegisteredTool, ToolHandler } from "./tool-definition.js";
import { RegistryEntry } from "./registry-entry.js";
import { BackgroundPacking } from "./background-packing.js";
import { SpecPacker } from "./spec-packer.js";
import { validateSpec, wireKeyNames } from "./validate-spec.js";

/** Options of a {@link ToolRegistry}. */
export interface ToolRegistryOptions {
  /** Most tools the registry holds; more registrations are RESOURCE_EXHAUSTED. Default 100,000. */
  readonly maxTools?: number;
  /** How many recent changes are kept for watchers that resume. Default 10,000. */
  readonly retainedChanges?: number;
  /**
   * Version the registry starts at. Default 0. A registry re-created under a name that existed
   * before starts where the old one ended, so versions never go back for watchers of that name.
   */
  readonly initialVersion?: bigint;
  /**
   * Past this many tools, the specs of tools without a handler here are kept packed (see
   * SpecPacker and RegistryEntry): under half the memory, for tens of microseconds of packing each
   * (on the packing thread, once registrations pause) and for reading a spec not read lately.
   * Default 1,000; Infinity never packs.
   */
  readonly packSpecsAbove?: number;
  /**
   * Most specs waiting to be packed while registrations come without a pause (see
   * BackgroundPacking): past it, the oldest go to the packing thread in batches (or, should it fall
   * behind or fail, each registration packs the oldest one at once), so that memory stays bounded
   * during a long import. Default 32,768; at least 1.
   */
  readonly maxSpecsWaitingToPack?: number;
}

/** How many recent specs make the dictionary of a registry's packer. */
const dictionarySamples = 8;

/** What to register: a spec, and a handler when this process can execute the tool. */
export interface ToolRegistration {
  readonly spec: ToolSpec;
  /**
   * Whether the spec's objects are the registry's to keep (a spec decoded from a request): its
   * schemas are then kept as they are rather than copied. Default false: an author's object may
   * change after registration.
   */
  readonly owned?: boolean | undefined;
  readonly handler?: ToolHandler | undefined;
  /** Checkpoint and rollback, for a checkpointable tool with a handler. */
  readonly hooks?: CheckpointHooks | undefined;
}

/** Filter and page of a {@link ToolRegistry.list} call. */
export interface ListToolsQuery {
  /** Only tools in this namespace or below it; "" for all. */
  readonly namespace?: string;
  /** Only tools of this tool_type; "" for all. */
  readonly toolType?: string;
  /** 0 for the default of 100; at most 1,000. */
  readonly pageSize?: number;
  /** A `nextPageToken` from a previous call, or "". */
  readonly pageToken?: string;
  /** Only tools some process serves (`has_handler`): MCP's tools/list. Default false. */
  readonly runnableOnly?: boolean | undefined;
  /**
   * Only tools whose names are in these ranges, normalized (the names the caller may read, see
   * allowedNameRanges). Names outside them are never visited: give them whenever `include` would
   * reject whole ranges, so that a page costs what it lists. Default: every name.
   */
  readonly within?: readonly NameRange[] | undefined;
  /**
   * Only tools this predicate accepts (the caller's read permission). It sees what a tool's entry
   * holds unpacked, so that filtering a large registry unpacks no spec. A page that has rejected
   * {@link maxSkippedPerPage} tools ends there, short (even empty), with a token that continues
   * after the last tool it looked at.
   */
  readonly include?: ((tool: ToolSummary) => boolean) | undefined;
}

/**
 * Most tools one page looks at and leaves out (filters the indexes cannot answer, see
 * {@link ListToolsQuery.include}), so that a page's cost stays bounded by its size whatever the
 * filters: a page then ends early, with a token to go on.
 */
export const maxSkippedPerPage = 1000;

/** What a registry knows of a tool without reading its spec (see {@link RegistryEntry}). */
export interface ToolSummary {
  readonly name: string;
  readonly toolType: string;
  readonly hasHandler: boolean;
}

/** One page of a listing. */
export interface ToolPage {
  readonly tools: ToolSpec[];
  /** Token for the next page; "" when this is the last. */
  readonly nextPageToken: string;
  /** The registry version the page was read at. */
  readonly version: bigint;
  /** How many tools the page looked at, those it left out included: the measure of its cost. */
  readonly examined: number;
}

/** Receives every change of a registry, synchronously, in order. */
export type ToolChangeListener = (change: ToolChange) => void;

/** A handler of this process for a tool whose spec a shared store holds. */
interface LocalHandler {
  readonly handler: ToolHandler;
  readonly hooks: CheckpointHooks | undefined;
}

/**
 * An in-memory registry of tools, keyed by namespaced name. Every operation is synchronous, so each
 * is atomic under any number of concurrent callers: of simultaneous registrations of one name,
 * exactly one wins. Names live in a Map and a sorted index, never as object keys, so no name can
 * reach an object's prototype.
 */
export class ToolRegistry {
  readonly #tools = new Map<string, RegistryEntry>();
  readonly #indexes = new ListingIndexes();
  readonly #listeners = new Set<ToolChangeListener>();
  readonly #log: ChangeLog;
  readonly #maxTools: number;
  /** Provider of each tool removed because its provider went offline, until the name is taken again. */
  readonly #offline = new Map<string, string>();
  /** Handlers of this process for tools registered through a shared store (see {@link apply}). */
  readonly #localHandlers = new Map<string, LocalHandler>();
  /** Called when the registry is reloaded wholesale and its changes cannot be replayed. */
  readonly #resetListeners = new Set<() => void>();
  readonly #packSpecsAbove: number;
  /** Made when the registry first grows past {@link ToolRegistryOptions.packSpecsAbove}. */
  #packer: SpecPacker | undefined;
  readonly #packing: BackgroundPacking;
  /** The latest specs put, until there is a packer: its dictionary is made of them. */
  #recentSpecs: ToolSpec[] = [];
  #version: bigint;

  /** @param name the registry's name, used in messages */
  constructor(
    readonly name: string,
    options: ToolRegistryOptions = {},
  ) {
    this.#maxTools = options.maxTools ?? 100_000;
    this.#version = options.initialVersion ?? 0n;
    this.#log = new ChangeLog(options.retainedChanges ?? 10_000);
    this.#packSpecsAbove = options.packSpecsAbove ?? 1000;
    this.#packing = new BackgroundPacking(options.maxSpecsWaitingToPack);
  }

  /** The version of the latest change; the initial version (0 by default) for a new registry. */
  get version(): bigint {
    return this.#version;
  }

  /** The number of tools held. */
  get size(): number {
    return this.#tools.size;
  }

  /**
   * Registers a tool. Throws INVALID_ARGUMENT for an invalid spec, ALREADY_EXISTS when the name is
   * taken (unless `replace`), FAILED_PRECONDITION when replacing a tool that has a handler here,
   * RESOURCE_EXHAUSTED when the registry is full.
   */
  register(
    registration: ToolRegistration,
    options: { replace?: boolean } = {},
  ): {
    spec: ToolSpec;
    replaced: boolean;
  } {
    const validated = validateSpec(registration.spec, wireKeyNames, { owned: registration.owned });
    const name = validated.spec.name;
    const existing = this.#tools.get(name);
    if (existing && !options.replace) {
      throw new ToolRuntimeError(
        "ALREADY_EXISTS",
        ErrorType.Registration,
        `tool ${quote(name)} is already registered in registry ${quote(this.name)}: choose another name, or remove it first`,
        name,
      );
    }
    if (existing?.handler) {
      throw new ToolRuntimeError(
        "FAILED_PRECONDITION",
        ErrorType.Registration,
        `tool ${quote(name)} is served by a handler in this server and cannot be replaced: register under another name`,
        name,
      );
    }
    if (!existing && this.#tools.size >= this.#maxTools) {
      throw new ToolRuntimeError(
        "RESOURCE_EXHAUSTED",
        ErrorType.ResourceExhausted,
        `registry ${quote(this.name)} holds its maximum of ${this.#maxTools} tools: remove some first`,
        name,
      );
    }
    const version = this.#version + 1n;
    // validateSpec made this copy for this registration alone: it is ours to complete.
    const spec = validated.spec;
    spec.hasHandler = registration.handler !== undefined;
    spec.version = version;
    const entry = this.#newEntry(spec, registration.handler, registration.hooks);
    this.#setEntry(entry);
    this.#offline.delete(name);
    this.#commit(existing ? "updated" : "added", entry, version);
    return { spec, replaced: existing !== undefined };
  }

  /** The provider of a tool removed because that provider is not connected, or undefined. */
  offlineProvider(name: string): string | undefined {
    return this.#offline.get(name);
  }

  /** The tool of that name, or undefined. */
  get(name: string): RegisteredTool | undefined {
    return this.#tools.get(name);
  }

  /**
   * Removes a tool; returns whether there was one. With `offlineProvider`, the tool is gone only
   * while that provider is not connected: {@link offlineProvider} names it until the tool is
   * registered again (listeners of the removal can already read it).
   */
  remove(name: string, options: { offlineProvider?: string } = {}): boolean {
    const existing = this.#tools.get(name);
    if (!existing) return false;
    this.#deleteEntry(existing);
    this.#offline.delete(name);
    if (options.offlineProvider !== undefined) {
      // Bounded like the registry itself: the oldest note goes first.
      if (this.#offline.size >= this.#maxTools) this.#offline.delete(this.#offline.keys().next().value as string);
      this.#offline.set(name, options.offlineProvider);
    }
    this.#commit("removed", existing, this.#version + 1n);
    return true;
  }

  /**
   * One page of tools in name order. Throws INVALID_ARGUMENT for an invalid filter, page size or
   * token. A page continues after the previous page's last name and walks an index of the tools
   * its filters select (see ListingIndexes) within its name ranges, so its cost depends on the
   * page size, not on the registry's size; filters no index answers are bounded by
   * {@link maxSkippedPerPage}.
   */
  list(query: ListToolsQuery = {}): ToolPage {
    const namespace = query.namespace ?? "";
    const toolType = query.toolType ?? "";
    const runnableOnly = query.runnableOnly ?? false;
    ensure(checkNamespace(namespace));
    ensure(checkSegmentName(toolType, "tool_type"));
    const pageSize = resolvePageSize(query.pageSize ?? 0);
    const after = decodePageToken(query.pageToken ?? "", namespace);
    const ranges = intersectRanges(
      namespace === "" ? allNames : [rangeOfPrefix(`${namespace}.`)],
      query.within ?? allNames,
    );
    const tools: ToolSpec[] = [];
    let nextPageToken = "";
    let examined = 0;
    let lastExamined = "";
    const index = this.#indexes.indexFor(toolType, runnableOnly);
    // Just past the previous page's last name.
    const start = after === "" ? "" : `${after}\u0000`;
    for (const name of index?.within(ranges, start) ?? []) {
      if (examined - tools.length === maxSkippedPerPage) {
        nextPageToken = encodePageToken(lastExamined);
        break;
      }
      examined++;
      const tool = this.#tools.get(name) as RegistryEntry;
      const selected =
        (toolType === "" || tool.toolType === toolType) &&
        (!runnableOnly || tool.hasHandler) &&
        (!query.include || query.include(tool));
      if (!selected) {
        lastExamined = name;
        continue;
      }
      if (tools.length === pageSize) {
        nextPageToken = encodePageToken(lastExamined);
        break;
      }
      tools.push(tool.spec);
      lastExamined = name;
    }
    return { tools, nextPageToken, version: this.#version, examined };
  }

  /**
   * Every tool in name order with the version they reflect. The tools are read as they are at this
   * version even if they change later; a packed spec is unpacked only when read.
   */
  snapshot(): { tools: RegisteredTool[]; version: bigint } {
    const tools: RegisteredTool[] = [];
    for (const name of this.#indexes.all.from("")) tools.push(this.#tools.get(name) as RegistryEntry);
    return { tools, version: this.#version };
  }

  /** The changes after `version`, or undefined when they are no longer all retained. */
  changesSince(version: bigint): ToolChange[] | undefined {
    return this.#log.since(version, this.#version);
  }

  /**
   * Calls `listener` with every later change until the returned function is called. `onReset` is
   * called instead when the registry is reloaded (see {@link reset}): the changes in between are
   * not known one by one, so a watcher must start again from a snapshot.
   */
  subscribe(listener: ToolChangeListener, onReset?: () => void): () => void {
    this.#listeners.add(listener);
    if (onReset) this.#resetListeners.add(onReset);
    return () => {
      this.#listeners.delete(listener);
      if (onReset) this.#resetListeners.delete(onReset);
    };
  }

  /**
   * Keeps a handler of this process for `name`, for a registry that mirrors a shared store: the
   * spec arrives through {@link apply} (from this replica's write or another's) and gets the
   * handler; a tool already present gets it at once. A removal of the tool forgets it. Returns a
   * function that restores what was kept before (for a write that failed).
   */
  attachHandler(name: string, handler: ToolHandler, hooks: CheckpointHooks | undefined): () => void {
    const before = this.#localHandlers.get(name);
    this.#localHandlers.set(name, { handler, hooks });
    return () => {
      if (before) this.#localHandlers.set(name, before);
      else this.#localHandlers.delete(name);
    };
  }

  /** Forgets this process's handler for `name` (its provider left this process, but serves it elsewhere). */
  detachHandler(name: string): void {
    this.#localHandlers.delete(name);
    const existing = this.#tools.get(name);
    if (existing) this.#setEntry(this.#queued(existing.withHandler(undefined, undefined)));
  }

  /** Names of the tools this process has a handler for through {@link attachHandler}. */
  handledNames(): string[] {
    return [...this.#localHandlers.keys()];
  }

  /** Gives an existing tool the handler kept for it by {@link attachHandler} (an adopted spec). */
  refreshHandler(name: string): void {
    const existing = this.#tools.get(name);
    const local = this.#localHandlers.get(name);
    if (existing && local) this.#setEntry(existing.withHandler(local.handler, local.hooks));
  }

  /** Notes that `name` is about to be removed because `provider` went offline (see {@link remove}). */
  noteOffline(name: string, provider: string): void {
    if (this.#offline.size >= this.#maxTools) this.#offline.delete(this.#offline.keys().next().value as string);
    this.#offline.set(name, provider);
  }

  /**
   * Applies a change committed to a shared store, in version order: the registry is then a mirror
   * of the store. Schemas compile when first used, since the writer already validated the spec.
   * Throws when `change` does not follow the current version (the caller must reload instead).
   */
  apply(change: ToolChange): void {
    if (change.version !== this.#version + 1n) {
      throw new Error(`change ${change.version} of registry "${this.name}" does not follow version ${this.#version}`);
    }
    const name = change.spec.name;
    let entry: RegistryEntry;
    if (change.kind === "removed") {
      entry = this.#tools.get(name) ?? new RegistryEntry(change.spec);
      this.#deleteEntry(entry);
      this.#localHandlers.delete(name);
    } else {
      entry = this.#put(change.spec);
      this.#offline.delete(name);
    }
    this.#commit(change.kind, entry, change.version);
  }

  /**
   * Replaces every tool with `specs` at `version`, for a mirror too far behind its store to replay
   * the changes. Subscribers get their reset callback; the change log starts afresh.
   */
  reset(specs: readonly ToolSpec[], version: bigint): void {
    this.#tools.clear();
    this.#indexes.clear();
    this.#packing.refill(() => {
      for (const spec of specs) this.#put(spec);
    });
    this.#version = version;
    this.#log.clear();
    for (const onReset of this.#resetListeners) onReset();
  }

  #put(spec: ToolSpec): RegistryEntry {
    const local = this.#localHandlers.get(spec.name);
    const entry = this.#newEntry(spec, local?.handler, local?.hooks);
    this.#setEntry(entry);
    return entry;
  }

  /** Puts `entry` in place of the tool of its name, if any; the only writer of the tools and their indexes with {@link #deleteEntry}. */
  #setEntry(entry: RegistryEntry): void {
    this.#indexes.put(entry, this.#tools.get(entry.name));
    this.#tools.set(entry.name, entry);
  }

  #deleteEntry(entry: RegistryEntry): void {
    if (!this.#tools.delete(entry.name)) return;
    this.#indexes.delete(entry);
  }

  /**
   * Packs now every spec waiting to be packed (they are packed in the background after a burst of
   * registrations; see BackgroundPacking).
   */
  packPending(): void {
    this.#packing.drain();
  }

  /** Resolves once no spec of this registry is at the packing thread (for tests and benchmarks). */
  packingSettled(): Promise<void> {
    return this.#packing.settled();
  }

  /** A new entry, queued for packing when the registry is past its threshold. */
  #newEntry(spec: ToolSpec, handler: ToolHandler | undefined, hooks: CheckpointHooks | undefined): RegistryEntry {
    return this.#queued(new RegistryEntry(spec, handler, hooks, this.#packerFor(spec)));
  }

  #queued(entry: RegistryEntry): RegistryEntry {
    if (entry.packable) {
      // Its answer copies the bytes its schemas were decoded from; so can the packer, later.
      const spec = entry.spec;
      keepForOneMoreCopy(spec.inputSchema);
      keepForOneMoreCopy(spec.outputSchema);
      this.#packing.add(entry);
    }
    return entry;
  }

  /** The packer for a spec about to be put, once the registry is past its packing threshold. */
  #packerFor(spec: ToolSpec): SpecPacker | undefined {
    if (this.#packer) return this.#packer;
    if (this.#tools.size < this.#packSpecsAbove) {
      this.#recentSpecs.push(spec);
      if (this.#recentSpecs.length > dictionarySamples) this.#recentSpecs.shift();
      return undefined;
    }
    this.#packer = SpecPacker.fromSamples([spec, ...this.#recentSpecs.reverse()]);
    this.#recentSpecs = [];
    return this.#packer;
  }

  /** Number of current subscribers (watch streams and runners). */
  get subscriberCount(): number {
    return this.#listeners.size;
  }

  #commit(kind: ToolChangeKind, entry: RegistryEntry, version: bigint): void {
    // The log keeps the entry rather than its spec, so that a packed spec stays packed there too.
    const change = new EntryChange(kind, entry, version);
    this.#version = version;
    this.#log.append(change);
    for (const listener of this.#listeners) listener(change);
  }
}

/** A change as the log keeps it: its spec is read from the entry (see {@link RegistryEntry}). */
class EntryChange implements ToolChange {
  constructor(
    readonly kind: ToolChangeKind,
    readonly entry: RegistryEntry,
    readonly version: bigint,
  ) {}

  get spec(): ToolSpec {
    return this.entry.spec;
  }
}
