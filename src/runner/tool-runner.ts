import type { CancellationView } from "../async/cancellation.js";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import type { ToolResult, ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, invalidRequest, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { defaultJsonLimits, type JsonLimits } from "../json/check-json.js";
import { checkToolName, ensure, quote } from "../registry/names.js";
import type { ProgressReport, RegisteredTool, ToolHandler } from "../registry/tool-definition.js";
import type { ListToolsQuery, ToolPage, ToolRegistry } from "../registry/tool-registry.js";
import { checkDurationMs } from "../registry/check-duration.js";
import { toolNotFound } from "../registry/tool-not-found.js";
import type { MaybePromise } from "../async/maybe-promise.js";
import { executeTool, type RunnerSettings, type RunSink } from "./execute-tool.js";
import type { RunObserver } from "./run-observer.js";

/** Options of a {@link ToolRunner}. */
export interface ToolRunnerOptions {
  /** Timeout of a run when neither the call nor the tool sets one, in milliseconds. Default 30,000. */
  readonly defaultTimeoutMs?: number;
  /** Limits on inputs and outputs. Default: 64 levels, 4 MiB. */
  readonly jsonLimits?: JsonLimits;
  /** Most tools active at once in this runner; more is RESOURCE_EXHAUSTED. Default 10,000. */
  readonly maxActiveTools?: number;
  /** Observers told of every run's start and end (metrics, logs, traces, audit). */
  readonly observers?: readonly RunObserver[];
}

/** Per-call options of {@link ToolRunner.execute}. */
export interface ExecuteCallOptions {
  /** Aborts the run: the caller went away. */
  readonly signal?: AbortSignal | CancellationView | undefined;
  /** Time the run may take, in milliseconds; 0 or absent for the tool's default. */
  readonly timeoutMs?: number | undefined;
  /** Time left before the caller's deadline, in milliseconds; the run ends by then. */
  readonly deadlineMs?: number | undefined;
  /** Identifier of the run; a new UUID when absent. */
  readonly executionId?: string | undefined;
  /** Receives progress reports. */
  readonly onProgress?: ((report: ProgressReport) => void) | undefined;
  /** Called just before the handler is called. */
  readonly onStart?: (() => void) | undefined;
  /** Receives a promise that resolves when the handler settles, even after the run ended. */
  readonly onHandlerCalled?: ((settled: Promise<void>) => void) | undefined;
  /** Name of the caller's identity, for observers. Default "anonymous". */
  readonly caller?: string | undefined;
  /** W3C traceparent of the calling RPC, for observers and the result's metadata. */
  readonly traceParent?: string | undefined;
  /** Receives the handler's log lines. */
  readonly onLog?: ((level: string, message: string) => void) | undefined;
  /** Receives the handler's partial output. */
  readonly onOutput?: ((chunk: JsonValue) => void) | undefined;
  /** The handler must report progress at least this often (ms); 0 or absent: no check. */
  readonly heartbeatTimeoutMs?: number | undefined;
  /** Facts added to the result's metadata. */
  readonly extraMetadata?: JsonObject | undefined;
  /**
   * Receives progress, log lines, output and the handler's start and settling, as one object's
   * methods (one object per run instead of a closure per callback). The callbacks above, when
   * given, are called too, after the sink.
   */
  readonly sink?: RunSink | undefined;
  /** The attempt this run is, recorded in the metadata as `attempt`. */
  readonly attempt?: number | undefined;
  /** See ExecuteOptions.reserveRunFacts (the execution manager sets it). */
  readonly reserveRunFacts?: boolean | undefined;
}

/** A run about to start: the tool, its handler and its resolved timeout. */
export interface PreparedRun {
  readonly tool: RegisteredTool;
  readonly handler: ToolHandler;
  readonly timeoutMs: number;
}

/**
 * Takes the tools of one registry through discover → activate → execute → deactivate. Activation
 * is this runner's own: a set of tool names that execute requires. All methods but execute are
 * synchronous and therefore atomic under concurrent callers.
 */
export class ToolRunner implements RunnerSettings {
  /** The active tools' names (see ActiveNames). */
  readonly #active = new ActiveNames();
  readonly #defaultTimeoutMs: number;
  /** Limits on inputs and outputs. */
  readonly jsonLimits: JsonLimits;
  readonly #maxActiveTools: number;
  /** Observers told of every run's start and end. */
  readonly observers: readonly RunObserver[];

  constructor(
    readonly name: string,
    readonly registry: ToolRegistry,
    options: ToolRunnerOptions = {},
  ) {
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? 30_000;
    this.jsonLimits = options.jsonLimits ?? defaultJsonLimits;
    this.#maxActiveTools = options.maxActiveTools ?? 10_000;
    this.observers = options.observers ?? [];
  }

  /** The runner's name, as its runs record it (see RunnerSettings). */
  get runnerName(): string {
    return this.name;
  }

  /** Number of active tools. */
  get activeCount(): number {
    return this.#active.size;
  }

  /** Lists the tools of this runner's registry, or of `registry` when given (dynamic discovery). */
  discover(registry: ToolRegistry = this.registry, query: ListToolsQuery = {}): ToolPage {
    return registry.list(query);
  }

  /**
   * Marks a tool active. Throws INVALID_ARGUMENT for an invalid name, NOT_FOUND with error type
   * "ActivationError" when the registry has no such tool, RESOURCE_EXHAUSTED when too many are active.
   */
  activate(toolName: string): { spec: ToolSpec; alreadyActive: boolean } {
    ensure(checkToolName(toolName));
    const tool = this.registry.get(toolName);
    if (!tool) {
      throw toolNotFound(
        this.registry,
        toolName,
        `tool ${quote(toolName)} cannot be activated: registry ${quote(this.registry.name)} has no such tool`,
        ErrorType.Activation,
      );
    }
    const alreadyActive = this.#active.has(toolName);
    if (!alreadyActive && this.#active.size >= this.#maxActiveTools) {
      throw new ToolRuntimeError(
        "RESOURCE_EXHAUSTED",
        ErrorType.ResourceExhausted,
        `runner ${quote(this.name)} has its maximum of ${this.#maxActiveTools} active tools: deactivate some first`,
        toolName,
      );
    }
    this.#active.add(toolName);
    return { spec: tool.spec, alreadyActive };
  }

  /** Marks a tool inactive; returns whether it was active. Throws INVALID_ARGUMENT for a bad name. */
  deactivate(toolName: string): boolean {
    ensure(checkToolName(toolName));
    return this.#active.delete(toolName);
  }

  /** Whether the tool is active here. */
  isActive(toolName: string): boolean {
    return this.#active.has(toolName);
  }

  /**
   * Checks everything that must hold before a run and resolves its timeout. Throws INVALID_ARGUMENT
   * (name, timeout), NOT_FOUND (no such tool), FAILED_PRECONDITION (not active when `requireActive`,
   * or no handler).
   */
  prepare(toolName: string, options: ExecuteCallOptions, requireActive: boolean): PreparedRun {
    ensure(checkToolName(toolName));
    const requested = options.timeoutMs ?? 0;
    checkDurationMs("timeout_ms", requested, toolName);
    const tool = this.registry.get(toolName);
    const toolMaximum = tool?.spec.maxTimeoutMs ?? 0;
    if (toolMaximum > 0 && requested > toolMaximum) {
      throw invalidRequest(
        `timeout_ms ${requested} is longer than tool ${quote(toolName)} allows: its max_timeout_ms is ${toolMaximum}`,
        toolName,
      );
    }
    if (!tool) {
      throw toolNotFound(
        this.registry,
        toolName,
        `tool ${quote(toolName)} is not registered in registry ${quote(this.registry.name)}: check the name with ListTools`,
      );
    }
    if (requireActive && !this.#active.has(toolName)) {
      throw new ToolRuntimeError(
        "FAILED_PRECONDITION",
        ErrorType.NotActive,
        `tool ${quote(toolName)} is not active in runner ${quote(this.name)}: call ActivateTool first`,
        toolName,
      );
    }
    if (!tool.handler) {
      throw new ToolRuntimeError(
        "FAILED_PRECONDITION",
        ErrorType.HandlerMissing,
        tool.spec.hasHandler
          ? `tool ${quote(toolName)} is served by another replica (a provider connected there): runs are not shared between replicas yet, so call the replica that serves it`
          : `tool ${quote(toolName)} has no handler in this server: it was registered without one, so it can be listed but not executed`,
        toolName,
      );
    }
    let timeoutMs = requested > 0 ? requested : tool.spec.defaultTimeoutMs || this.#defaultTimeoutMs;
    if (options.deadlineMs !== undefined) timeoutMs = Math.max(0, Math.min(timeoutMs, options.deadlineMs));
    return { tool, handler: tool.handler, timeoutMs };
  }

  /** Runs a prepared run and tells the observers; never throws (see executeTool). */
  async run(
    prepared: PreparedRun,
    inputs: unknown,
    options: ExecuteCallOptions & { executionId: string },
  ): Promise<ToolResult> {
    return this.runNow(prepared, inputs, options);
  }

  /**
   * {@link run}, with the result at once when the handler returns a value (see executeTool): the
   * attempt loop takes it so, and a run of such a handler ends without a turn of the microtask queue.
   */
  runNow(
    prepared: PreparedRun,
    inputs: unknown,
    options: ExecuteCallOptions & { executionId: string },
  ): MaybePromise<ToolResult> {
    // The call's options go to the run as they are (no copy per run); callbacks given one by one
    // are gathered into a sink first. The run tells the observers of its start and end itself (it
    // is the RunInfo they get), so that its end needs no promise of its own here.
    return executeTool(prepared, inputs, this, hasCallbacks(options) ? withSink(options) : options);
  }

  /**
   * Executes an active tool. Throws (see {@link prepare}) only when the run cannot start; once it
   * starts, every failure is a ToolResult with `success` false.
   */
  async execute(
    toolName: string,
    inputs: unknown,
    options: ExecuteCallOptions = {},
  ): Promise<{ executionId: string; result: ToolResult }> {
    const prepared = this.prepare(toolName, options, true);
    const executionId = options.executionId ?? randomUUID();
    const result = await this.run(prepared, inputs, { ...options, executionId });
    return { executionId, result };
  }
}

/** Whether the call gave any of the callbacks one by one. */
function hasCallbacks(options: ExecuteCallOptions): boolean {
  return (
    options.onProgress !== undefined ||
    options.onLog !== undefined ||
    options.onOutput !== undefined ||
    options.onStart !== undefined ||
    options.onHandlerCalled !== undefined
  );
}

/** The call's options with its callbacks gathered into a sink (after the sink it gave, if any). */
function withSink<T extends ExecuteCallOptions>(options: T): T {
  const given = options.sink;
  const sink: RunSink = {
    progress(report) {
      given?.progress?.(report);
      options.onProgress?.(report);
    },
    log(level, message) {
      given?.log?.(level, message);
      options.onLog?.(level, message);
    },
    output(chunk) {
      given?.output?.(chunk);
      options.onOutput?.(chunk);
    },
    starting() {
      given?.starting?.();
      options.onStart?.();
    },
    handlerCalled(settled) {
      given?.handlerCalled?.(settled);
      options.onHandlerCalled?.(settled);
    },
  };
  return { ...options, sink };
}

/**
 * A set of tool names that holds one name without a Set: the private runner of a StartExecution
 * or RunTool activates one tool, and a Set with one entry is about 150 bytes more for every run in
 * flight.
 */
class ActiveNames {
  #one: string | undefined;
  #many: Set<string> | undefined;

  get size(): number {
    return this.#many ? this.#many.size : this.#one === undefined ? 0 : 1;
  }

  has(name: string): boolean {
    return this.#many ? this.#many.has(name) : this.#one === name;
  }

  add(name: string): void {
    if (this.#many) this.#many.add(name);
    else if (this.#one === undefined || this.#one === name) this.#one = name;
    else {
      this.#many = new Set([this.#one, name]);
      this.#one = undefined;
    }
  }

  delete(name: string): boolean {
    if (this.#many) return this.#many.delete(name);
    if (this.#one !== name) return false;
    this.#one = undefined;
    return true;
  }
}
