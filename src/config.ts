import { parseArgs } from "node:util";

/** The settings of `toolruntime` (the `npm start` command), from flags and environment. */
export interface ServerConfig {
  readonly host: string;
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly maxMessageBytes: number;
  readonly defaultTimeoutMs: number;
  readonly shutdownGraceMs: number;
  readonly toolModules: readonly string[];
  readonly builtinTools: boolean;
  readonly logLevel: string;
  readonly help: boolean;
}

interface OptionDoc {
  readonly flag: string;
  readonly env: string;
  readonly fallback: string;
  readonly text: string;
}

const docs: readonly OptionDoc[] = [
  { flag: "host", env: "TOOLRUNTIME_HOST", fallback: "127.0.0.1", text: "address both ports listen on" },
  {
    flag: "grpc-port",
    env: "TOOLRUNTIME_GRPC_PORT",
    fallback: "50051",
    text: "port of native gRPC; 0 picks a free port",
  },
  {
    flag: "http-port",
    env: "TOOLRUNTIME_HTTP_PORT",
    fallback: "8080",
    text: "port of Connect and gRPC-Web; 0 picks a free port",
  },
  {
    flag: "max-message-bytes",
    env: "TOOLRUNTIME_MAX_MESSAGE_BYTES",
    fallback: "4194304",
    text: "largest request or response, in bytes",
  },
  {
    flag: "default-timeout-ms",
    env: "TOOLRUNTIME_DEFAULT_TIMEOUT_MS",
    fallback: "30000",
    text: "run timeout when neither call nor tool sets one",
  },
  {
    flag: "shutdown-grace-ms",
    env: "TOOLRUNTIME_SHUTDOWN_GRACE_MS",
    fallback: "10000",
    text: "time calls in flight get to finish on SIGTERM/SIGINT",
  },
  {
    flag: "tools",
    env: "TOOLRUNTIME_TOOLS",
    fallback: "",
    text: 'module of tools to load; repeat the flag, or separate paths with "," in the variable',
  },
  {
    flag: "no-builtin-tools",
    env: "TOOLRUNTIME_NO_BUILTIN_TOOLS",
    fallback: "false",
    text: "do not serve the builtin.* tools",
  },
  {
    flag: "log-level",
    env: "TOOLRUNTIME_LOG_LEVEL",
    fallback: "info",
    text: "fatal, error, warn, info, debug or trace",
  },
];

/** The `--help` text: every option with its variable and default. */
export function helpText(): string {
  const lines = docs.map(
    (doc) => `  --${doc.flag.padEnd(20)} ${doc.env.padEnd(32)} ${doc.text} (default: ${doc.fallback || "none"})`,
  );
  return `usage: toolruntime [options]\n\noptions (flag, environment variable, meaning):\n${lines.join("\n")}\n  --help${" ".repeat(48)}print this text\n`;
}

/**
 * Reads the configuration from flags, then environment variables, then defaults. Throws an Error
 * with a precise message for an unknown flag or a value out of range.
 */
export function readConfig(argv: readonly string[], env: NodeJS.ProcessEnv): ServerConfig {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      host: { type: "string" },
      "grpc-port": { type: "string" },
      "http-port": { type: "string" },
      "max-message-bytes": { type: "string" },
      "default-timeout-ms": { type: "string" },
      "shutdown-grace-ms": { type: "string" },
      tools: { type: "string", multiple: true },
      "no-builtin-tools": { type: "boolean" },
      "log-level": { type: "string" },
      help: { type: "boolean" },
    },
  });
  const pick = (flag: string): string => {
    const doc = docs.find((candidate) => candidate.flag === flag) as OptionDoc;
    const fromFlag = (values as Record<string, unknown>)[flag];
    return typeof fromFlag === "string" ? fromFlag : (env[doc.env] ?? doc.fallback);
  };
  const integer = (flag: string, min: number, max: number): number => {
    const text = pick(flag);
    const value = Number(text);
    if (!/^[0-9]+$/.test(text) || value < min || value > max) {
      throw new Error(`--${flag} ${JSON.stringify(text)} is invalid: use a whole number from ${min} to ${max}`);
    }
    return value;
  };
  const toolModules = values.tools ?? (env["TOOLRUNTIME_TOOLS"] ?? "").split(",").filter((entry) => entry !== "");
  const logLevel = pick("log-level");
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(logLevel)) {
    throw new Error(`--log-level ${JSON.stringify(logLevel)} is invalid: use fatal, error, warn, info, debug or trace`);
  }
  return {
    host: pick("host"),
    grpcPort: integer("grpc-port", 0, 65535),
    httpPort: integer("http-port", 0, 65535),
    maxMessageBytes: integer("max-message-bytes", 1024, 1024 * 1024 * 1024),
    defaultTimeoutMs: integer("default-timeout-ms", 1, 86_400_000),
    shutdownGraceMs: integer("shutdown-grace-ms", 0, 3_600_000),
    toolModules,
    builtinTools: !(values["no-builtin-tools"] ?? env["TOOLRUNTIME_NO_BUILTIN_TOOLS"] === "true"),
    logLevel,
    help: values.help ?? false,
  };
}
