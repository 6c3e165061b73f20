import type { CliIo } from "./cli-io.js";
import type { CliCommand } from "./commands/command.js";
import { executionsApproveCommand, executionsRejectCommand } from "./commands/executions-decide.js";
import { executionsCancelCommand } from "./commands/executions-cancel.js";
import { executionsGetCommand } from "./commands/executions-get.js";
import { executionsListCommand } from "./commands/executions-list.js";
import { executionsWatchCommand } from "./commands/executions-watch.js";
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
  ["executions list", executionsListCommand],
  ["executions get", executionsGetCommand],
  ["executions watch", executionsWatchCommand],
  ["executions cancel", executionsCancelCommand],
  ["executions approve", executionsApproveCommand],
  ["executions reject", executionsRejectCommand],
]);

/** Every client command as typed ("tools list", "executions approve", "run", …), in help order. */
export function commandNames(): string[] {
  return [...commands.keys()];
}

/** The groups of subcommands, with the text `toolruntime GROUP --help` prints. */
const groups: ReadonlyMap<string, { readonly help: string; readonly subcommands: string }> = new Map([
  ["tools", { help: toolsHelpTextOf(), subcommands: '"list" or "get NAME"' }],
  [
    "executions",
    {
      help: executionsHelpTextOf(),
      subcommands: '"list", "get ID", "watch ID", "cancel ID", "approve ID" or "reject ID"',
    },
  ],
]);

/** The text of `toolruntime help`: the client commands, and how to start the server instead. */
export const clientHelpText = `usage: toolruntime COMMAND [options]

A command-line client of a toolruntime server, over native gRPC.

commands:
  tools list       list the tools of a registry (a table, or JSON lines when piped)
  tools get NAME   print one tool's spec as JSON
  run NAME         run a tool and show its lifecycle events live, then its result (--detach: start it only)
  watch            show the registry's tools, then every change until Ctrl-C
  executions list  list runs, newest first (a table, or JSON lines when piped)
  executions get ID | watch ID | cancel ID | approve ID | reject ID
                   one run: its record and inputs, its events, cancel it, decide its approval
  help COMMAND     every option of a command, with its default (also: toolruntime COMMAND --help)

common options:
  --address HOST:PORT   the server's gRPC port (env TOOLRUNTIME_ADDRESS; default: 127.0.0.1:50051)
  --token TOKEN         sent as "authorization: Bearer TOKEN" (env TOOLRUNTIME_TOKEN; default: none)
  --tls-ca FILE, --tls-cert FILE, --tls-key FILE
                        TLS and mutual TLS (default: cleartext HTTP/2)

exit codes: 0 done (the run succeeded), 1 the run failed, 2 usage error, 3 RPC error, 4 declined at a
prompt, 130 interrupted

Any other arguments start the server: toolruntime [server options], for example
"toolruntime --grpc-port 0"; "toolruntime help server" lists the server's options.
`;

function toolsHelpTextOf(): string {
  return `usage: toolruntime tools SUBCOMMAND [options]

subcommands:
  list       list the tools of a registry; see "toolruntime tools list --help"
  get NAME   print one tool's spec as JSON; see "toolruntime tools get --help"
`;
}

function executionsHelpTextOf(): string {
  return `usage: toolruntime executions SUBCOMMAND [options]

subcommands:
  list         list runs newest first; see "toolruntime executions list --help"
  get ID       print a run's record and inputs
  watch ID     show a run's events, replayed then live, until it completes
  cancel ID    cancel a run
  approve ID   show what a run waiting for a human would do, confirm, and approve it
  reject ID    the same, and reject it
See "toolruntime executions SUBCOMMAND --help" for the options of each.
`;
}

/**
 * Whether `args` (the arguments after the executable) ask for the client rather than the server:
 * they start with "tools", "executions", "run", "watch" or "help", or are "--help" (or "-h") alone.
 */
export function isClientCommand(args: readonly string[]): boolean {
  const [first] = args;
  if (first === "tools" || first === "executions" || first === "run" || first === "watch" || first === "help") {
    return true;
  }
  return args.length === 1 && (first === "--help" || first === "-h");
}

/**
 * Runs one client command (`tools list|get`, `executions list|get|watch|cancel|approve|reject`,
 * `run`, `watch`, `help`) with `argv`, the arguments after the executable, writing to `io`, and
 * returns the exit code: 0 done, 1 the run failed, 2 usage error, 3 RPC error, 4 declined at a
 * prompt, 130 interrupted through `io.signal`.
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
  const group = groups.get(first);
  if (group !== undefined) {
    if (second === "--help" || second === "-h" || second === "help") {
      io.stdout.write(group.help);
      return ExitCode.ok;
    }
    if (second === undefined) {
      throw new UsageError(`"toolruntime ${first}" needs a subcommand: write ${group.subcommands}`);
    }
    const command = commands.get(`${first} ${second}`);
    if (command === undefined) {
      throw new UsageError(`unknown subcommand "${second}" of "toolruntime ${first}": use ${group.subcommands}`);
    }
    return command.run(argv.slice(2), io, env);
  }
  const command = commands.get(first);
  if (command === undefined) {
    throw new UsageError(
      `unknown command "${first}": use tools, executions, run, watch or help; see "toolruntime help"`,
    );
  }
  return command.run(argv.slice(1), io, env);
}

function help(topic: readonly string[], io: CliIo): number {
  const name = topic.join(" ");
  if (name === "") {
    io.stdout.write(clientHelpText);
    return ExitCode.ok;
  }
  const group = groups.get(name);
  if (group !== undefined) {
    io.stdout.write(group.help);
    return ExitCode.ok;
  }
  if (name === "server") {
    io.stdout.write('the server\'s options are printed by the executable: run "toolruntime help server" in a shell\n');
    return ExitCode.ok;
  }
  const command = commands.get(name);
  if (command === undefined) {
    throw new UsageError(`no help for "${name}": use one of ${[...commands.keys()].join(", ")}`);
  }
  io.stdout.write(renderCommandHelp(command.doc));
  return ExitCode.ok;
}
