#!/usr/bin/env -S node --max-semi-space-size=32 --min-semi-space-size=16 --expose-gc
// The `toolruntime` executable: a client command (tools, executions, run, watch, help) runs the client;
// any other arguments start the server as `npm start` does: this first line passes node the flags the
// server ships with (src/server-node-flags.ts; `env -S` splits them).
import { isClientCommand, runCli } from "./run-cli.js";

const args = process.argv.slice(2);

if (args.length === 2 && args[0] === "help" && args[1] === "server") {
  // The server prints its own options; main.ts reads process.argv.
  process.argv.splice(2, 2, "--help");
  await import("../main.js");
} else if (isClientCommand(args)) {
  // A reader that goes away (`toolruntime tools list | head -1`) is not an error.
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
  const interrupt = new AbortController();
  process.on("SIGINT", () => {
    // The first Ctrl-C cancels the call in flight; a second one does not wait for that.
    if (interrupt.signal.aborted) process.exit(130);
    interrupt.abort(new Error("interrupted by SIGINT"));
  });
  process.exitCode = await runCli(args, {
    stdout: process.stdout,
    stderr: process.stderr,
    // Read only when a command asks for a confirmation, so other commands leave stdin alone.
    get stdin() {
      return process.stdin;
    },
    signal: interrupt.signal,
  });
} else {
  await import("../main.js");
}
