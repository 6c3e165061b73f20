import { parseArgs } from "node:util";
import { UsageError } from "./usage-error.js";

/** One flag of a client command, as parsed and as documented by `--help`. */
export interface OptionSpec {
  /** The long flag without its dashes, for example "address". */
  readonly name: string;
  /** Whether the flag takes a value. */
  readonly type: "string" | "boolean";
  /** A one-letter alias, for example "h" for `--help`. */
  readonly short?: string;
  /** What the value looks like in the help, for example "HOST:PORT". */
  readonly placeholder?: string;
  /** The environment variable read when the flag is absent. */
  readonly env?: string;
  /** The default, as the help shows it. */
  readonly fallback: string;
  /** What the flag does. */
  readonly text: string;
}

/** The flags every client command accepts: where the server is and how to authenticate to it. */
export const commonOptions: readonly OptionSpec[] = [
  {
    name: "address",
    type: "string",
    placeholder: "HOST:PORT",
    env: "TOOLRUNTIME_ADDRESS",
    fallback: "127.0.0.1:50051",
    text: "the server's native gRPC port",
  },
  {
    name: "token",
    type: "string",
    placeholder: "TOKEN",
    env: "TOOLRUNTIME_TOKEN",
    fallback: "none",
    text: 'sent as "authorization: Bearer TOKEN" on every call',
  },
  {
    name: "tls-ca",
    type: "string",
    placeholder: "FILE",
    fallback: "the system's CAs",
    text: "PEM certificate(s) to trust for the server; any --tls-* flag switches to TLS",
  },
  {
    name: "tls-cert",
    type: "string",
    placeholder: "FILE",
    fallback: "none",
    text: "PEM client certificate for mutual TLS; needs --tls-key",
  },
  {
    name: "tls-key",
    type: "string",
    placeholder: "FILE",
    fallback: "none",
    text: "PEM private key of --tls-cert",
  },
  { name: "help", type: "boolean", short: "h", fallback: "off", text: "print this help and exit" },
];

/** The flags and arguments of one command line. */
export interface ParsedCommandLine {
  /** Flag values by long name; absent flags are undefined. */
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  /** The arguments that are not flags, in order. */
  readonly positionals: readonly string[];
}

/**
 * Parses `args` strictly against `options`. Throws a {@link UsageError} that names the offending flag
 * or argument and points at `toolruntime COMMAND --help`.
 */
export function parseCommandLine(
  command: string,
  args: readonly string[],
  options: readonly OptionSpec[],
  allowPositionals: boolean,
): ParsedCommandLine {
  const config: Record<string, { type: "string" | "boolean"; short?: string }> = {};
  for (const option of options) {
    config[option.name] =
      option.short === undefined ? { type: option.type } : { type: option.type, short: option.short };
  }
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...args], options: config, strict: true, allowPositionals });
  } catch (error) {
    throw toUsageError(command, error);
  }
  const values: Record<string, string | boolean | undefined> = {};
  for (const option of options) {
    const value = parsed.values[option.name];
    values[option.name] = typeof value === "string" || typeof value === "boolean" ? value : undefined;
  }
  return { values, positionals: parsed.positionals };
}

function toUsageError(command: string, error: unknown): UsageError {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  const quoted = /'([^']*)'/.exec(message)?.[1] ?? "";
  const flag = /^-{1,2}[^\s<=]+/.exec(quoted)?.[0] ?? quoted;
  const help = `see "toolruntime ${command} --help" for its options`;
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    return new UsageError(`unknown option "${flag}" for "toolruntime ${command}": ${help}`);
  }
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
    return new UsageError(`unexpected argument "${quoted}": "toolruntime ${command}" takes no arguments; ${help}`);
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    if (message.includes("does not take an argument")) {
      return new UsageError(`option "${flag}" takes no value: write ${flag} alone`);
    }
    return new UsageError(
      `option "${flag}" needs a value: write ${flag} VALUE, or ${flag}=VALUE for a value that starts with "-"`,
    );
  }
  return new UsageError(`the arguments of "toolruntime ${command}" are invalid (${message}): ${help}`);
}

/** The value of a string flag, or undefined when it was not given. */
export function stringValue(parsed: ParsedCommandLine, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : undefined;
}

/** Whether a boolean flag was given. */
export function flagValue(parsed: ParsedCommandLine, name: string): boolean {
  return parsed.values[name] === true;
}

/**
 * Reads `text` as a whole number from `min` to `max`; throws a {@link UsageError} naming `label`
 * (for example "--timeout-ms") otherwise.
 */
export function wholeNumber(text: string, label: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || value < min || value > max) {
    throw new UsageError(
      `${label} "${text}" is invalid: use a whole number from ${min} to ${max.toLocaleString("en-US")}`,
    );
  }
  return value;
}
