import { fromJson, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { ConnectRequestSchema } from "../../gen/toolruntime/v1/provider_pb.js";
import { ProviderService, type ConnectResponse } from "../../gen/toolruntime/v1/provider_pb.js";
import { ErrorType } from "../errors/tool-runtime-error.js";
import { EventQueue } from "../runner/event-queue.js";
import { describeThrown } from "../runner/run-outcome.js";
import type { ToolContext } from "../registry/tool-definition.js";
import type { DefinedTool } from "../tools/define-tool.js";

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
}

/** A running provider. */
export interface Provider {
  /** Resolves with the connection id once the server welcomed the provider; rejects if it refused. */
  readonly connected: Promise<string>;
  /** Resolves when the stream ends (after close, or when the server ends it). */
  readonly closed: Promise<void>;
  /** Ends the stream: runs in flight are aborted and the server fails them. */
  close(): void;
}

type Request = MessageInitShape<typeof ConnectRequestSchema>;

/**
 * Serves in-process tools to a remote toolruntime server over its provider protocol: one
 * bidirectional gRPC stream, no inbound port. Runs arrive as assignments and are executed with
 * the same handler context as in-process tools (signal, progress, logs, output).
 */
export function createProvider(options: ProviderOptions): Provider {
  const transport = createGrpcTransport({ baseUrl: `http://${options.address}` });
  const client = createClient(ProviderService, transport);
  const outgoing = new EventQueue<Request>();
  const stop = new AbortController();
  const running = new Map<string, AbortController>();
  const tools = new Map(options.tools.map((tool) => [tool.spec.name, tool]));
  let welcomed: (id: string) => void = () => undefined;
  let refused: (error: unknown) => void = () => undefined;
  const connected = new Promise<string>((resolve, reject) => {
    welcomed = resolve;
    refused = reject;
  });
  connected.catch(() => undefined);

  outgoing.push({
    message: {
      case: "hello",
      value: {
        providerName: options.providerName,
        tools: options.tools.map((tool) => tool.spec),
        maxConcurrency: options.maxConcurrency ?? 16,
      },
    },
  });

  const run = async (executionId: string, toolName: string, inputs: JsonObject, deadline: Date): Promise<void> => {
    const tool = tools.get(toolName);
    const abort = new AbortController();
    running.set(executionId, abort);
    const context: ToolContext = {
      signal: abort.signal,
      executionId,
      toolName,
      deadline,
      reportProgress: (report) =>
        outgoing.push({
          message: {
            case: "progress",
            value: { executionId, fraction: report.fraction ?? -1, message: report.message ?? "" },
          },
        }),
      log: (level, message) => outgoing.push({ message: { case: "log", value: { executionId, level, message } } }),
      emitOutput: (chunk) =>
        outgoing.push({ message: { case: "output", value: { executionId, chunk: fromJson(ValueSchema, chunk) } } }),
    };
    try {
      if (!tool) throw new Error(`this provider does not serve ${JSON.stringify(toolName)}`);
      const output = (await tool.handler(inputs, context)) as JsonObject;
      outgoing.push({ message: { case: "result", value: { executionId, output } } });
    } catch (error) {
      outgoing.push({
        message: {
          case: "result",
          value: { executionId, error: { toolName, errorType: ErrorType.Handler, details: describeThrown(error) } },
        },
      });
    } finally {
      running.delete(executionId);
    }
  };

  // The server's silence detector: after the welcome, a server that sends nothing (not even a
  // heartbeat) for its failure timeout is considered gone and the stream is ended.
  let lastHeard = Date.now();
  let watchdog: NodeJS.Timeout | undefined;
  const watchServer = (failureTimeoutMs: number): void => {
    watchdog = setInterval(
      () => {
        if (Date.now() - lastHeard > failureTimeoutMs)
          stop.abort(new Error(`the server sent nothing for ${failureTimeoutMs} ms`));
      },
      Math.max(50, failureTimeoutMs / 3),
    );
    watchdog.unref();
  };

  const handle = (response: ConnectResponse): void => {
    lastHeard = Date.now();
    const message = response.message;
    switch (message.case) {
      case "welcome":
        if (message.value.failureTimeoutMs > 0) watchServer(message.value.failureTimeoutMs);
        welcomed(message.value.connectionId);
        return;
      case "heartbeat":
        outgoing.push({ message: { case: "heartbeat", value: {} } });
        return;
      case "assign": {
        const { executionId, toolName, inputs, deadline } = message.value;
        const deadlineDate = deadline
          ? new Date(Number(deadline.seconds) * 1000 + deadline.nanos / 1e6)
          : new Date(Date.now() + 30_000);
        void run(executionId, toolName, inputs ?? {}, deadlineDate);
        return;
      }
      case "cancel":
        running.get(message.value.executionId)?.abort(new Error(message.value.reason || "cancelled by the server"));
        return;
      case "rejected":
      case undefined:
        return;
    }
  };

  const closed = (async () => {
    try {
      const headers = options.token ? { authorization: `Bearer ${options.token}` } : undefined;
      for await (const response of client.connect(outgoing, { signal: stop.signal, ...(headers ? { headers } : {}) }))
        handle(response);
    } catch (error) {
      refused(error);
      if (!stop.signal.aborted) throw error;
    } finally {
      clearInterval(watchdog);
      refused(new Error("the provider stream ended before the server welcomed it"));
      outgoing.end();
      for (const abort of running.values()) abort.abort(new Error("the provider stream ended"));
    }
  })();
  closed.catch(() => undefined);

  return {
    connected,
    closed: closed.catch(() => undefined),
    close: () => {
      outgoing.end();
      stop.abort();
    },
  };
}
