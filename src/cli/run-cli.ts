import type { CliIo } from "./cli-io.js";
import type { CliCommand } from "./commands/command.js";
import { runCommand } from "./commands/run.js";
import { toolsGetCommand } from "./commands/tools-get.js";
import { toolsListCommand } from "./commands/tools-list.js";
import { watchCommand } from "./commands/watch.js";
import { ExitCode } from "./exit-codes.js";
import { renderCommandHelp } from "./help.js";
import { UsageError } from "./usage-error.js";

export type { CliIo } from "./cli-io.js";

const commands: ReadonlyMap<string, CliCommand> = new Map([
  ["tools list", toolsListCommand],
  ["tools get", toolsGetCommand],
  ["run", runCommand],
  ["watch", watchCommand],
]);

/** The text of `toolruntime help`: the client commands, and how to start the server instead. */
export const clientHelpText = `usage: toolruntime COMMAND [options]

A command-line client of a toolruntime server, over native gRPC.

commands:
  tools list       list the tools of a registry (a table, or JSON lines when piped)
  tools get NAME   print one tool's spec as JSON
  run NAME         run a tool and show its lifecycle events live, then its result
  watch            show the registry's tools, then every change until Ctrl-C
  help COMMAND     every option of a command, with its default (also: toolruntime COMMAND --help)

common options:
  --address HOST:PORT   the server's gRPC port (env TOOLRUNTIME_ADDRESS; default: 127.0.0.1:50051)
  --token TOKEN         sent as "authorization: Bearer TOKEN" (env TOOLRUNTIME_TOKEN; default: none)
  --tls-ca FILE, --tls-cert FILE, --tls-key FILE
                        TLS and mutual TLS (default: cleartext HTTP/2)

exit codes: 0 done (the run succeeded), 1 the run failed, 2 usage error, 3 RPC error, 130 interrupted

Any other arguments start the server: toolruntime [server options], for example
"toolruntime --grpc-port 0"; "toolruntime help server" lists the server's options.
`;

const toolsHelpText = `usage: toolruntime tools SUBCOMMAND [options]

subcommands:
  list       list the tools of a registry; see "toolruntime tools list --help"
  get NAME   print one tool's spec as JSON; see "toolruntime tools get --help"
`;

/**
 * Whether `args` (the arguments after the executable) ask for the client rather than the server:
 * they start with "tools", "run", "watch" or "help", or are "--help" (or "-h") alone.
 */
export function isClientCommand(args: readonly string[]): boolean {
  const [first] = args;
  if (first === "tools" || first === "run" || first === "watch" || first === "help") return true;
  return args.length === 1 && (first === "--help" || first === "-h");
}

/**
 * Runs one client command (`tools list`, `tools get`, `run`, `watch`, `help`) with `argv`, the
 * arguments after the executable, writing to `io`, and returns the exit code: 0 done, 1 the run
 * failed, 2 usage error, 3 RPC error, 130 interrupted through `io.signal`.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const env = io.env ?? process.env;
  try {
    return await dispatch(argv, io, env);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`toolruntime: ${error.message}\n`);
      return ExitCode.usage;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`toolruntime: unexpected failure: ${message}\n`);
    return ExitCode.failed;
  }
}

async function dispatch(argv: readonly string[], io: CliIo, env: NodeJS.ProcessEnv): Promise<number> {
  const [first, second] = argv;
  if (first === undefined || ((first === "--help" || first === "-h") && argv.length === 1)) {
    io.stdout.write(clientHelpText);
    return ExitCode.ok;
  }
  if (first === "help") return help(argv.slice(1), io);
  if (first === "tools") {
    if (second === "--help" || second === "-h" || second === "help") {
      io.stdout.write(toolsHelpText);
      return ExitCode.ok;
    }
    if (second === undefined) {
      throw new UsageError(
        '"toolruntime tools" needs a subcommand: write "toolruntime tools list" or "toolruntime tools get NAME"',
      );
    }
    const command = commands.get(`tools ${second}`);
    if (command === undefined) {
      throw new UsageError(`unknown subcommand "${second}" of "toolruntime tools": use "list" or "get NAME"`);
    }
    return command.run(argv.slice(2), io, env);
  }
  const command = commands.get(first);
  if (command === undefined) {
    throw new UsageError(`unknown command "${first}": use tools, run, watch or help; see "toolruntime help"`);
  }
  return command.run(argv.slice(1), io, env);
}

function help(topic: readonly string[], io: CliIo): number {
  const name = topic.join(" ");
  if (name === "") {
    io.stdout.write(clientHelpText);
    return ExitCode.ok;
  }
  if (name === "tools") {
    io.stdout.write(toolsHelpText);
    return ExitCode.ok;
  }
  if (name === "server") {
    io.stdout.write('the server\'s options are printed by the executable: run "toolruntime help server" in a shell\n');
    return ExitCode.ok;
  }
  const command = commands.get(name);
  if (command === undefined) {
    throw new UsageError(`no help for "${name}": use one of tools list, tools get, run, watch`);
  }
  io.stdout.write(renderCommandHelp(command.doc));
  return ExitCode.ok;
}
