import { ErrorType, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { checkSegmentName, ensure, quote } from "../registry/names.js";
import type { ToolRegistry } from "../registry/tool-registry.js";
import { ToolRunner, type ToolRunnerOptions } from "./tool-runner.js";

/** The name that an empty runner name stands for. */
export const defaultRunnerName = "default";

/** Options of a {@link RunnerSet}. */
export interface RunnerSetOptions extends ToolRunnerOptions {
  /** Most runners with active tools at once. Default 1,024. */
  readonly maxRunners?: number;
}

/**
 * The named runners of a server, all over one registry. A runner exists while it has active
 * tools, so names used once leave nothing behind. A tool removed from the registry is deactivated
 * in every runner, unless it is gone only while its provider is offline: its activations then wait
 * for the provider to reconnect.
 */
export class RunnerSet {
  readonly #runners = new Map<string, ToolRunner>();
  readonly #maxRunners: number;
  readonly #unsubscribe: () => void;

  constructor(
    readonly registry: ToolRegistry,
    private readonly options: RunnerSetOptions = {},
  ) {
    this.#maxRunners = options.maxRunners ?? 1024;
    this.#unsubscribe = registry.subscribe((change) => {
      if (change.kind !== "removed" || registry.offlineProvider(change.spec.name) !== undefined) return;
      for (const runner of this.#runners.values()) this.#deactivate(runner, change.spec.name);
    });
  }

  /** Timeout of a run when neither the call nor the tool sets one, in milliseconds. */
  get defaultTimeoutMs(): number {
    return this.options.defaultTimeoutMs ?? 30_000;
  }

  /** Number of runners with active tools. */
  get size(): number {
    return this.#runners.size;
  }

  /** A runner that activates nothing shared: for one lifecycle run. */
  createPrivate(): ToolRunner {
    return new ToolRunner("(private)", this.registry, this.options);
  }

  /** The runner of that name, or a fresh one with nothing active. Throws INVALID_ARGUMENT for a bad name. */
  get(name: string): ToolRunner {
    const resolved = resolveRunnerName(name);
    return this.#runners.get(resolved) ?? new ToolRunner(resolved, this.registry, this.options);
  }

  /**
   * Activates a tool in the named runner (see ToolRunner.activate). Throws RESOURCE_EXHAUSTED when
   * a new runner would exceed the maximum.
   */
  activate(runnerName: string, toolName: string): ReturnType<ToolRunner["activate"]> {
    const runner = this.get(runnerName);
    const known = this.#runners.has(runner.name);
    if (!known && this.#runners.size >= this.#maxRunners) {
      throw new ToolRuntimeError(
        "RESOURCE_EXHAUSTED",
        ErrorType.ResourceExhausted,
        `runner ${quote(runner.name)} cannot be created: the server holds its maximum of ${this.#maxRunners} runners with active tools`,
        toolName,
      );
    }
    const activation = runner.activate(toolName);
    if (!known) this.#runners.set(runner.name, runner);
    return activation;
  }

  /** Deactivates a tool in the named runner; returns whether it was active. */
  deactivate(runnerName: string, toolName: string): boolean {
    const runner = this.get(runnerName);
    return this.#deactivate(runner, toolName);
  }

  /** Stops following the registry. */
  close(): void {
    this.#unsubscribe();
  }

  #deactivate(runner: ToolRunner, toolName: string): boolean {
    const wasActive = runner.deactivate(toolName);
    if (runner.activeCount === 0) this.#runners.delete(runner.name);
    return wasActive;
  }
}

/** Validates a runner name and resolves "" to the default. Throws INVALID_ARGUMENT. */
export function resolveRunnerName(name: string): string {
  ensure(checkSegmentName(name, "runner name"));
  return name === "" ? defaultRunnerName : name;
}
