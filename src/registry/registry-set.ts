import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { checkSegmentName, ensure, quote } from "./names.js";
import { ToolRegistry, type ToolRegistryOptions } from "./tool-registry.js";

/** The name that an empty registry name stands for. */
export const defaultRegistryName = "default";

/** Options of a {@link RegistrySet}. */
export interface RegistrySetOptions extends ToolRegistryOptions {
  /** Most registries, the default one included. Default 64. */
  readonly maxRegistries?: number;
}

/**
 * The named registries of a server. "default" always exists; another comes into being with its
 * first registration and stays for the life of the set.
 */
export class RegistrySet {
  readonly #registries = new Map<string, ToolRegistry>();
  readonly #maxRegistries: number;

  constructor(private readonly options: RegistrySetOptions = {}) {
    this.#maxRegistries = options.maxRegistries ?? 64;
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
    if (!registry) {
      throw new ToolRuntimeError(
        "NOT_FOUND",
        ErrorType.NotFound,
        `registry ${quote(resolved)} does not exist: register a tool in it first, or omit the name for the default registry`,
      );
    }
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
   * and RESOURCE_EXHAUSTED when the set holds its maximum of registries.
   */
  getOrCreate(name: string): ToolRegistry {
    const resolved = resolveRegistryName(name);
    let registry = this.#registries.get(resolved);
    if (!registry) {
      if (this.#registries.size >= this.#maxRegistries) {
        throw new ToolRuntimeError(
          "RESOURCE_EXHAUSTED",
          ErrorType.ResourceExhausted,
          `registry ${quote(resolved)} cannot be created: the server holds its maximum of ${this.#maxRegistries} registries`,
        );
      }
      registry = new ToolRegistry(resolved, this.options);
      this.#registries.set(resolved, registry);
    }
    return registry;
  }
}

/** Validates a registry name and resolves "" to the default. Throws INVALID_ARGUMENT. */
export function resolveRegistryName(name: string): string {
  ensure(checkSegmentName(name, "registry name"));
  return name === "" ? defaultRegistryName : name;
}
