import { Code, ConnectError, createContextValues, type ConnectRouter } from "@connectrpc/connect";
import { setMaxListeners } from "node:events";
import { pino, type Logger } from "pino";
import { file_toolruntime_v1_registry, RegistryService } from "../../gen/toolruntime/v1/registry_pb.js";
import { file_toolruntime_v1_runner, RunnerService } from "../../gen/toolruntime/v1/runner_pb.js";
import { ExecutionService, file_toolruntime_v1_execution } from "../../gen/toolruntime/v1/execution_pb.js";
import { file_toolruntime_v1_provider, ProviderService } from "../../gen/toolruntime/v1/provider_pb.js";
import { file_health_v1_health } from "../../gen/health/v1/health_pb.js";
import { createAuthenticator, type IdentityConfig } from "../auth/authenticator.js";
import { openToolRuntime, type OpenToolRuntimeOptions, type ToolRuntime } from "../runtime.js";
import { createCallLogger, createRunLogger } from "../telemetry/logging.js";
import { createServerMetrics } from "../telemetry/metrics.js";
import { createTracing, type TracingOptions } from "../telemetry/tracing.js";
import { peerCertificateKey } from "./call-context.js";
import { cancelledResultGraceMs } from "./call-run.js";
import { createCallLimiter } from "./call-limiter.js";
import { createCallPacer } from "./call-pacer.js";
import { wrapService } from "./call-pipeline.js";
import { binaryResponsesInterceptor } from "./connect-binary-responses.js";
import { createConnectNodeHandler, defaultHttpCompressions } from "./connect-node-handler.js";
import { defaultConnectionOptions, type ConnectionOptions } from "./connection-options.js";
import { ensureSafeBind } from "./bind-safety.js";
import { addServiceToGrpcServer } from "./grpc-adapter.js";
import { createGrpcServer } from "./grpc-listener.js";
import { addReflectionToGrpcServer } from "./grpc-reflection.js";
import { addHealthToGrpcServer } from "./health.js";
import { listenHealth, type HealthListener } from "./health-listener.js";
import { withCallLimit } from "./http-call-limit.js";
import { withOperationalEndpoints } from "./http-endpoints.js";
import { listenHttp, type HttpListener } from "./http-listener.js";
import { createMcpEndpoint } from "./mcp/mcp-endpoint.js";
import { startMcpImports, type McpImportOptions } from "../mcp/import/start-mcp-imports.js";
import { createMetricsGate } from "./metrics-access.js";
import { peerCertificateOf } from "./peer-certificate.js";
import { protobufRecursionLimit } from "./protobuf-limits.js";
import { createRegistryService } from "./registry-service.js";
import { checkRequests } from "./request-checks.js";
import { createRunnerService } from "./runner-service.js";
import { createExecutionService } from "./execution-service.js";
import { createProviderService } from "./provider-service.js";
import { shuttingDownMessage } from "./end-at-shutdown.js";
import { ShutdownNotice } from "./shutdown-notice.js";
import { readTlsFiles, type TlsFiles } from "./tls-config.js";
import { createRebindingGuard } from "./rebinding-guard.js";

/** Options of {@link startServer}. Every field has a default. */
export interface ServerOptions extends OpenToolRuntimeOptions {
  /** Address both ports listen on. Default "127.0.0.1". */
  readonly host?: string;
  /** Port of native gRPC (grpc-js). Default 50051; 0 picks a free port. */
  readonly grpcPort?: number;
  /** Port of Connect, gRPC-Web and gRPC over HTTP/1.1 and HTTP/2 (connect-node), and of /healthz, /readyz and /metrics. Default 8080; 0 picks a free port. */
  readonly httpPort?: number;
  /** Largest request or response message, in bytes. Default 4 MiB. Shorthand for `connection.maxMessageBytes`. */
  readonly maxMessageBytes?: number;
  /** Limits and keepalive of connections; see ConnectionOptions for the defaults. */
  readonly connection?: Partial<ConnectionOptions>;
  /** TLS, and mutual TLS with a client CA, on both ports. Default: cleartext. */
  readonly tls?: TlsFiles | undefined;
  /** Identities allowed to call, with their permissions. Default: none, so authentication is off. */
  readonly identities?: readonly IdentityConfig[];
  /**
   * Listen on an address other than loopback without both TLS and identities. Default false: the
   * server refuses to start, because without TLS tokens cross the network in clear and without
   * identities every caller is an admin.
   */
  readonly allowInsecureRemote?: boolean;
  /** Let the identity that started a run needing approval approve it. Default false. */
  readonly allowSelfApproval?: boolean;
  /**
   * Port of a cleartext HTTP/1.1 listener on `host` serving only /healthz and /readyz, for probes
   * that have no client certificate under mutual TLS. Default: none; 0 picks a free port.
   */
  readonly healthPort?: number | undefined;
  /**
   * Origins (such as "https://app.example.com") whose pages may call the HTTP port from a browser
   * with Connect or gRPC-Web (CORS). Default: none, so browsers allow only same-origin pages.
   */
  readonly corsOrigins?: readonly string[];
  /**
   * Host names (such as "toolruntime.internal"), besides localhost and IP addresses, that calls may
   * name while authentication is off. Default: none. Without identities, a request naming another
   * host is refused with PERMISSION_DENIED (HTTP 403), and so is one from a browser page whose
   * Origin is neither the server's own nor in `corsOrigins`: DNS rebinding protection. With
   * identities, every host and origin is served. Health checks are served whatever they name.
   */
  readonly allowedHosts?: readonly string[];
  /**
   * Drop fields the contract does not define from Connect and gRPC-Web JSON requests. Default
   * false: such a request is INVALID_ARGUMENT naming the field, so that a misspelt field ("input"
   * for "inputs") is not silently ignored. Binary requests keep protobuf's rule: unknown fields
   * are skipped (they are how an older server reads a newer client).
   */
  readonly jsonIgnoreUnknownFields?: boolean;
  /** The MCP gateway at `/mcp` on the HTTP port. */
  readonly mcp?: {
    /** Tools per tools/list page. Default 100. */
    readonly pageSize?: number;
  } & Partial<McpImportOptions>;
  /** Logger. Default: pino at "info" on stdout. */
  readonly logger?: Logger;
  /** Logger for audit records of executions. Default: none (no audit records, nothing hashed). */
  readonly auditLogger?: Logger;
  /** Put input values in run log lines. Default false. */
  readonly logInputs?: boolean;
  /** OpenTelemetry export. Default: spans are made (trace ids propagate) but not exported. */
  readonly tracing?: TracingOptions;
}

/** A running server. */
export interface RunningServer {
  readonly runtime: ToolRuntime;
  /** "host:port" of the gRPC port. */
  readonly grpcAddress: string;
  /** "http://host:port" (or https) of the HTTP port. */
  readonly httpUrl: string;
  /** "http://host:port" of the plain health port, when one was asked for. */
  readonly healthUrl: string | undefined;
  /**
   * Stops both ports: health turns NOT_SERVING, new calls get UNAVAILABLE, connections get GOAWAY,
   * streams with nothing in progress (WatchTools, WatchExecutions, health Watch, MCP notification
   * streams) end at once, UNAVAILABLE for the RPCs; calls in flight get `graceMs` (default 5,000)
   * to finish, then the rest are cancelled.
   */
  close(graceMs?: number): Promise<void>;
}

/** The version the server reports (MCP `serverInfo`). */
export const serverVersion = "0.1.0";

/** Default largest message: 4 MiB, the gRPC default. */
export const defaultMaxMessageBytes = defaultConnectionOptions.maxMessageBytes;

/**
 * Starts the service on both ports with one implementation behind both: native gRPC through
 * grpc-js (with health and reflection), and Connect plus gRPC-Web through connect-node (with
 * /healthz, /readyz and /metrics). Throws before listening when the options are unsafe or a port
 * cannot be bound.
 */
export async function startServer(options: ServerOptions = {}): Promise<RunningServer> {
  const host = options.host ?? "127.0.0.1";
  const identities = options.identities ?? [];
  ensureSafeBind({
    host,
    tls: options.tls !== undefined,
    identities: identities.length,
    allowInsecureRemote: options.allowInsecureRemote ?? false,
  });
  const connection: ConnectionOptions = {
    ...defaultConnectionOptions,
    ...(options.maxMessageBytes === undefined ? {} : { maxMessageBytes: options.maxMessageBytes }),
    ...options.connection,
  };
  const tls = options.tls ? readTlsFiles(options.tls) : undefined;
  const logger = options.logger ?? pino();
  const tracing = createTracing(options.tracing);
  // The registry-size gauge reads the runtime's registries at each scrape, after both exist.
  const metrics = createServerMetrics(
    () => runtime.registries.all(),
    () => runtime.executions.admission,
  );
  const runtime: ToolRuntime = await openToolRuntime({
    ...options,
    executions: {
      logger,
      ...options.executions,
      observers: [metrics.executionObserver, ...(options.executions?.observers ?? [])],
    },
    // The provider streams' send limit is the transport's: an assignment over it fails its run alone.
    providers: { maxMessageBytes: connection.maxMessageBytes, logger, ...options.providers },
    runners: {
      ...options.runners,
      jsonLimits: { maxDepth: 64, maxBytes: connection.maxMessageBytes, ...options.runners?.jsonLimits },
      observers: [
        metrics.runObserver,
        tracing.runObserver,
        createRunLogger(logger, { logInputs: options.logInputs ?? false, audit: options.auditLogger }),
        ...(options.runners?.observers ?? []),
      ],
    },
  });

  let closing = false;
  const authenticate = createAuthenticator(identities);
  const pipeline = {
    logger,
    isClosing: () => closing,
    authenticate,
    observers: [tracing.callObserver, metrics.callObserver, createCallLogger(logger)],
  };
  // Heard by the streams with nothing in progress to finish: they end when shutdown begins.
  const shutdownBegins = new ShutdownNotice();
  const registry = wrapService(
    RegistryService,
    createRegistryService(runtime, connection.maxMessageBytes, shutdownBegins),
    pipeline,
  );
  const runner = wrapService(RunnerService, createRunnerService(runtime, connection.maxMessageBytes), pipeline);
  const provider = wrapService(ProviderService, createProviderService(runtime), pipeline);
  const execution = wrapService(
    ExecutionService,
    createExecutionService(
      runtime,
      connection.maxMessageBytes,
      {
        allowSelfApproval: options.allowSelfApproval ?? false,
      },
      shutdownBegins,
    ),
    pipeline,
  );
  const shutdown = new AbortController();
  // Every call in flight listens to the shutdown signal; thousands at once are normal.
  setMaxListeners(0, shutdown.signal);

  const limiter = createCallLimiter(connection.maxCallsInFlight, logger);
  // 3 ms of starting and sending per turn (and 5 ms of starting granted queued runs, runWorkBudget):
  // under a burst of 10,000 StartExecution, 10 ms let the event loop's p99 delay reach 110 ms and
  // 5 ms 50–60 ms; 3 ms kept it at 40–47 ms, perhaps at some admission rate (see the design
  // notes, "Transports").
  const pacer = createCallPacer(3);
  // Rebinding protection is for the unauthenticated mode: with identities, a page cannot call
  // without a token or certificate, whatever name it used.
  const rebindingGuard =
    identities.length === 0
      ? createRebindingGuard({ allowedHosts: options.allowedHosts ?? [], corsOrigins: options.corsOrigins ?? [] })
      : undefined;
  const grpc = createGrpcServer(connection, rebindingGuard);
  const grpcServer = grpc.server;
  const adapterOptions = { logger, shutdownSignal: shutdown.signal, limiter, pacer, tls: tls !== undefined };
  addServiceToGrpcServer(grpcServer, RegistryService, registry, adapterOptions);
  addServiceToGrpcServer(grpcServer, RunnerService, runner, adapterOptions);
  addServiceToGrpcServer(grpcServer, ExecutionService, execution, adapterOptions);
  addServiceToGrpcServer(grpcServer, ProviderService, provider, adapterOptions);
  const health = addHealthToGrpcServer(grpcServer, [
    RegistryService.typeName,
    RunnerService.typeName,
    ExecutionService.typeName,
    ProviderService.typeName,
  ]);
  addReflectionToGrpcServer(grpcServer, [
    file_toolruntime_v1_registry,
    file_toolruntime_v1_runner,
    file_toolruntime_v1_execution,
    file_toolruntime_v1_provider,
    file_health_v1_health,
  ]);

  const connectHandler = createConnectNodeHandler({
    logger,
    routes: (router: ConnectRouter) => {
      router.service(RegistryService, registry);
      router.service(RunnerService, runner);
      router.service(ExecutionService, execution);
      router.service(ProviderService, provider);
      checkRequests(router, connection.maxMessageBytes, defaultHttpCompressions);
    },
    readMaxBytes: connection.maxMessageBytes,
    writeMaxBytes: connection.maxMessageBytes,
    binaryOptions: { recursionLimit: protobufRecursionLimit },
    jsonOptions: {
      recursionLimit: protobufRecursionLimit,
      ignoreUnknownFields: options.jsonIgnoreUnknownFields ?? false,
    },
    interceptors: [binaryResponsesInterceptor()],
    shutdownSignal: shutdown.signal,
    contextValues: (request) => {
      const values = createContextValues();
      const certificate = peerCertificateOf(request.socket);
      if (certificate) values.set(peerCertificateKey, certificate);
      return values;
    },
  });

  const mcp = createMcpEndpoint(runtime, {
    logger,
    authenticate,
    pageSize: options.mcp?.pageSize ?? 100,
    maxBodyBytes: connection.maxMessageBytes,
    version: serverVersion,
    allowSelfApproval: options.allowSelfApproval ?? false,
    observe: metrics.mcpObserver,
    limiter,
  });

  let grpcPort: number;
  let http: HttpListener;
  let healthListener: HealthListener | undefined;
  try {
    grpcPort = await grpc.listen(host, options.grpcPort ?? 50051, tls);
    try {
      http = await listenHttp(
        {
          host,
          port: options.httpPort ?? 8080,
          connection,
          tls,
          corsOrigins: options.corsOrigins,
          mcp: mcp.handle,
          rebindingGuard,
        },
        withOperationalEndpoints(
          withCallLimit(connectHandler, limiter, {
            pacer,
            takesOneMessage: connectHandler.takesOneMessage,
            // A message's bytes with room for framing, base64 (gRPC-Web text) and JSON's expansion.
            maxBodyBytes: Math.ceil((connection.maxMessageBytes * 4) / 3) + 1024,
          }),
          health,
          metrics.registry,
          createMetricsGate(authenticate, identities.length > 0),
        ),
      );
    } catch (error) {
      grpc.forceShutdown();
      await mcp.close();
      throw error;
    }
    if (options.healthPort !== undefined) {
      try {
        healthListener = await listenHealth(
          {
            host,
            port: options.healthPort,
            maxConnections: connection.maxConnections,
            maxConnectionsPerPeer: connection.maxConnectionsPerPeer,
          },
          health,
        );
      } catch (error) {
        grpc.forceShutdown();
        await http.close(0);
        throw error;
      }
    }
  } catch (error) {
    await runtime.closeStores();
    await tracing.shutdown();
    throw error;
  }
  // MCP servers to import connect in the background: one that is down does not hold the start.
  const mcpImports = startMcpImports(runtime.stores.tools, { servers: [], ...options.mcp }, logger);
  // Ready while the store answers: a replica whose database went away reports NOT_SERVING, so a
  // load balancer sends its calls elsewhere, and SERVING again once the database is back.
  if (runtime.stores.available()) health.serving();
  runtime.stores.onAvailabilityChange((available) => {
    if (closing) return;
    if (available) health.serving();
    else health.notServing();
    logger[available ? "info" : "error"](
      { store: runtime.stores.description },
      available ? "store available again" : "store unavailable",
    );
  });
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    runtime,
    grpcAddress: `${shownHost}:${grpcPort}`,
    httpUrl: `${tls ? "https" : "http"}://${shownHost}:${http.port}`,
    healthUrl: healthListener ? `http://${shownHost}:${healthListener.port}` : undefined,
    async close(graceMs = 5000) {
      closing = true;
      health.notServing();
      // Providers finish their runs and leave (for another replica) at once: an idle provider
      // stream would otherwise hold the gRPC port's drain for the whole grace period.
      runtime.providers.drainAll("the server is shutting down");
      // Streams with nothing in progress to finish (MCP notification streams, watches of the
      // registry, of the runs and of health) would hold the ports' drain until the grace period
      // ends: they end now, the watches with UNAVAILABLE so that clients reconnect elsewhere.
      mcp.drain();
      shutdownBegins.begin();
      health.endWatches(`${shuttingDownMessage}: watch the health of another replica or of the restarted server`);
      // Calls still running when the grace period ends are cancelled, and get a moment more to
      // send their cancelled results before the connections are cut.
      const reason = new ConnectError("the server is shutting down", Code.Unavailable);
      const cancelTimer = setTimeout(() => {
        shutdown.abort(reason);
        runtime.executions.cancelAll(reason.rawMessage);
      }, graceMs);
      const hardStopMs = graceMs + cancelledResultGraceMs;
      await Promise.all([grpc.shutdown(hardStopMs), http.close(hardStopMs)]);
      await mcp.close();
      clearTimeout(cancelTimer);
      await healthListener?.close();
      shutdown.abort(reason);
      runtime.executions.cancelAll(reason.rawMessage);
      await mcpImports.close();
      await runtime.closeStores();
      await tracing.shutdown();
    },
  };
}
