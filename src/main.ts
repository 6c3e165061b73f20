import { pino } from "pino";
import { helpText, readConfig, type ServerConfig } from "./config.js";
import { loadToolModule } from "./load-tools.js";
import { startServer } from "./server/tool-runtime-server.js";
import { builtinTools } from "./tools/builtin-tools.js";
import type { DefinedTool } from "./tools/define-tool.js";

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
  // Log lines are written asynchronously: a burst of calls shares a write instead of blocking the
  // event loop for one write per line. pino flushes what is buffered when the process exits.
  const logger = pino({ level: config.logLevel }, pino.destination({ dest: 1, sync: false }));
  const auditLogger =
    config.auditLog === undefined
      ? undefined
      : pino(pino.destination({ dest: config.auditLog, append: true, mkdir: true, sync: false }));
  const tools: DefinedTool[] = config.builtinTools ? [...builtinTools] : [];
  for (const modulePath of config.toolModules) tools.push(...(await loadToolModule(modulePath)));

  const server = await startServer({
    host: config.host,
    grpcPort: config.grpcPort,
    httpPort: config.httpPort,
    connection: config.connection,
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
    store: config.store,
    sharedRuns: { leaseMs: config.replicaLeaseMs },
    mcp: {
      pageSize: config.mcpPageSize,
      servers: config.mcpServers,
      trustHints: config.mcpTrustHints,
      trustIdempotent: config.mcpTrustIdempotent,
    },
  });
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
