import { create, toJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate, ValueSchema, type Timestamp } from "@bufbuild/protobuf/wkt";
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { ConnectRequest, ConnectResponseSchema } from "../../gen/toolruntime/v1/provider_pb.js";
import { ToolSpecSchema, type ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { ErrorType, invalidRequest, ToolRuntimeError } from "../errors/tool-runtime-error.js";
import { checkSegmentName, quote } from "../registry/names.js";
import type { ToolContext } from "../registry/tool-definition.js";
import type { ToolRegistry } from "../registry/tool-registry.js";
import type { ToolStore } from "../stores/tool-store.js";
import { DeclaredFailure } from "../runner/declared-failure.js";
import { EventQueue } from "../runner/event-queue.js";
import { RuntimeFailure } from "../runner/runtime-failure.js";
import { assignmentSize } from "./assignment-size.js";

/** Messages the server sends a provider. */
export type ServerMessage = MessageInitShape<typeof ConnectResponseSchema>;

/** Timing of the provider protocol. */
export interface ProviderHubOptions {
  /** How often each side sends a heartbeat when idle, in milliseconds. Default 5,000. */
  readonly heartbeatIntervalMs?: number;
  /** Silence after which a provider is considered dead, in milliseconds. Default 15,000. */
  readonly failureTimeoutMs?: number;
  /** Most provider connections at once. Default 1,000. */
  readonly maxConnections?: number;
  /**
   * Largest message the server sends on a provider stream, in bytes (the transport's send limit).
   * A run whose assignment would be larger fails alone with an InputValidationError instead of
   * ending the stream. Default 4 MiB.
   */
  readonly maxMessageBytes?: number;
  /** Where the hub says why a run failed alone or a stream ended; silent when absent. */
  readonly logger?: Logger | undefined;
}

/** How an assignment ended on the provider's side: a result, or handed back by a draining provider. */
type Answer = { readonly kind: "result"; readonly output: unknown } | { readonly kind: "handed-back" };

/** A run handed to a provider and not yet answered. */
interface PendingRun {
  readonly context: ToolContext;
  readonly resolve: (answer: Answer) => void;
  readonly reject: (error: Error) => void;
}

/** One provider connection: its tools, capacity, runs in flight and outgoing messages. */
class ProviderConnection {
  readonly id = randomUUID();
  readonly outgoing = new EventQueue<ServerMessage>();
  readonly inFlight = new Map<string, PendingRun>();
  closed = false;
  /** The provider sent `drain`: it takes no new runs. */
  draining = false;

  constructor(
    readonly providerName: string,
    readonly toolNames: readonly string[],
    readonly maxConcurrency: number,
  ) {}

  get hasCapacity(): boolean {
    return !this.draining && this.inFlight.size < this.maxConcurrency;
  }
}

/** A tool served by providers: the provider that owns its name and the connections serving it. */
interface ServedTool {
  readonly providerName: string;
  readonly connections: Set<ProviderConnection>;
  /** Runs waiting for a connection with capacity. */
  readonly waiting: (() => void)[];
}

/** An error a provider's run ends with when the provider itself fails (error type "ProviderError"). */
export class ProviderError extends Error {
  override readonly name = "ProviderError";
}

/**
 * The server's side of the provider protocol (see provider.proto): accepts provider connections,
 * registers their tools with a dispatching handler, balances runs across the connections that serve
 * a tool by load within each one's own limit, relays progress, logs, output and results, cancels
 * runs, reassigns runs a draining provider hands back, and detects dead providers by silence.
 * Whatever a provider does, it can only end its own runs; a provider that vanishes ends them with a
 * ProviderError at once and leaves nothing behind but a note, in the registry, that its tools are
 * offline.
 */
export class ProviderHub {
  readonly heartbeatIntervalMs: number;
  readonly failureTimeoutMs: number;
  readonly #maxConnections: number;
  readonly #maxMessageBytes: number;
  readonly #logger: Logger | undefined;
  readonly #connections = new Set<ProviderConnection>();
  readonly #tools = new Map<string, ServedTool>();
  /** Why the server stops, once {@link drainAll} was called. */
  #drainReason: string | undefined;

  /**
   * @param registry the default registry's view, where provider-served tools are registered
   * @param store the tool store through which they are registered and removed
   */
  constructor(
    private readonly registry: ToolRegistry,
    private readonly store: ToolStore,
    options: ProviderHubOptions = {},
  ) {
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 5000;
    this.failureTimeoutMs = options.failureTimeoutMs ?? 15_000;
    this.#maxConnections = options.maxConnections ?? 1000;
    this.#maxMessageBytes = options.maxMessageBytes ?? 4 * 1024 * 1024;
    this.#logger = options.logger;
  }

  /**
   * The stream's first message, which must come within the failure timeout: a stream that stays
   * silent from the start (headers only) held its call slot for as long as its client kept the
   * connection, and enough of them took every slot of both ports.
   */
  async #firstMessage(iterator: AsyncIterator<ConnectRequest>): Promise<IteratorResult<ConnectRequest>> {
    let timer: NodeJS.Timeout | undefined;
    const silent = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            invalidRequest(
              `the first message of a provider stream must be hello, within the failure timeout of ${this.failureTimeoutMs} ms: none came`,
            ),
          ),
        this.failureTimeoutMs,
      );
    });
    try {
      return await Promise.race([iterator.next(), silent]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Counts for operators and tests: connections, provider-served tools, runs in flight. */
  stats(): { connections: number; tools: number; runsInFlight: number; waitingRuns: number } {
    let runsInFlight = 0;
    for (const connection of this.#connections) runsInFlight += connection.inFlight.size;
    let waitingRuns = 0;
    for (const tool of this.#tools.values()) waitingRuns += tool.waiting.length;
    return { connections: this.#connections.size, tools: this.#tools.size, runsInFlight, waitingRuns };
  }

  /**
   * Serves one provider stream: reads its hello, registers its tools, then relays messages both
   * ways until the stream ends, the provider falls silent for the failure timeout, or `signal`
   * aborts. Throws (before the first response) INVALID_ARGUMENT, ALREADY_EXISTS or
   * RESOURCE_EXHAUSTED for a hello that cannot be accepted; `authorize` throws PERMISSION_DENIED.
   */
  async *serve(
    requests: AsyncIterable<ConnectRequest>,
    signal: AbortSignal,
    authorize: (toolName: string) => void,
  ): AsyncGenerator<ServerMessage> {
    const iterator = requests[Symbol.asyncIterator]();
    const first = await this.#firstMessage(iterator);
    if (first.done || first.value.message.case !== "hello") {
      throw invalidRequest("the first message of a provider stream must be hello");
    }
    // A shared store's view is brought up to date first, so a tool registered by another replica
    // counts as taken.
    await this.store.view(this.registry.name);
    const connection = await this.#accept(first.value.message.value, authorize);
    let lastHeard = Date.now();
    let failure: ToolRuntimeError | undefined;
    const stop = (): void => connection.outgoing.end();
    signal.addEventListener("abort", stop, { once: true });
    // The failure timer fires exactly when the provider has been silent for the failure timeout:
    // when it fires early (the provider spoke since it was set), it is set again for the time left.
    let silenceTimer: NodeJS.Timeout | undefined;
    const watchSilence = (): void => {
      const left = lastHeard + this.failureTimeoutMs - Date.now();
      if (left > 0) {
        silenceTimer = setTimeout(watchSilence, left);
        return;
      }
      failure = new ToolRuntimeError(
        "UNAVAILABLE",
        ErrorType.Unavailable,
        `provider ${quote(connection.providerName)} sent nothing for ${this.failureTimeoutMs} ms: it is considered dead`,
      );
      connection.outgoing.end();
    };
    silenceTimer = setTimeout(watchSilence, this.failureTimeoutMs);
    const ticker = setInterval(
      () => connection.outgoing.push({ message: { case: "heartbeat", value: {} } }),
      Math.min(this.heartbeatIntervalMs, this.failureTimeoutMs / 3),
    );
    // Read the provider's messages concurrently with sending ours; the loop ends with the stream.
    void (async () => {
      try {
        for (;;) {
          const next = await iterator.next();
          if (next.done) break;
          lastHeard = Date.now();
          this.#receive(connection, next.value);
        }
      } catch (error) {
        // The stream broke (the provider vanished, or sent a message over the transport's limit):
        // say so, since every run in flight on it fails with it.
        const runsInFlight = connection.inFlight.size;
        this.#logger?.[runsInFlight > 0 ? "warn" : "info"](
          { providerName: connection.providerName, connectionId: connection.id, runsInFlight, err: error },
          "provider stream broke: its runs in flight fail",
        );
      } finally {
        connection.outgoing.end();
      }
    })();
    try {
      yield {
        message: {
          case: "welcome",
          value: {
            connectionId: connection.id,
            heartbeatIntervalMs: this.heartbeatIntervalMs,
            failureTimeoutMs: this.failureTimeoutMs,
            tools: connection.toolNames
              .map((name) => this.registry.get(name)?.spec)
              .filter((spec) => spec !== undefined),
          },
        },
      };
      // A provider that connects while the server stops is told at once.
      if (this.#drainReason !== undefined) this.#tellDraining(connection, this.#drainReason);
      for await (const message of connection.outgoing) yield message;
      if (failure) throw failure;
    } finally {
      clearInterval(ticker);
      clearTimeout(silenceTimer);
      signal.removeEventListener("abort", stop);
      this.#drop(connection, failure?.details ?? `provider ${quote(connection.providerName)} disconnected`);
      void iterator.return?.();
    }
  }

  /**
   * Tells every provider connection that the server stops (`draining` with `reason`) and assigns
   * them no new runs: each finishes the runs it holds, ends its stream and connects again
   * elsewhere, so a server whose providers are idle stops without waiting for its grace period.
   * Connections that arrive later are told as soon as they are welcomed.
   */
  drainAll(reason: string): void {
    if (this.#drainReason !== undefined) return;
    this.#drainReason = reason;
    for (const connection of this.#connections) this.#tellDraining(connection, reason);
  }

  #tellDraining(connection: ProviderConnection, reason: string): void {
    if (connection.closed) return;
    connection.draining = true;
    connection.outgoing.push({ message: { case: "draining", value: { reason } } });
  }

  async #accept(
    hello: Extract<ConnectRequest["message"], { case: "hello" }>["value"],
    authorize: (toolName: string) => void,
  ): Promise<ProviderConnection> {
    const nameError = checkSegmentName(hello.providerName, "provider_name");
    if (nameError || hello.providerName === "") {
      throw nameError ?? invalidRequest('provider_name is empty: name the provider, for example "python-models"');
    }
    if (hello.tools.length === 0) throw invalidRequest("hello declares no tools: a provider must serve at least one");
    if (hello.maxConcurrency > 10_000)
      throw invalidRequest(`max_concurrency ${hello.maxConcurrency} is too large: use 1 to 10,000`);
    if (this.#connections.size >= this.#maxConnections) {
      throw new ToolRuntimeError(
        "RESOURCE_EXHAUSTED",
        ErrorType.ResourceExhausted,
        `the server holds its maximum of ${this.#maxConnections} provider connections`,
      );
    }
    for (const spec of hello.tools) {
      authorize(spec.name);
      const served = this.#tools.get(spec.name);
      const existing = this.registry.get(spec.name);
      // A shared store decides itself: the same provider may serve a tool through other replicas.
      if (served ? served.providerName !== hello.providerName : existing !== undefined && !this.store.shared) {
        throw new ToolRuntimeError(
          "ALREADY_EXISTS",
          ErrorType.Registration,
          `tool ${quote(spec.name)} is already served by ${served ? `provider ${quote(served.providerName)}` : "this server or another registration"}: a provider cannot take it over`,
          spec.name,
        );
      }
    }
    const connection = new ProviderConnection(
      hello.providerName,
      hello.tools.map((spec) => spec.name),
      hello.maxConcurrency || 16,
    );
    // Reserved synchronously, so a concurrent hello sees the tools as served while they register.
    const registered: string[] = [];
    for (const spec of hello.tools) {
      let served = this.#tools.get(spec.name);
      if (!served) {
        served = { providerName: hello.providerName, connections: new Set(), waiting: [] };
        this.#tools.set(spec.name, served);
        registered.push(spec.name);
      }
      served.connections.add(connection);
    }
    const done: string[] = [];
    try {
      for (const name of registered) {
        const spec = hello.tools.find((tool) => tool.name === name) as ToolSpec;
        await this.store.registerProvided(
          this.registry.name,
          { spec: create(ToolSpecSchema, spec), handler: this.#dispatcher(spec.name) },
          hello.providerName,
        );
        done.push(name);
      }
    } catch (error) {
      for (const name of registered) this.#tools.delete(name);
      for (const name of done) {
        await this.store.withdrawProvided(this.registry.name, name, hello.providerName).catch(() => undefined);
      }
      for (const served of this.#tools.values()) served.connections.delete(connection);
      throw error;
    }
    this.#connections.add(connection);
    return connection;
  }

  /**
   * The handler registered for a provider-served tool: hands each run to a connection, and to
   * another one when a draining provider hands it back (each connection at most once, as a
   * draining connection takes no runs).
   */
  #dispatcher(toolName: string) {
    return async (inputs: JsonObject, context: ToolContext): Promise<unknown> => {
      const deadline = timestampFromDate(context.deadline);
      this.#ensureDeliverable(toolName, inputs, deadline, context);
      for (;;) {
        const connection = await this.#pickConnection(toolName, context.signal);
        const answer = await this.#assign(connection, toolName, inputs, deadline, context);
        if (answer.kind === "result") return answer.output;
      }
    };
  }

  /**
   * Fails a run (with an InputValidationError, and a line in the log) whose assignment would be
   * over the stream's message limit, before it is sent: the transport would otherwise end the
   * provider's stream, failing every run on it, and no one would learn why.
   */
  #ensureDeliverable(toolName: string, inputs: JsonObject, deadline: Timestamp, context: ToolContext): void {
    const providerName = this.#tools.get(toolName)?.providerName;
    // No provider: the dispatcher fails the run with a ProviderError.
    if (providerName === undefined) return;
    const sizeBytes = assignmentSize({ executionId: context.executionId, toolName, inputs, deadline });
    if (sizeBytes <= this.#maxMessageBytes) return;
    this.#logger?.warn(
      { providerName, toolName, executionId: context.executionId, sizeBytes, limitBytes: this.#maxMessageBytes },
      "run not assigned to provider: its assignment would be over the stream's message limit",
    );
    throw new RuntimeFailure(
      ErrorType.InputValidation,
      `inputs of ${quote(toolName)} cannot be delivered to provider ${quote(providerName)}: its assignment would be ${sizeBytes} bytes once encoded, over the provider stream's message limit of ${this.#maxMessageBytes} bytes: send smaller inputs`,
    );
  }

  /** Sends one run to one connection; settles with its answer, or rejects when it fails or is cancelled. */
  #assign(
    connection: ProviderConnection,
    toolName: string,
    inputs: JsonObject,
    deadline: Timestamp,
    context: ToolContext,
  ): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const executionId = context.executionId;
      const onAbort = (): void => {
        if (!connection.inFlight.delete(executionId)) return;
        connection.outgoing.push({
          message: {
            case: "cancel",
            value: {
              executionId,
              reason: String((context.signal.reason as Error | undefined)?.message ?? "cancelled"),
            },
          },
        });
        this.#wakeWaiters(connection);
        reject(new Error("cancelled"));
      };
      const settle = <T>(finish: (value: T) => void) => {
        return (value: T): void => {
          context.signal.removeEventListener("abort", onAbort);
          finish(value);
        };
      };
      connection.inFlight.set(executionId, { context, resolve: settle(resolve), reject: settle(reject) });
      context.signal.addEventListener("abort", onAbort, { once: true });
      connection.outgoing.push({
        message: {
          case: "assign",
          value: { executionId, toolName, inputs, deadline },
        },
      });
    });
  }

  /** The least-loaded connection serving `toolName` with capacity left; waits for one if needed. */
  async #pickConnection(toolName: string, signal: AbortSignal): Promise<ProviderConnection> {
    for (;;) {
      const served = this.#tools.get(toolName);
      if (!served || served.connections.size === 0) {
        throw new ProviderError(`no provider serves ${quote(toolName)} any more`);
      }
      let best: ProviderConnection | undefined;
      for (const connection of served.connections) {
        if (connection.hasCapacity && (!best || connection.inFlight.size < best.inFlight.size)) best = connection;
      }
      if (best) return best;
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(new Error("cancelled while waiting for a provider"));
        signal.addEventListener("abort", onAbort, { once: true });
        served.waiting.push(() => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        });
      });
    }
  }

  #receive(connection: ProviderConnection, request: ConnectRequest): void {
    const message = request.message;
    switch (message.case) {
      case "heartbeat":
      case undefined:
        return;
      case "hello":
        this.#reject(connection, "", "hello was already received");
        return;
      case "drain":
        connection.draining = true;
        return;
      case "progress":
      case "log":
      case "output":
      case "result":
      case "handBack": {
        const executionId = message.value.executionId;
        const run = connection.inFlight.get(executionId);
        if (!run) {
          this.#reject(
            connection,
            executionId,
            `execution ${quote(executionId)} is not assigned to this connection, or already answered`,
          );
          return;
        }
        try {
          this.#relay(connection, run, executionId, message);
        } catch (error) {
          this.#reject(connection, executionId, (error as Error).message);
        }
        return;
      }
    }
  }

  #reject(connection: ProviderConnection, executionId: string, reason: string): void {
    connection.outgoing.push({ message: { case: "rejected", value: { executionId, reason } } });
  }

  #relay(
    connection: ProviderConnection,
    run: PendingRun,
    executionId: string,
    message: ConnectRequest["message"],
  ): void {
    switch (message.case) {
      case "progress":
        run.context.reportProgress(
          message.value.fraction < 0
            ? { message: message.value.message }
            : { fraction: message.value.fraction, message: message.value.message },
        );
        return;
      case "log": {
        const level = ["debug", "info", "warn", "error"].includes(message.value.level) ? message.value.level : "info";
        run.context.log(level as "info", message.value.message);
        return;
      }
      case "output": {
        const chunk = message.value.chunk;
        try {
          run.context.emitOutput(chunk ? toJson(ValueSchema, chunk) : null);
        } catch (error) {
          this.#failRun(
            connection,
            run,
            executionId,
            `output of ${quote(run.context.toolName)} from provider ${quote(connection.providerName)} cannot be forwarded: ${(error as Error).message}`,
          );
        }
        return;
      }
      case "result":
        connection.inFlight.delete(executionId);
        this.#wakeWaiters(connection);
        if (message.value.error) {
          run.reject(DeclaredFailure.of(message.value.error.errorType, message.value.error.details));
        } else {
          // An absent output is a handler that returned nothing: the run checks it as it would in process.
          run.resolve({ kind: "result", output: message.value.output });
        }
        return;
      case "handBack":
        if (!connection.draining) {
          throw new Error(
            `execution ${quote(executionId)} cannot be handed back: only a draining provider hands runs back`,
          );
        }
        connection.inFlight.delete(executionId);
        this.#wakeWaiters(connection);
        run.resolve({ kind: "handed-back" });
        return;
      default:
        return;
    }
  }

  /**
   * Fails one run for what its provider sent (an output chunk the server cannot forward) with an
   * OutputValidationError, tells the provider to stop it, and logs why; the connection and its
   * other runs go on. A later message about the run is `rejected`.
   */
  #failRun(connection: ProviderConnection, run: PendingRun, executionId: string, details: string): void {
    connection.inFlight.delete(executionId);
    connection.outgoing.push({ message: { case: "cancel", value: { executionId, reason: details } } });
    this.#wakeWaiters(connection);
    this.#logger?.warn(
      { providerName: connection.providerName, connectionId: connection.id, executionId, reason: details },
      "run failed: its provider sent what the server cannot forward",
    );
    run.reject(new RuntimeFailure(ErrorType.OutputValidation, details));
  }

  /** A connection freed a slot: let one waiting run of each of its tools look again. */
  #wakeWaiters(connection: ProviderConnection): void {
    for (const name of connection.toolNames) this.#tools.get(name)?.waiting.shift()?.();
  }

  /**
   * Ends a connection: its runs fail, and tools no other connection serves are removed from the
   * registry as offline (so runners keep their activations and NOT_FOUND names the provider).
   */
  #drop(connection: ProviderConnection, reason: string): void {
    if (connection.closed) return;
    connection.closed = true;
    this.#connections.delete(connection);
    for (const [, run] of connection.inFlight) run.reject(new ProviderError(reason));
    connection.inFlight.clear();
    for (const name of connection.toolNames) {
      const served = this.#tools.get(name);
      if (!served) continue;
      served.connections.delete(connection);
      if (served.connections.size === 0) {
        this.#tools.delete(name);
        // A shared store that cannot be reached keeps the tool listed; its runs then fail with a
        // ProviderError (no connection serves it) until the provider returns or it is removed.
        void this.store.withdrawProvided(this.registry.name, name, served.providerName).catch(() => undefined);
      }
      // Runs waiting for a connection look again: at another one, or learn that there is none.
      for (const wake of served.waiting.splice(0)) wake();
    }
  }
}
