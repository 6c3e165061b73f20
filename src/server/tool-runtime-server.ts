import { setMaxListeners } from "node:events";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { pino, type Logger } from "pino";
import { RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { createToolRuntime, type ToolRuntime, type ToolRuntimeOptions } from "../runtime.js";
import { addServiceToGrpcServer } from "./grpc-adapter.js";
import { bindGrpcServer, createGrpcServer, shutdownGrpcServer } from "./grpc-listener.js";
import { listenHttp, type NodeRequestHandler } from "./http-listener.js";
import { mapServiceErrors } from "./map-service-errors.js";
import { protobufRecursionLimit } from "./protobuf-limits.js";
import { createRegistryService } from "./registry-service.js";
import { createRunnerService } from "./runner-service.js";

/** Options of {@link startServer}. Every field has a default. */
export interface ServerOptions extends ToolRuntimeOptions {
  /** Address both ports listen on. Default "127.0.0.1". */
  readonly host?: string;
  /** Port of native gRPC (grpc-js). Default 50051; 0 picks a free port. */
  readonly grpcPort?: number;
  /** Port of Connect, gRPC-Web and gRPC over HTTP/1.1 and HTTP/2 (connect-node). Default 8080; 0 picks a free port. */
  readonly httpPort?: number;
  /** Largest request or response message, in bytes. Default 4 MiB. */
  readonly maxMessageBytes?: number;
  /** Logger. Default: pino at "info" on stdout. */
  readonly logger?: Logger;
}

/** A running server. */
export interface RunningServer {
  readonly runtime: ToolRuntime;
  /** "host:port" of the gRPC port. */
  readonly grpcAddress: string;
  /** "http://host:port" of the HTTP port. */
  readonly httpUrl: string;
  /** Stops both ports: calls in flight get `graceMs` (default 5,000) to finish, then are cut. */
  close(graceMs?: number): Promise<void>;
}

/** Time that calls cancelled at the end of the shutdown grace period get to send their results. */
const cancelledResultGraceMs = 500;

/** Default largest message: 4 MiB, the gRPC default. */
export const defaultMaxMessageBytes = 4 * 1024 * 1024;

/**
 * Starts the service on both ports with one implementation behind both: native gRPC through
 * grpc-js, and Connect plus gRPC-Web through connect-node.
 */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? "127.0.0.1";
  const maxMessageBytes = options.maxMessageBytes ?? defaultMaxMessageBytes;
  const logger = options.logger ?? pino();
  const runtime = createToolRuntime({
    ...options,
    runners: {
      ...options.runners,
      jsonLimits: { maxDepth: 64, maxBytes: maxMessageBytes, ...options.runners?.jsonLimits },
    },
  });
  const registry = mapServiceErrors(RegistryService, createRegistryService(runtime), logger);
  const runner = mapServiceErrors(RunnerService, createRunnerService(runtime), logger);
  const shutdown = new AbortController();
  // Every call in flight listens to the shutdown signal; thousands at once are normal.
  setMaxListeners(0, shutdown.signal);

  const grpcServer = createGrpcServer({ maxMessageBytes });
  addServiceToGrpcServer(grpcServer, RegistryService, registry, { logger, shutdownSignal: shutdown.signal });
  addServiceToGrpcServer(grpcServer, RunnerService, runner, { logger, shutdownSignal: shutdown.signal });

  const connectHandler = connectNodeAdapter({
    routes: (router: ConnectRouter) => {
      router.service(RegistryService, registry);
      router.service(RunnerService, runner);
    },
    readMaxBytes: maxMessageBytes,
    binaryOptions: { recursionLimit: protobufRecursionLimit },
    jsonOptions: { recursionLimit: protobufRecursionLimit },
    writeMaxBytes: maxMessageBytes,
    shutdownSignal: shutdown.signal,
  }) as NodeRequestHandler;

  let grpcPort: number;
  try {
    grpcPort = await bindGrpcServer(grpcServer, host, options.grpcPort ?? 50051);
  } catch (error) {
    runtime.close();
    throw error;
  }
  let http: Awaited<ReturnType<typeof listenHttp>>;
  try {
    http = await listenHttp(host, options.httpPort ?? 8080, connectHandler);
  } catch (error) {
    grpcServer.forceShutdown();
    runtime.close();
    throw error;
  }
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    runtime,
    grpcAddress: `${shownHost}:${grpcPort}`,
    httpUrl: `http://${shownHost}:${http.port}`,
    async close(graceMs = 5000) {
      // Calls still running when the grace period ends are cancelled, and get a moment more to
      // send their cancelled results before the connections are cut.
      const cancelTimer = setTimeout(
        () => shutdown.abort(new ConnectError("the server is shutting down", Code.Unavailable)),
        graceMs,
      );
      const hardStopMs = graceMs + cancelledResultGraceMs;
      await Promise.all([shutdownGrpcServer(grpcServer, hardStopMs), http.close(hardStopMs)]);
      clearTimeout(cancelTimer);
      shutdown.abort(new ConnectError("the server is shutting down", Code.Unavailable));
      runtime.close();
    },
  };
}
