import { readFileSync } from "node:fs";
import { defaultMaxConcurrentRuns, defaultMaxQueuedRuns } from "./executions/admission.js";
import { defaultMaxPending } from "./registry/background-packing.js";
import { parseArgs } from "node:util";
import { Ajv2020 } from "ajv/dist/2020.js";
import { actions } from "./auth/permissions.js";
import type { IdentityConfig } from "./auth/authenticator.js";
import { defaultConnectionOptions, type ConnectionOptions } from "./server/connection-options.js";
import { checkDistinctNames, parseMcpServer, type McpServerSpec } from "./mcp/import/parse-mcp-server.js";
import { checkCorsOrigin } from "./server/cors.js";
import { checkAllowedHost } from "./server/rebinding-guard.js";
import type { TlsFiles } from "./server/tls-config.js";

/** The settings of the server command, from flags, environment, an optional config file and defaults. */
export interface ServerConfig {
  readonly host: string;
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly connection: ConnectionOptions;
  readonly defaultTimeoutMs: number;
  readonly shutdownGraceMs: number;
  readonly executions: {
    readonly maxConcurrent: number;
    readonly maxQueued: number;
    readonly defaultQueueTimeoutMs: number;
    readonly defaultApprovalTimeoutMs: number;
    readonly stopGraceMs: number;
    readonly maxRetained: number;
    readonly retentionMs: number;
    readonly maxRetainedBytes: number;
  };
  readonly toolModules: readonly string[];
  readonly builtinTools: boolean;
  readonly logLevel: string;
  readonly logInputs: boolean;
  /** Leave every full collection to V8, none in the lull after a burst (see async/lull-collection.ts). */
  readonly noLullCollection: boolean;
  readonly auditLog: string | undefined;
  readonly otlpEndpoint: string | undefined;
  readonly tls: TlsFiles | undefined;
  readonly identities: readonly IdentityConfig[];
  readonly allowInsecureRemote: boolean;
  readonly allowSelfApproval: boolean;
  readonly healthPort: number | undefined;
  /** URL of the shared store (PostgreSQL); undefined for the in-memory stores. */
  readonly store: string | undefined;
  /** With a shared store: a replica's lease, in milliseconds. */
  readonly replicaLeaseMs: number;
  /** With a shared store: the most connections of a replica's pool. */
  readonly storePoolSize: number;
  /** With a shared store: the longest one store operation may take, in milliseconds. */
  readonly storeTimeoutMs: number;
  /** With a shared store: the longest event-loop stall before the lease is given up, in ms (undefined: six leases). */
  readonly replicaMaxStallMs: number | undefined;
  readonly corsOrigins: readonly string[];
  /** Host names served besides localhost and IP addresses while authentication is off (DNS rebinding protection). */
  readonly allowedHosts: readonly string[];
  /** Let Connect and gRPC-Web JSON requests carry fields the contract does not define (dropped) instead of INVALID_ARGUMENT. */
  readonly jsonIgnoreUnknownFields: boolean;
  /** Tools per page of tools/list at /mcp. */
  readonly mcpPageSize: number;
  /** Tools a registry holds before it packs specs (see ToolRegistryOptions.packSpecsAbove). */
  readonly packSpecsAbove: number;
  /** Specs a registry leaves waiting to be packed while registrations go on (see ToolRegistryOptions.maxSpecsWaitingToPack). */
  readonly maxSpecsWaitingToPack: number;
  /** MCP servers whose tools are served as `mcp.NAME.TOOL`. */
  readonly mcpServers: readonly McpServerSpec[];
  /** Names of MCP servers whose readOnlyHint is trusted. */
  readonly mcpTrustHints: readonly string[];
  /** Names of MCP servers whose idempotentHint is trusted. */
  readonly mcpTrustIdempotent: readonly string[];
  readonly help: boolean;
}

/** How an option's value is read. */
export type Kind = "string" | "integer" | "boolean" | "list";

/** One option: its flag, environment variable, config-file key, default and meaning. */
interface OptionSpec {
  readonly key: string;
  readonly flag: string;
  readonly kind: Kind;
  readonly fallback: string | number | boolean | undefined;
  readonly text: string;
  readonly min?: number;
  readonly max?: number;
}

const day = 86_400_000;
const options: readonly OptionSpec[] = [
  {
    key: "config",
    flag: "config",
    kind: "string",
    fallback: undefined,
    text: "JSON config file with any option below (by its key) plus tls and identities",
  },
  { key: "host", flag: "host", kind: "string", fallback: "127.0.0.1", text: "address both ports listen on" },
  {
    key: "grpcPort",
    flag: "grpc-port",
    kind: "integer",
    fallback: 50051,
    min: 0,
    max: 65535,
    text: "port of native gRPC; 0 picks a free port",
  },
  {
    key: "httpPort",
    flag: "http-port",
    kind: "integer",
    fallback: 8080,
    min: 0,
    max: 65535,
    text: "port of Connect, gRPC-Web, /healthz, /readyz and /metrics; 0 picks a free port",
  },
  {
    key: "maxMessageBytes",
    flag: "max-message-bytes",
    kind: "integer",
    fallback: defaultConnectionOptions.maxMessageBytes,
    min: 1024,
    max: 1024 ** 3,
    text: "largest request or response, in bytes",
  },
  {
    key: "maxConcurrentStreams",
    flag: "max-concurrent-streams",
    kind: "integer",
    fallback: defaultConnectionOptions.maxConcurrentStreams,
    min: 1,
    max: 1_000_000,
    text: "most concurrent calls per HTTP/2 connection",
  },
  {
    key: "keepaliveTimeMs",
    flag: "keepalive-time-ms",
    kind: "integer",
    fallback: defaultConnectionOptions.keepaliveTimeMs,
    min: 1000,
    max: day,
    text: "interval of keepalive pings on quiet HTTP/2 connections (both ports)",
  },
  {
    key: "keepaliveTimeoutMs",
    flag: "keepalive-timeout-ms",
    kind: "integer",
    fallback: defaultConnectionOptions.keepaliveTimeoutMs,
    min: 1000,
    max: day,
    text: "time a keepalive ping may go unanswered",
  },
  {
    key: "maxConnectionAgeMs",
    flag: "max-connection-age-ms",
    kind: "integer",
    fallback: defaultConnectionOptions.maxConnectionAgeMs,
    min: 0,
    max: day,
    text: "age after which a gRPC connection is asked to go away, so load balancers rebalance; 0: never",
  },
  {
    key: "maxConnectionAgeGraceMs",
    flag: "max-connection-age-grace-ms",
    kind: "integer",
    fallback: defaultConnectionOptions.maxConnectionAgeGraceMs,
    min: 0,
    max: day,
    text: "time calls get to finish on a connection past its maximum age",
  },
  {
    key: "maxConnectionIdleMs",
    flag: "max-connection-idle-ms",
    kind: "integer",
    fallback: defaultConnectionOptions.maxConnectionIdleMs,
    min: 0,
    max: day,
    text: "time an idle connection stays open; 0: forever",
  },
  {
    key: "maxCallsInFlight",
    flag: "max-calls-in-flight",
    kind: "integer",
    fallback: defaultConnectionOptions.maxCallsInFlight,
    min: 1,
    max: 1_000_000,
    text: "most calls in flight in the whole server, streams included; beyond it calls get RESOURCE_EXHAUSTED",
  },
  {
    key: "maxConnections",
    flag: "max-connections",
    kind: "integer",
    fallback: defaultConnectionOptions.maxConnections,
    min: 1,
    max: 1_000_000,
    text: "most open connections per port; beyond it new connections are closed",
  },
  {
    key: "maxConnectionsPerPeer",
    flag: "max-connections-per-peer",
    kind: "integer",
    fallback: defaultConnectionOptions.maxConnectionsPerPeer,
    min: 0,
    max: 1_000_000,
    text: "most open connections per port from one remote address; beyond it its new connections are closed; 0: no bound",
  },
  {
    key: "headerTimeoutMs",
    flag: "header-timeout-ms",
    kind: "integer",
    fallback: defaultConnectionOptions.headerTimeoutMs,
    min: 100,
    max: 3_600_000,
    text: "time a connection gets to send a request's headers (TLS and HTTP/2 preface included) before it is closed",
  },
  {
    key: "defaultTimeoutMs",
    flag: "default-timeout-ms",
    kind: "integer",
    fallback: 30_000,
    min: 1,
    max: day,
    text: "run timeout when neither call nor tool sets one",
  },
  {
    key: "maxConcurrentRuns",
    flag: "max-concurrent-runs",
    kind: "integer",
    fallback: defaultMaxConcurrentRuns,
    min: 1,
    max: 1_000_000,
    text: "most runs executing at once, all tools together",
  },
  {
    key: "maxQueuedRuns",
    flag: "max-queued-runs",
    kind: "integer",
    fallback: defaultMaxQueuedRuns,
    min: 0,
    max: 10_000_000,
    text: "most runs waiting for a slot; beyond it starting a run is RESOURCE_EXHAUSTED",
  },
  {
    key: "defaultQueueTimeoutMs",
    flag: "default-queue-timeout-ms",
    kind: "integer",
    fallback: 60_000,
    min: 1,
    max: day,
    text: "longest wait for a slot when a call sets none",
  },
  {
    key: "defaultApprovalTimeoutMs",
    flag: "default-approval-timeout-ms",
    kind: "integer",
    fallback: 300_000,
    min: 1,
    max: day,
    text: "longest wait for a human decision when a call sets none",
  },
  {
    key: "stopGraceMs",
    flag: "stop-grace-ms",
    kind: "integer",
    fallback: 5000,
    min: 0,
    max: day,
    text: "longest wait, after an attempt timed out or was cancelled, for its handler to stop before rollback or a retry",
  },
  {
    key: "retainedExecutions",
    flag: "retained-executions",
    kind: "integer",
    fallback: 10_000,
    min: 0,
    max: 10_000_000,
    text: "most finished run records kept for GetExecution and WatchExecution",
  },
  {
    key: "retentionMs",
    flag: "retention-ms",
    kind: "integer",
    fallback: 3_600_000,
    min: 0,
    max: 7 * day,
    text: "longest a finished run record is kept",
  },
  {
    key: "retainedBytes",
    flag: "retained-bytes",
    kind: "integer",
    fallback: 256 * 1024 * 1024,
    min: 0,
    max: 64 * 1024 ** 3,
    text: "most bytes of finished run records (with their events) kept",
  },
  {
    key: "shutdownGraceMs",
    flag: "shutdown-grace-ms",
    kind: "integer",
    fallback: 10_000,
    min: 0,
    max: 3_600_000,
    text: "time calls in flight get to finish on SIGTERM/SIGINT",
  },
  {
    key: "tools",
    flag: "tools",
    kind: "list",
    fallback: undefined,
    text: 'module of tools to load; repeat the flag, or separate paths with "," in the variable',
  },
  {
    key: "noBuiltinTools",
    flag: "no-builtin-tools",
    kind: "boolean",
    fallback: false,
    text: "do not serve the builtin.* tools",
  },
  {
    key: "noLullCollection",
    flag: "no-lull-collection",
    kind: "boolean",
    fallback: false,
    text: "leave V8 to start its full garbage collections, rather than start one in the lull after a burst of runs (1,000 or more queued or running at once) so that it does not come in the middle of the next burst; the server starts them only with node's --expose-gc, which npm start passes. With them, the second of two 10,000-run bursts met an event-loop p99 of 27–39 ms instead of 57–119 ms",
  },
  {
    key: "tlsCert",
    flag: "tls-cert",
    kind: "string",
    fallback: undefined,
    text: "PEM certificate chain: turns on TLS on both ports (with --tls-key)",
  },
  { key: "tlsKey", flag: "tls-key", kind: "string", fallback: undefined, text: "PEM private key of the certificate" },
  {
    key: "tlsClientCa",
    flag: "tls-client-ca",
    kind: "string",
    fallback: undefined,
    text: "PEM CA of client certificates: requires mutual TLS on both ports",
  },
  {
    key: "allowInsecureRemote",
    flag: "allow-insecure-remote",
    kind: "boolean",
    fallback: false,
    text: "allow a non-loopback --host without both TLS and identities",
  },
  {
    key: "allowSelfApproval",
    flag: "allow-self-approval",
    kind: "boolean",
    fallback: false,
    text: "let the identity that started a run needing approval approve it",
  },
  {
    key: "healthPort",
    flag: "health-port",
    kind: "integer",
    fallback: undefined,
    min: 0,
    max: 65535,
    text: "plain-HTTP port serving only /healthz and /readyz, for probes without client certificates",
  },
  {
    key: "store",
    flag: "store",
    kind: "string",
    fallback: undefined,
    text: "postgres://user:password@host:port/database holding registries and activations, shared by every replica on it; default: in memory",
  },
  {
    key: "replicaLeaseMs",
    flag: "replica-lease-ms",
    kind: "integer",
    fallback: 10_000,
    min: 500,
    max: 600_000,
    text: "with --store: how long a replica's lease lasts; the runs of a replica silent for longer are taken over by the others",
  },
  {
    key: "storePoolSize",
    flag: "store-pool-size",
    kind: "integer",
    fallback: 16,
    min: 1,
    max: 1000,
    text: "with --store: most connections of a replica's pool (it opens two more: one listens for notifications, one keeps the lease); runs already started are served first, and a new run that gets none soon (a quarter of its call's time, 100 to 250 ms) gets RESOURCE_EXHAUSTED",
  },
  {
    key: "storeTimeoutMs",
    flag: "store-timeout-ms",
    kind: "integer",
    fallback: 5000,
    min: 100,
    max: 600_000,
    text: "with --store: longest one store operation may take (waiting for a connection included) before the call gets UNAVAILABLE; sooner when the call's deadline comes first",
  },
  {
    key: "replicaMaxStallMs",
    flag: "replica-max-stall-ms",
    kind: "integer",
    fallback: undefined,
    min: 1000,
    max: 3_600_000,
    text: "with --store: longest the event loop may be blocked (by a handler) before the replica gives up its lease and its runs are taken over; default six leases",
  },
  {
    key: "corsOrigins",
    flag: "cors-origin",
    kind: "list",
    fallback: undefined,
    text: 'origin whose pages may call the HTTP port from a browser (CORS); repeat the flag, or separate origins with "," in the variable',
  },
  {
    key: "allowedHosts",
    flag: "allowed-host",
    kind: "list",
    fallback: undefined,
    text: 'host name, besides localhost and IP addresses, that requests may name (Host, :authority) while authentication is off; others get 403 or PERMISSION_DENIED, against DNS rebinding (health checks excepted); repeat the flag, or separate names with "," in the variable',
  },
  {
    key: "jsonIgnoreUnknownFields",
    flag: "json-ignore-unknown-fields",
    kind: "boolean",
    fallback: false,
    text: "drop fields the contract does not define from Connect and gRPC-Web JSON requests instead of answering INVALID_ARGUMENT naming them (for JSON clients built against a newer contract)",
  },
  {
    key: "packSpecsAbove",
    flag: "pack-specs-above",
    kind: "integer",
    fallback: 1000,
    min: 0,
    max: 1_000_000,
    text: "tools a registry holds before it keeps the specs of tools without a handler here packed (deflated, under half the memory; a spec not read lately costs tens of microseconds to read); a figure above the registry's size turns packing off",
  },
  {
    key: "maxSpecsWaitingToPack",
    flag: "max-specs-waiting-to-pack",
    kind: "integer",
    fallback: defaultMaxPending,
    min: 1,
    max: 1_000_000,
    text: "specs a registry past --pack-specs-above leaves unpacked while registrations come without a 200 ms pause (they are packed in the pause, on a worker thread); past that, the oldest go to that thread in batches of 256, or are packed on the event loop one per registration should it fall behind: memory stays bounded during a long import",
  },
  {
    key: "mcpPageSize",
    flag: "mcp-page-size",
    kind: "integer",
    fallback: 100,
    min: 1,
    max: 1000,
    text: "tools per page of tools/list at /mcp (the MCP gateway on the HTTP port)",
  },
  {
    key: "mcpServers",
    flag: "mcp-server",
    kind: "list",
    fallback: undefined,
    text: 'MCP server whose tools are served as mcp.NAME.TOOL: NAME=COMMAND ARGS... (stdio, split without a shell) or NAME=https://... (Streamable HTTP); repeat the flag (in the variable, separate servers with ",")',
  },
  {
    key: "mcpTrustHints",
    flag: "mcp-trust-hints",
    kind: "list",
    fallback: undefined,
    text: "NAME of an --mcp-server whose readOnlyHint is trusted (its read-only tools become read_only instead of writes); repeatable",
  },
  {
    key: "mcpTrustIdempotent",
    flag: "mcp-trust-idempotent",
    kind: "list",
    fallback: undefined,
    text: "NAME of an --mcp-server whose idempotentHint is trusted (its tools may become idempotent, so retried); repeatable",
  },
  {
    key: "logLevel",
    flag: "log-level",
    kind: "string",
    fallback: "info",
    text: "fatal, error, warn, info, debug, trace or silent",
  },
  {
    key: "logInputs",
    flag: "log-inputs",
    kind: "boolean",
    fallback: false,
    text: "put input values in run log lines (they may hold secrets)",
  },
  {
    key: "auditLog",
    flag: "audit-log",
    kind: "string",
    fallback: undefined,
    text: "file to append audit records of executions to (who ran which tool, inputs digest, outcome); default: none",
  },
  {
    key: "otlpEndpoint",
    flag: "otlp-endpoint",
    kind: "string",
    fallback: undefined,
    text: "OTLP/HTTP traces endpoint, e.g. http://collector:4318/v1/traces",
  },
];

/** The environment variable of an option: TOOLRUNTIME_ and its flag in upper snake case. */
function envName(option: OptionSpec): string {
  return `TOOLRUNTIME_${option.flag.toUpperCase().replaceAll("-", "_")}`;
}

/** One server option as the README documents it. */
export interface OptionDoc {
  /** The flag without its dashes, for example "grpc-port". */
  readonly flag: string;
  /** Its environment variable, for example "TOOLRUNTIME_GRPC_PORT". */
  readonly env: string;
  readonly kind: Kind;
  /** The default; undefined when there is none. */
  readonly fallback: string | number | boolean | undefined;
  /** What it does, as `--help` says it. */
  readonly text: string;
}

/** Every server option with its environment variable, default and meaning, in `--help` order. */
export function optionDocs(): OptionDoc[] {
  return options.map((option) => ({
    flag: option.flag,
    env: envName(option),
    kind: option.kind,
    fallback: option.fallback,
    text: option.text,
  }));
}

/** The `--help` text: every option with its environment variable and default. */
export function helpText(): string {
  const lines = options.map((option) => {
    const fallback = option.fallback === undefined ? "none" : String(option.fallback);
    return `  --${option.flag.padEnd(28)} ${envName(option).padEnd(40)} ${option.text} (default: ${fallback})`;
  });
  return [
    "usage: toolruntime [options]",
    "",
    "Serves the tool registry and runner over gRPC and Connect. Each option can also be set by its",
    "environment variable or, by its key (camelCase of the flag), in the --config file; flags win over",
    'the environment, which wins over the file. The file may also hold "identities" (see README).',
    "",
    ...lines,
    `  --${"help".padEnd(28)} ${"".padEnd(40)} print this text`,
    "",
  ].join("\n");
}

const identitySchema = {
  type: "object",
  additionalProperties: false,
  required: ["name", "grants"],
  properties: {
    name: { type: "string", minLength: 1, maxLength: 128 },
    tokenSha256: { type: "array", items: { type: "string", pattern: "^[0-9a-f]{64}$" } },
    certificateNames: { type: "array", items: { type: "string", minLength: 1 } },
    grants: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        required: ["actions", "patterns"],
        properties: {
          actions: { type: "array", minItems: 1, items: { enum: [...actions] } },
          patterns: {
            type: "array",
            minItems: 1,
            items: { type: "string", pattern: "^(\\*|[a-z][a-z0-9_.-]*(\\.\\*)?)$" },
          },
        },
      },
    },
  },
};

const fileSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    ...Object.fromEntries(
      options
        .filter((option) => option.key !== "config")
        .map((option) => [
          option.key,
          option.kind === "integer"
            ? { type: "integer", minimum: option.min, maximum: option.max }
            : option.kind === "list"
              ? { type: "array", items: { type: "string" } }
              : { type: option.kind },
        ]),
    ),
    identities: { type: "array", items: identitySchema },
  },
};

const validateFile = new Ajv2020({ allErrors: true, strict: false }).compile(fileSchema);

/** Reads and validates a config file; throws an Error listing what is wrong with it. */
function readConfigFile(path: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(`config file ${JSON.stringify(path)} cannot be read as JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (!validateFile(parsed)) {
    const problems = (validateFile.errors ?? []).map((error) => {
      const where = error.instancePath === "" ? "(top level)" : error.instancePath;
      const extra = error.keyword === "additionalProperties" ? ` "${String(error.params["additionalProperty"])}"` : "";
      return `${where} ${error.message ?? "is invalid"}${extra}`;
    });
    throw new Error(`config file ${JSON.stringify(path)} is invalid: ${problems.join("; ")}`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * Reads the configuration from flags, then environment variables, then the config file, then
 * defaults. Throws an Error with a precise message for an unknown flag, a value out of range, or
 * an invalid config file.
 */
export function readConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ServerConfig {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...Object.fromEntries(
        options.map((option) => [
          option.flag,
          option.kind === "boolean"
            ? { type: "boolean" as const }
            : { type: "string" as const, multiple: option.kind === "list" },
        ]),
      ),
      help: { type: "boolean" },
    },
  });
  const flags = values as Record<string, string | boolean | string[] | undefined>;
  const configPath = (flags["config"] as string | undefined) ?? env["TOOLRUNTIME_CONFIG"];
  const file = configPath === undefined ? {} : readConfigFile(configPath);

  const raw = (option: OptionSpec): unknown => {
    const fromFlag = flags[option.flag];
    if (fromFlag !== undefined) return fromFlag;
    const fromEnv = env[envName(option)];
    if (fromEnv !== undefined) return fromEnv;
    return file[option.key] ?? option.fallback;
  };
  const get = (key: string): unknown => {
    const option = options.find((candidate) => candidate.key === key) as OptionSpec;
    const value = raw(option);
    // An integer without a default (--health-port) is off unless set.
    if (option.kind === "integer" && value === undefined) return undefined;
    switch (option.kind) {
      case "integer": {
        const number = typeof value === "number" ? value : Number(value);
        const text = String(value);
        if (!/^[0-9]+$/.test(text) || number < (option.min ?? 0) || number > (option.max ?? Number.MAX_SAFE_INTEGER)) {
          throw new Error(
            `--${option.flag} ${JSON.stringify(text)} is invalid: use a whole number from ${option.min} to ${option.max}`,
          );
        }
        return number;
      }
      case "boolean":
        if (typeof value === "boolean") return value;
        if (value === "true" || value === "1") return true;
        if (value === "false" || value === "0" || value === "") return false;
        throw new Error(`${envName(option)} ${JSON.stringify(value)} is invalid: use true or false`);
      case "list":
        if (Array.isArray(value)) return value;
        return typeof value === "string" ? value.split(",").filter((entry) => entry !== "") : [];
      case "string":
        return value;
    }
  };
  const logLevel = get("logLevel") as string;
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(logLevel)) {
    throw new Error(
      `--log-level ${JSON.stringify(logLevel)} is invalid: use fatal, error, warn, info, debug, trace or silent`,
    );
  }
  const tlsCert = get("tlsCert") as string | undefined;
  const tlsKey = get("tlsKey") as string | undefined;
  const tlsClientCa = get("tlsClientCa") as string | undefined;
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new Error("--tls-cert and --tls-key go together: give both to turn TLS on, or neither");
  }
  if (tlsClientCa !== undefined && tlsCert === undefined) {
    throw new Error("--tls-client-ca needs TLS: give --tls-cert and --tls-key too");
  }
  const corsOrigins = get("corsOrigins") as string[];
  for (const origin of corsOrigins) {
    const problem = checkCorsOrigin(origin);
    if (problem !== undefined) throw new Error(problem);
  }
  const allowedHosts = get("allowedHosts") as string[];
  for (const host of allowedHosts) {
    const problem = checkAllowedHost(host);
    if (problem !== undefined) throw new Error(problem);
  }
  const mcpServers = (get("mcpServers") as string[]).map((value) => parseMcpServer(value));
  checkDistinctNames(mcpServers);
  const mcpTrustHints = get("mcpTrustHints") as string[];
  const mcpTrustIdempotent = get("mcpTrustIdempotent") as string[];
  for (const [flag, names] of [
    ["mcp-trust-hints", mcpTrustHints],
    ["mcp-trust-idempotent", mcpTrustIdempotent],
  ] as const) {
    for (const name of names) {
      if (!mcpServers.some((server) => server.name === name)) {
        throw new Error(`--${flag} "${name}" names no --mcp-server: give the NAME of a configured MCP server`);
      }
    }
  }
  return {
    host: get("host") as string,
    grpcPort: get("grpcPort") as number,
    httpPort: get("httpPort") as number,
    connection: {
      maxMessageBytes: get("maxMessageBytes") as number,
      maxConcurrentStreams: get("maxConcurrentStreams") as number,
      keepaliveTimeMs: get("keepaliveTimeMs") as number,
      keepaliveTimeoutMs: get("keepaliveTimeoutMs") as number,
      maxConnectionAgeMs: get("maxConnectionAgeMs") as number,
      maxConnectionAgeGraceMs: get("maxConnectionAgeGraceMs") as number,
      maxConnectionIdleMs: get("maxConnectionIdleMs") as number,
      maxCallsInFlight: get("maxCallsInFlight") as number,
      maxConnections: get("maxConnections") as number,
      maxConnectionsPerPeer: get("maxConnectionsPerPeer") as number,
      headerTimeoutMs: get("headerTimeoutMs") as number,
    },
    defaultTimeoutMs: get("defaultTimeoutMs") as number,
    shutdownGraceMs: get("shutdownGraceMs") as number,
    executions: {
      maxConcurrent: get("maxConcurrentRuns") as number,
      maxQueued: get("maxQueuedRuns") as number,
      defaultQueueTimeoutMs: get("defaultQueueTimeoutMs") as number,
      defaultApprovalTimeoutMs: get("defaultApprovalTimeoutMs") as number,
      stopGraceMs: get("stopGraceMs") as number,
      maxRetained: get("retainedExecutions") as number,
      retentionMs: get("retentionMs") as number,
      maxRetainedBytes: get("retainedBytes") as number,
    },
    toolModules: get("tools") as string[],
    builtinTools: !(get("noBuiltinTools") as boolean),
    logLevel,
    logInputs: get("logInputs") as boolean,
    noLullCollection: get("noLullCollection") as boolean,
    auditLog: get("auditLog") as string | undefined,
    otlpEndpoint: get("otlpEndpoint") as string | undefined,
    tls:
      tlsCert === undefined || tlsKey === undefined
        ? undefined
        : { certFile: tlsCert, keyFile: tlsKey, ...(tlsClientCa === undefined ? {} : { clientCaFile: tlsClientCa }) },
    identities: (file["identities"] as IdentityConfig[] | undefined) ?? [],
    allowInsecureRemote: get("allowInsecureRemote") as boolean,
    allowSelfApproval: get("allowSelfApproval") as boolean,
    healthPort: get("healthPort") as number | undefined,
    store: checkStoreUrl(get("store") as string | undefined),
    replicaLeaseMs: get("replicaLeaseMs") as number,
    storePoolSize: get("storePoolSize") as number,
    storeTimeoutMs: get("storeTimeoutMs") as number,
    replicaMaxStallMs: get("replicaMaxStallMs") as number | undefined,
    corsOrigins,
    allowedHosts,
    jsonIgnoreUnknownFields: get("jsonIgnoreUnknownFields") as boolean,
    mcpPageSize: get("mcpPageSize") as number,
    packSpecsAbove: get("packSpecsAbove") as number,
    maxSpecsWaitingToPack: get("maxSpecsWaitingToPack") as number,
    mcpServers,
    mcpTrustHints,
    mcpTrustIdempotent,
    help: (flags["help"] as boolean | undefined) ?? false,
  };
}

/** A store URL as given, or an Error saying what a store URL looks like. */
function checkStoreUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  if (!/^postgres(ql)?:\/\/[^\s]+$/.test(url)) {
    throw new Error(
      "store must be a PostgreSQL URL such as postgres://user:password@127.0.0.1:5432/toolruntime (or omit it for the in-memory stores)",
    );
  }
  return url;
}
