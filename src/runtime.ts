import { ExecutionManager, type ExecutionManagerOptions } from "./executions/execution-manager.js";
import { SharedExecutionManager } from "./executions/shared-execution-manager.js";
import type { SharedRunsOptions } from "./executions/shared-runs.js";
import { ProviderHub, type ProviderHubOptions } from "./providers/provider-hub.js";
import { defaultRegistryName, RegistrySet, type RegistrySetOptions } from "./registry/registry-set.js";
import { RunnerSet, type RunnerSetOptions } from "./runner/runner-set.js";
import { createMemoryStoreSet } from "./stores/memory/memory-store-set.js";
import type { PostgresStoreOptions } from "./stores/postgres/postgres-options.js";
import { openPostgresStoreSet } from "./stores/postgres/postgres-store-set.js";
import type { StoreSet } from "./stores/store-set.js";
import type { DefinedTool } from "./tools/define-tool.js";

/** Options of {@link createToolRuntime}. */
export interface ToolRuntimeOptions {
  /** Tools with handlers to register in the default registry at start. */
  readonly tools?: readonly DefinedTool[];
  /** Limits of the registries. */
  readonly registries?: RegistrySetOptions;
  /** Timeouts and limits of the runners. */
  readonly runners?: RunnerSetOptions;
  /** Interval of HEARTBEAT events on long streams, in milliseconds. Default 15,000. */
  readonly heartbeatIntervalMs?: number;
  /** Admission limits, timeouts and retention of runs. */
  readonly executions?: ExecutionManagerOptions;
  /** Heartbeat and failure timing of tool providers. */
  readonly providers?: ProviderHubOptions;
  /** With a shared store: lease, flush window and poll interval of shared runs. */
  readonly sharedRuns?: Omit<SharedRunsOptions, "store">;
}

/** Options of {@link openToolRuntime}: those of {@link createToolRuntime}, and where state lives. */
export interface OpenToolRuntimeOptions extends ToolRuntimeOptions {
  /**
   * URL of a shared store, `postgres://user:password@host:port/database`, for durable state shared
   * by several replicas. Default: none, the in-memory stores.
   */
  readonly store?: string | undefined;
  /** Timing of the PostgreSQL store (poll and availability intervals). */
  readonly postgres?: PostgresStoreOptions;
}

/** The transport-free core of a server: its registries and runners. */
export interface ToolRuntime {
  readonly registries: RegistrySet;
  readonly runners: RunnerSet;
  readonly executions: ExecutionManager;
  readonly providers: ProviderHub;
  /** Where the registries' and activations' state lives: memory, or a shared store. */
  readonly stores: StoreSet;
  readonly heartbeatIntervalMs: number;
  /** Releases what the runtime holds (subscriptions). */
  close(): void;
  /** Releases what the runtime holds and closes its stores' connections. */
  closeStores(): Promise<void>;
}

/**
 * Creates the registries and runners over the in-memory stores and registers `tools`. Throws the
 * registration error of a tool that cannot be registered (a duplicate name, say).
 */
export function createToolRuntime(options: ToolRuntimeOptions = {}): ToolRuntime {
  const registries = new RegistrySet(options.registries);
  const runners = new RunnerSet(registries.default, options.runners);
  for (const tool of options.tools ?? []) {
    registries.default.register({ spec: tool.spec, handler: tool.handler, hooks: tool.hooks });
  }
  return assemble(options, registries, runners, createMemoryStoreSet(registries, runners));
}

/**
 * Creates a runtime whose state lives in the store `options.store` names (the in-memory stores
 * when it names none), and registers `tools` there. Every replica registers the same tools at
 * start: an equal spec already in a shared store is adopted, so replicas share one registry.
 * Rejects when the store cannot be reached (naming its masked URL) or a tool cannot be registered.
 */
export async function openToolRuntime(options: OpenToolRuntimeOptions = {}): Promise<ToolRuntime> {
  if (options.store === undefined) return createToolRuntime(options);
  const registries = new RegistrySet(options.registries);
  const runners = new RunnerSet(registries.default, options.runners);
  const stores = await openPostgresStoreSet(options.store, registries, runners, {
    ...options.postgres,
    ...(options.sharedRuns?.leaseMs === undefined ? {} : { leaseMs: options.sharedRuns.leaseMs }),
    ...(options.registries?.maxTools === undefined ? {} : { maxTools: options.registries.maxTools }),
    ...(options.registries?.maxRegistries === undefined ? {} : { maxRegistries: options.registries.maxRegistries }),
  });
  try {
    for (const tool of options.tools ?? []) {
      await stores.tools.register(
        defaultRegistryName,
        { spec: tool.spec, handler: tool.handler, hooks: tool.hooks },
        { adopt: true },
      );
    }
  } catch (error) {
    await stores.close();
    throw error;
  }
  return assemble(options, registries, runners, stores);
}

function assemble(
  options: ToolRuntimeOptions,
  registries: RegistrySet,
  runners: RunnerSet,
  stores: StoreSet,
): ToolRuntime {
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? 15_000;
  const managerOptions = { heartbeatIntervalMs, ...options.executions };
  const executions = stores.runs
    ? new SharedExecutionManager(
        managerOptions,
        { store: stores.runs, ...options.sharedRuns },
        {
          runnerFor: (lifecycle, runnerName) =>
            lifecycle === "execute" ? runners.get(runnerName) : runners.createPrivate(),
          claimableTools: () => registries.default.handledNames(),
        },
      )
    : new ExecutionManager(managerOptions);
  const close = (): void => {
    runners.close();
    executions.close();
  };
  return {
    registries,
    runners,
    executions,
    providers: new ProviderHub(registries.default, stores.tools, options.providers),
    stores,
    heartbeatIntervalMs,
    close,
    async closeStores() {
      close();
      await stores.close();
    },
  };
}
