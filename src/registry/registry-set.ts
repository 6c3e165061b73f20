import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { checkSegmentName, ensure, quote } from "./names.js";
import { ToolRegistry, type ToolRegistryOptions } from "./tool-registry.js";
import { VersionTombstones } from "./version-tombstones.js";

/** The name that an empty registry name stands for. */
export const defaultRegistryName = "default";

/** Options of a {@link RegistrySet}. */
export interface RegistrySetOptions extends Omit<ToolRegistryOptions, "initialVersion"> {
  /** Most registries, the default one included. Default 64. */
  readonly maxRegistries?: number;
  /** Most names of reclaimed registries whose last version is remembered. Default 10,000. */
  readonly maxTombstones?: number;
}

/**
 * The named registries of a server. "default" always exists; another comes into being with its
 * first registration. When the set is full, registries that are empty and unwatched are reclaimed
 * to make room; each leaves its last version behind, so a registry re-created under its name
 * continues from there and versions of a name never go back.
 */
export class RegistrySet {
  readonly #registries = new Map<string, ToolRegistry>();
  readonly #maxRegistries: number;
  readonly #tombstones: VersionTombstones;

  constructor(private readonly options: RegistrySetOptions = {}) {
    this.#maxRegistries = options.maxRegistries ?? 64;
    this.#tombstones = new VersionTombstones(options.maxTombstones ?? 10_000);
    this.#registries.set(defaultRegistryName, new ToolRegistry(defaultRegistryName, options));
  }

  /** The default registry. */
  get default(): ToolRegistry {
    return this.#registries.get(defaultRegistryName) as ToolRegistry;
  }

  /**
   * The registry of that name ("" for the default). Throws INVALID_ARGUMENT for an invalid name
   * and NOT_FOUND for a registry that does not exist.
   */
  get(name: string): ToolRegistry {
    const resolved = resolveRegistryName(name);
    const registry = this.#registries.get(resolved);
    if (!registry) throw registryNotFound(resolved);
    return registry;
  }

  /** Every registry, the default first. */
  all(): ToolRegistry[] {
    return [...this.#registries.values()];
  }

  /** The registry of that name if it exists, else undefined. Throws INVALID_ARGUMENT for a bad name. */
  find(name: string): ToolRegistry | undefined {
    return this.#registries.get(resolveRegistryName(name));
  }

  /**
   * The registry of that name, created when missing. Throws INVALID_ARGUMENT for an invalid name
   * and RESOURCE_EXHAUSTED when the set holds its maximum of registries and none can be reclaimed.
   */
  getOrCreate(name: string): ToolRegistry {
    const resolved = resolveRegistryName(name);
    return this.#registries.get(resolved) ?? this.#create(resolved);
  }

  /**
   * The registry to watch under that name: an existing one, or one that was reclaimed, brought
   * back empty at its last version so that a watcher resuming from that version continues. Throws
   * INVALID_ARGUMENT for an invalid name, NOT_FOUND for a name that never held a registry (or was
   * forgotten), RESOURCE_EXHAUSTED when there is no room to bring it back.
   */
  getForWatch(name: string): ToolRegistry {
    const resolved = resolveRegistryName(name);
    const existing = this.#registries.get(resolved);
    if (existing) return existing;
    if (!this.#tombstones.has(resolved)) throw registryNotFound(resolved);
    return this.#create(resolved);
  }

  /**
   * A registry of that name holding `specs` at `version`, created (or reloaded when present), for
   * a registry that a shared store holds and this process mirrors. Throws RESOURCE_EXHAUSTED when
   * the set is full and none can be reclaimed.
   */
  mirror(name: string, specs: readonly ToolSpec[], version: bigint): ToolRegistry {
    const registry = this.#registries.get(name) ?? this.#create(name);
    registry.reset(specs, version);
    return registry;
  }

  #create(name: string): ToolRegistry {
    if (this.#registries.size >= this.#maxRegistries) this.#reclaim();
    if (this.#registries.size >= this.#maxRegistries) {
      throw new ToolRuntimeError(
        "RESOURCE_EXHAUSTED",
        ErrorType.ResourceExhausted,
        `registry ${quote(name)} cannot be created: the server holds its maximum of ${this.#maxRegistries} registries and none is empty and unwatched; remove the tools of one first`,
      );
    }
    const registry = new ToolRegistry(name, { ...this.options, initialVersion: this.#tombstones.take(name) });
    this.#registries.set(name, registry);
    return registry;
  }

  /** Drops every registry but the default that holds no tool and has no subscriber. */
  #reclaim(): void {
    for (const [name, registry] of this.#registries) {
      if (name === defaultRegistryName || registry.size > 0 || registry.subscriberCount > 0) continue;
      this.#registries.delete(name);
      this.#tombstones.put(name, registry.version);
    }
  }
}

/** NOT_FOUND for a registry that does not exist. */
export function registryNotFound(name: string): ToolRuntimeError {
  return new ToolRuntimeError(
    "NOT_FOUND",
    ErrorType.NotFound,
    `registry ${quote(name)} does not exist: register a tool in it first, or omit the name for the default registry`,
  );
}

/** Validates a registry name and resolves "" to the default. Throws INVALID_ARGUMENT. */
export function resolveRegistryName(name: string): string {
  ensure(checkSegmentName(name, "registry name"));
  return name === "" ? defaultRegistryName : name;
}
