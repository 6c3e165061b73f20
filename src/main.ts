import { pino } from "pino";
import { collectInLulls } from "./async/lull-collection.js";
import { helpText, readConfig, type ServerConfig } from "./config.js";
import { loadToolModuleWithOrigins } from "./load-tools.js";
import { assertUniqueToolNames, type ToolOrigin } from "./unique-tool-names.js";
import { startServer } from "./server/tool-runtime-server.js";
import { builtinTools } from "./tools/builtin-tools.js";
import type { DefinedTool } from "./tools/define-tool.js";

/** Most time a log line waits in the buffer, in ms. */
const logFlushIntervalMs = 200;

/**
 * A log destination that writes asynchronously and in batches (4 KiB, or every
 * {@link logFlushIntervalMs}), instead of one blocking write per line. pino flushes what is
 * buffered when the process exits.
 */
function batchedDestination(options: { dest: number | string; append?: boolean; mkdir?: boolean }) {
  const destination = pino.destination({ ...options, sync: false, minLength: 4096 });
  // A file destination opens asynchronously: there is nothing to flush (and flush throws) before.
  destination.once("ready", () => {
    const timer = setInterval(() => destination.flush(), logFlushIntervalMs);
    timer.unref();
    destination.once("close", () => clearInterval(timer));
  });
  return destination;
}

async function main(): Promise<void> {
  let config: ServerConfig;
  try {
    config = readConfig(process.argv.slice(2), process.env);
  } catch (error) {
    process.stderr.write(`toolruntime: ${(error as Error).message}\n\n${helpText()}`);
    process.exit(2);
  }
  if (config.help) {
    process.stdout.write(helpText());
    return;
  }
  const logger = pino({ level: config.logLevel }, batchedDestination({ dest: 1 }));
  const auditLogger =
    config.auditLog === undefined
      ? undefined
      : pino(batchedDestination({ dest: config.auditLog, append: true, mkdir: true }));
  const origins: ToolOrigin[] = config.builtinTools
    ? builtinTools.map((tool) => ({ tool, builtin: true as const }))
    : [];
  for (const modulePath of config.toolModules) origins.push(...(await loadToolModuleWithOrigins(modulePath)));
  assertUniqueToolNames(origins);
  const tools: DefinedTool[] = origins.map((origin) => origin.tool);

  const server = await startServer({
    host: config.host,
    grpcPort: config.grpcPort,
    httpPort: config.httpPort,
    connection: config.connection,
    registries: { packSpecsAbove: config.packSpecsAbove, maxSpecsWaitingToPack: config.maxSpecsWaitingToPack },
    runners: { defaultTimeoutMs: config.defaultTimeoutMs },
    executions: { ...config.executions, logger },
    tools,
    logger,
    ...(auditLogger ? { auditLogger } : {}),
    logInputs: config.logInputs,
    tracing: { otlpEndpoint: config.otlpEndpoint },
    tls: config.tls,
    identities: config.identities,
    allowInsecureRemote: config.allowInsecureRemote,
    allowSelfApproval: config.allowSelfApproval,
    healthPort: config.healthPort,
    corsOrigins: config.corsOrigins,
    allowedHosts: config.allowedHosts,
    jsonIgnoreUnknownFields: config.jsonIgnoreUnknownFields,
    store: config.store,
    sharedRuns: { leaseMs: config.replicaLeaseMs },
    postgres: {
      maxConnections: config.storePoolSize,
      operationTimeoutMs: config.storeTimeoutMs,
      ...(config.replicaMaxStallMs === undefined ? {} : { maxStallMs: config.replicaMaxStallMs }),
    },
    mcp: {
      pageSize: config.mcpPageSize,
      servers: config.mcpServers,
      trustHints: config.mcpTrustHints,
      trustIdempotent: config.mcpTrustIdempotent,
    },
  });
  // Full collections in the lull after a burst of runs rather than in the middle of the next one
  // (it needs --expose-gc, which npm start and the toolruntime executable pass).
  const executions = server.runtime.executions;
  if (!config.noLullCollection && !collectInLulls(() => executions.takePeakRunsInFlight()).active)
    logger.debug("without node's --expose-gc, V8 alone decides when to collect (see --no-lull-collection)");
  const names = tools.map((tool) => tool.spec.name).join(", ") || "(none)";
  process.stdout.write(
    `toolruntime is serving\n  gRPC:            ${server.grpcAddress}\n  Connect/gRPC-Web: ${server.httpUrl}\n  console:         ${server.httpUrl}/console/\n  tools:           ${names}\n` +
      `  MCP:             ${server.httpUrl}/mcp\n` +
      (server.healthUrl === undefined ? "" : `  health:          ${server.healthUrl}\n`) +
      `  store:           ${server.runtime.stores.description}\n` +
      (config.identities.length === 0
        ? "  authentication:  off (every caller may do everything)\n"
        : `  authentication:  ${config.identities.length} identities\n`),
  );

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, graceMs: config.shutdownGraceMs }, "shutting down");
    server.close(config.shutdownGraceMs).then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main().catch((error: unknown) => {
  process.stderr.write(`toolruntime: ${(error as Error).message ?? String(error)}\n`);
  process.exit(1);
});
