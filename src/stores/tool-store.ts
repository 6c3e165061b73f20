import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import type { MaybePromise } from "../async/maybe-promise.js";
import type { ToolChange } from "../registry/change-log.js";
import type { ToolRegistry, ToolRegistration } from "../registry/tool-registry.js";

/** How {@link ToolStore.register} treats a name that is taken. */
export interface RegisterOptions {
  /** Replace the spec of a registered tool (RegisterTool's `replace`). */
  readonly replace?: boolean;
  /**
   * For a tool with a handler registered at start by every replica (built-in and module tools): an
   * equal spec already in the store is adopted (this process's handler attached, no new version), a
   * different one is replaced. Never used for calls.
   */
  readonly adopt?: boolean;
}

/**
 * The registries' state behind a port. Writes go through the store, which makes them atomic for
 * every replica that shares it: of concurrent registrations of one name exactly one wins, and each
 * change gets the next version of its registry, gapless and in commit order. Reads are served by
 * this process's {@link ToolRegistry} views, which the store keeps in step with every replica's
 * writes: {@link view} first brings a view up to date, so a read after a write on any replica
 * sees it. The memory store's views are the state itself, so it adds nothing to a call.
 */
export interface ToolStore {
  /** Whether other processes share this store's state. */
  readonly shared: boolean;

  /**
   * Registers a tool in registry `registryName` (created when missing), with the registry's
   * policy: throws INVALID_ARGUMENT for an invalid spec, ALREADY_EXISTS when the name is taken
   * (unless `replace`), FAILED_PRECONDITION when replacing a tool served by a handler,
   * RESOURCE_EXHAUSTED when the registry (or the set of registries) is full, UNAVAILABLE when a
   * shared store cannot be reached.
   */
  register(
    registryName: string,
    registration: ToolRegistration,
    options?: RegisterOptions,
  ): Promise<{ spec: ToolSpec; replaced: boolean }>;

  /**
   * Removes a tool; resolves to whether there was one. With `offlineProvider`, the tool is gone
   * only while that provider is offline (see ToolRegistry.remove). UNAVAILABLE as above.
   */
  remove(registryName: string, name: string, options?: { offlineProvider?: string }): Promise<boolean>;

  /**
   * Registers a tool that a provider connected to this process serves, with this process's
   * dispatching handler. With a shared store, a tool the same provider already serves through other
   * replicas is joined (its spec adopted, or updated when the provider's definition changed);
   * ALREADY_EXISTS when another provider or a registration holds the name.
   */
  registerProvided(
    registryName: string,
    registration: ToolRegistration,
    providerName: string,
  ): Promise<{ spec: ToolSpec; replaced: boolean }>;

  /**
   * This process no longer serves the tool for its provider: the tool is removed (noted offline for
   * that provider) once no process serves it. Resolves to whether it was removed.
   */
  withdrawProvided(registryName: string, toolName: string, providerName: string): Promise<boolean>;

  /**
   * This process's view of registry `registryName` ("" for the default), up to date with the
   * store, or undefined when no such registry exists. INVALID_ARGUMENT for an invalid name.
   */
  view(registryName: string): MaybePromise<ToolRegistry | undefined>;

  /**
   * This process's view of registry `registryName` when it is known to be up to date without
   * asking the store, else undefined (then call {@link view}). The memory store's views always
   * are; a shared store's while its doorbell delivers and the view applied every change it rang
   * for, so a change made through another replica is seen within a notification's delivery. Runs
   * use it to start without a round trip when the tool is found; reads use {@link view}.
   */
  currentView(registryName: string): ToolRegistry | undefined;

  /**
   * The view to watch under that name: as {@link view}, but a registry that no longer holds tools
   * is brought back (at its last version) so that a watcher resuming from a version continues.
   * NOT_FOUND for a registry that never existed.
   */
  viewForWatch(registryName: string): MaybePromise<ToolRegistry>;

  /**
   * The changes of a registry after `version`, oldest first, as the store retains them (every
   * replica's), or undefined when they are no longer all retained.
   */
  changesSince(registry: ToolRegistry, version: bigint): MaybePromise<ToolChange[] | undefined>;

  /** Stops following the store and releases its connections. */
  close(): Promise<void>;
}
