import { fromJson, type JsonObject, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { ConnectRequestSchema } from "../../gen/toolruntime/v1/provider_pb.js";
import { ProviderService, type ConnectResponse } from "../../gen/toolruntime/v1/provider_pb.js";
import { ErrorType } from "../errors/tool-runtime-error.js";
import { chunkSizeProblem, roomForOutput, sizeProblem } from "../runner/output-fits.js";
import { checkJsonObject, defaultJsonLimits, outputChunkLimits, type JsonLimits } from "../json/check-json.js";
import type { ToolContext } from "../registry/tool-definition.js";
import { EventQueue } from "../runner/event-queue.js";
import { describeThrown } from "../runner/run-outcome.js";
import { maxLogMessageLength, maxProgressMessageLength } from "../runner/text-limits.js";
import type { DefinedTool } from "../tools/define-tool.js";
import { createProviderTransport, type ProviderTlsOptions } from "./provider-transport.js";
import { reconnectDelayMs, type ReconnectOptions } from "./reconnect-delay.js";

/** Options of {@link createProvider}. */
export interface ProviderOptions {
  /** The server's gRPC address, "host:port". */
  readonly address: string;
  /** The provider's name: one lowercase segment. */
  readonly providerName: string;
  /** The tools it serves, made with defineTool. */
  readonly tools: readonly DefinedTool[];
  /** Most runs at once. Default 16. */
  readonly maxConcurrency?: number;
  /** Bearer token, when the server requires authentication. */
  readonly token?: string;
  /** TLS to the server (CA, and client certificate and key for mutual TLS); plaintext when absent. */
  readonly tls?: ProviderTlsOptions;
  /**
   * Send `token` over plaintext to a host other than loopback. Default false: createProvider throws
   * instead, as the token would cross the network in clear.
   */
  readonly allowInsecureToken?: boolean;
  /**
   * Reconnecting after the server drops the stream (or cannot be reached): exponential backoff from
   * `initialDelayMs` (default 250) doubling up to `maxDelayMs` (default 10,000), each delay
   * jittered to between half and all of it; the tools are announced again on each connection.
   * `false`: the provider ends with its first stream.
   */
  readonly reconnect?: ReconnectOptions | false;
  /** Limits on outputs, as the server's (default 64 levels, 4 MiB). */
  readonly jsonLimits?: JsonLimits;
  /**
   * Told of each welcome, each `draining` from a stopping server, and each lost connection (with
   * the delay before the next attempt).
   */
  readonly onEvent?: (event: ProviderEvent) => void;
}

/** What a provider tells its {@link ProviderOptions.onEvent}. */
export type ProviderEvent =
  | { readonly kind: "connected"; readonly connectionId: string }
  /** The server is stopping: the provider finishes its runs, then connects again (elsewhere). */
  | { readonly kind: "draining"; readonly reason: string }
  | { readonly kind: "disconnected"; readonly error: unknown; readonly retryInMs: number | undefined };

/** A running provider. */
export interface Provider {
  /**
   * Resolves with the connection id once the server first welcomed the provider; rejects if it
   * refused it (or, without reconnect, if the first stream failed).
   */
  readonly connected: Promise<string>;
  /** Resolves when the provider stopped: after close or drain, or when the server refused it for good. */
  readonly closed: Promise<void>;
  /** The current connection's id, while connected. */
  readonly connectionId: string | undefined;
  /** Ends the stream at once: runs in flight are aborted and the server fails them. */
  close(): void;
  /**
   * Stops gracefully: tells the server to assign nothing more, lets the runs in flight finish for
   * up to `graceMs` (default 10,000), hands the others back to the server (which assigns them
   * elsewhere) and aborts them here, then ends the stream. Resolves when the provider stopped.
   */
  drain(graceMs?: number): Promise<void>;
}

type Request = MessageInitShape<typeof ConnectRequestSchema>;

/** Status codes with which a server refuses a provider for good: reconnecting would not help. */
const refusals = new Set([
  Code.InvalidArgument,
  Code.AlreadyExists,
  Code.PermissionDenied,
  Code.Unauthenticated,
  Code.Unimplemented,
  Code.FailedPrecondition,
]);

/** One stream to the server: its outgoing messages and the runs it was assigned. */
interface Session {
  readonly outgoing: EventQueue<Request>;
  readonly running: Map<string, AbortController>;
  /** Runs handed back while draining: whatever they produce later is not sent. */
  readonly handedBack: Set<string>;
  readonly abort: AbortController;
  draining: boolean;
  welcomed: boolean;
  watchdog: NodeJS.Timeout | undefined;
}

/**
 * Serves in-process tools to a remote toolruntime server over its provider protocol: one
 * bidirectional gRPC stream, no inbound port. Runs arrive as assignments and are executed with
 * the same handler context and the same JSON checks as in-process tools (signal, progress, logs,
 * output). When the server drops the stream, the provider reconnects with backoff and announces
 * its tools again. Throws a TypeError for an invalid address or TLS options, or a token that would
 * be sent in clear to another machine.
 */
export function createProvider(options: ProviderOptions): Provider {
  const connection = createProviderTransport(options);
  const closeTransport = (): void => connection.close();
  const client = createClient(ProviderService, connection.transport);
  const tools = new Map(options.tools.map((tool) => [tool.spec.name, tool]));
  const jsonLimits = options.jsonLimits ?? defaultJsonLimits;
  const onEvent = options.onEvent ?? (() => undefined);
  const stop = new AbortController();
  let session: Session | undefined;
  let connectionId: string | undefined;
  let draining = false;
  let drainDone: (() => void) | undefined;
  let welcomed: (id: string) => void = () => undefined;
  let refused: (error: unknown) => void = () => undefined;
  const connected = new Promise<string>((resolve, reject) => {
    welcomed = resolve;
    refused = reject;
  });
  connected.catch(() => undefined);

  const run = async (
    current: Session,
    executionId: string,
    toolName: string,
    inputs: JsonObject,
    deadline: Date,
  ): Promise<void> => {
    const tool = tools.get(toolName);
    const abort = new AbortController();
    current.running.set(executionId, abort);
    let running = true;
    const send = (request: Request): void => {
      if (running && !current.handedBack.has(executionId)) current.outgoing.push(request);
    };
    const context: ToolContext = {
      signal: abort.signal,
      executionId,
      toolName,
      deadline,
      reportProgress: (report) => {
        const fraction = report.fraction;
        if (fraction !== undefined && !(fraction >= 0 && fraction <= 1)) {
          throw new RangeError(`progress fraction ${String(fraction)} is outside 0..1`);
        }
        send({
          message: {
            case: "progress",
            // Cut to what the server keeps: a longer message could make one over the stream's
            // limit, which would end the stream and every run on it.
            value: {
              executionId,
              fraction: fraction ?? -1,
              message: String(report.message ?? "").slice(0, maxProgressMessageLength),
            },
          },
        });
      },
      log: (level, message) =>
        send({
          message: {
            case: "log",
            value: { executionId, level, message: String(message).slice(0, maxLogMessageLength) },
          },
        }),
      emitOutput: (chunk) => {
        const check = checkJsonObject({ chunk }, "output chunk", outputChunkLimits);
        if (!check.ok) throw new TypeError(check.problem);
        // Within the server's limit as protobuf too (see runner/output-fits.ts): a message over it
        // would end the whole provider stream, every run on it with it.
        const chunkValue = check.value["chunk"] as JsonValue;
        const tooLarge = chunkSizeProblem(chunkValue, check.bytes, jsonLimits.maxBytes);
        if (tooLarge) throw new TypeError(tooLarge);
        send({
          message: {
            case: "output",
            value: { executionId, chunk: fromJson(ValueSchema, chunkValue) },
          },
        });
      },
    };
    let result: Request;
    try {
      if (!tool) throw new Error(`this provider does not serve ${JSON.stringify(toolName)}`);
      const output = await tool.handler(inputs, context);
      if (output === undefined) {
        // No output at all: the server fails the run as it fails an in-process handler that returns nothing.
        result = { message: { case: "result", value: { executionId } } };
      } else {
        const check = checkJsonObject(output, "output", jsonLimits);
        // Within the server's limit as protobuf too, as an in-process run's (see output-fits.ts).
        const problem = check.ok
          ? sizeProblem("output", check.value, check.bytes, roomForOutput(jsonLimits.maxBytes))
          : check.problem;
        result =
          check.ok && problem === undefined
            ? { message: { case: "result", value: { executionId, output: check.value } } }
            : {
                message: {
                  case: "result",
                  value: {
                    executionId,
                    error: { toolName, errorType: ErrorType.OutputValidation, details: problem ?? "" },
                  },
                },
              };
      }
    } catch (error) {
      result = {
        message: {
          case: "result",
          value: { executionId, error: { toolName, errorType: declaredType(error), details: describeThrown(error) } },
        },
      };
    }
    send(result);
    running = false;
    current.running.delete(executionId);
    if (current.draining && current.running.size === 0) current.outgoing.end();
  };

  // The server's silence detector: a server that sends nothing (not even a heartbeat) for its
  // failure timeout is considered gone, and the stream is ended (then reconnected). The timer fires
  // exactly then: when it fires early (the server spoke since), it is set again for the time left.
  const watchServer = (current: Session, failureTimeoutMs: number, heard: { at: number }): void => {
    const check = (): void => {
      const left = heard.at + failureTimeoutMs - Date.now();
      if (left > 0) {
        current.watchdog = setTimeout(check, left).unref();
        return;
      }
      current.abort.abort(new ConnectError(`the server sent nothing for ${failureTimeoutMs} ms`, Code.Unavailable));
    };
    current.watchdog = setTimeout(check, failureTimeoutMs).unref();
  };

  const handBack = (current: Session, executionId: string, reason: string): void => {
    current.handedBack.add(executionId);
    current.outgoing.push({ message: { case: "handBack", value: { executionId, reason } } });
    current.running.get(executionId)?.abort(new Error(reason));
  };

  const handle = (current: Session, response: ConnectResponse, heard: { at: number }): void => {
    heard.at = Date.now();
    const message = response.message;
    switch (message.case) {
      case "welcome":
        if (message.value.failureTimeoutMs > 0) watchServer(current, message.value.failureTimeoutMs, heard);
        current.welcomed = true;
        connectionId = message.value.connectionId;
        welcomed(message.value.connectionId);
        onEvent({ kind: "connected", connectionId: message.value.connectionId });
        return;
      case "heartbeat":
        current.outgoing.push({ message: { case: "heartbeat", value: {} } });
        return;
      case "assign": {
        const { executionId, toolName, inputs, deadline } = message.value;
        if (current.draining) {
          current.outgoing.push({
            message: { case: "handBack", value: { executionId, reason: "the provider is draining" } },
          });
          return;
        }
        const deadlineDate = deadline
          ? new Date(Number(deadline.seconds) * 1000 + deadline.nanos / 1e6)
          : new Date(Date.now() + 30_000);
        void run(current, executionId, toolName, inputs ?? {}, deadlineDate);
        return;
      }
      case "cancel":
        current.running
          .get(message.value.executionId)
          ?.abort(new Error(message.value.reason || "cancelled by the server"));
        return;
      case "draining":
        // The server stops: finish the runs held, then end this stream; the provider then connects
        // again (to another replica, behind a load balancer) as after any stream that ended.
        onEvent({ kind: "draining", reason: message.value.reason });
        if (current.draining) return;
        current.draining = true;
        if (current.running.size === 0) current.outgoing.end();
        return;
      case "rejected":
      case undefined:
        return;
    }
  };

  /**
   * One stream, from hello to its end; resolves with whether the server welcomed it and the error
   * that ended it (undefined when it ended cleanly or by close).
   */
  const connectOnce = async (): Promise<{ welcomed: boolean; error: unknown }> => {
    const current: Session = {
      outgoing: new EventQueue<Request>(),
      running: new Map(),
      handedBack: new Set(),
      abort: new AbortController(),
      draining: false,
      welcomed: false,
      watchdog: undefined,
    };
    session = current;
    const onStop = (): void => current.abort.abort();
    stop.signal.addEventListener("abort", onStop, { once: true });
    current.outgoing.push({
      message: {
        case: "hello",
        value: {
          providerName: options.providerName,
          tools: options.tools.map((tool) => tool.spec),
          maxConcurrency: options.maxConcurrency ?? 16,
        },
      },
    });
    const heard = { at: Date.now() };
    try {
      const headers = options.token ? { authorization: `Bearer ${options.token}` } : undefined;
      const responses = client.connect(current.outgoing, {
        signal: current.abort.signal,
        ...(headers ? { headers } : {}),
      });
      for await (const response of responses) handle(current, response, heard);
      return { welcomed: current.welcomed, error: undefined };
    } catch (error) {
      const reason: unknown = current.abort.signal.reason;
      const ownReason = reason instanceof ConnectError ? reason : error;
      return { welcomed: current.welcomed, error: stop.signal.aborted ? undefined : ownReason };
    } finally {
      clearTimeout(current.watchdog);
      stop.signal.removeEventListener("abort", onStop);
      current.outgoing.end();
      for (const abort of current.running.values()) abort.abort(new Error("the provider stream ended"));
      connectionId = undefined;
      session = undefined;
    }
  };

  const closed = (async () => {
    let attempt = 0;
    try {
      for (;;) {
        const { welcomed: wasWelcomed, error } = await connectOnce();
        if (stop.signal.aborted || draining) return;
        const refusal = error !== undefined && refusals.has(ConnectError.from(error).code);
        if (refusal || options.reconnect === false) {
          onEvent({ kind: "disconnected", error, retryInMs: undefined });
          refused(error ?? new Error("the provider stream ended before the server welcomed it"));
          return;
        }
        // After a stream that was welcomed, the backoff starts again from its first step.
        if (wasWelcomed) attempt = 0;
        const delay = reconnectDelayMs(attempt++, options.reconnect ?? {});
        onEvent({ kind: "disconnected", error, retryInMs: delay });
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, delay);
          stop.signal.addEventListener("abort", done, { once: true });
          function done(): void {
            clearTimeout(timer);
            stop.signal.removeEventListener("abort", done);
            resolve();
          }
        });
        if (stop.signal.aborted) return;
      }
    } finally {
      refused(new Error("the provider stopped before the server welcomed it"));
      closeTransport();
      drainDone?.();
    }
  })();

  return {
    connected,
    closed,
    get connectionId() {
      return connectionId;
    },
    close: () => {
      stop.abort();
    },
    drain: async (graceMs = 10_000) => {
      if (draining || stop.signal.aborted) return closed;
      draining = true;
      const current = session;
      if (!current) {
        stop.abort();
        return closed;
      }
      current.draining = true;
      current.outgoing.push({ message: { case: "drain", value: { reason: "the provider is stopping" } } });
      if (current.running.size === 0) current.outgoing.end();
      const grace = setTimeout(() => {
        for (const executionId of [...current.running.keys()])
          handBack(current, executionId, "the provider is stopping");
        current.outgoing.end();
      }, graceMs);
      drainDone = () => clearTimeout(grace);
      await closed;
    },
  };
}

/** The error type a thrown value declares with a string `errorType` property, else "HandlerError". */
function declaredType(thrown: unknown): string {
  const declared =
    typeof thrown === "object" && thrown !== null ? (thrown as { errorType?: unknown }).errorType : undefined;
  return typeof declared === "string" && declared !== "" ? declared : ErrorType.Handler;
}
