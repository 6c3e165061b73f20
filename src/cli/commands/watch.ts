import {
  ToolChangeType,
  WatchToolsResponseSchema,
  type WatchToolsResponse,
} from "../../../gen/toolruntime/v1/registry_pb.js";
import { isTerminal, terminalColumns } from "../cli-io.js";
import { callOptions, readConnectionSettings, withConnection } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import { cutToWidth, jsonLine } from "../format.js";
import { commonOptions, flagValue, stringValue } from "../options.js";
import { UsageError } from "../usage-error.js";
import { parseOrHelp, type CliCommand } from "./command.js";

/** `toolruntime watch`: the registry's tools and then every change, until interrupted. */
export const watchCommand: CliCommand = {
  doc: {
    command: "watch",
    usage: "watch [options]",
    summary:
      "Streams RegistryService.WatchTools: a snapshot of the registry's tools, then one line per change\n(added, updated, removed) until Ctrl-C.",
    options: [
      { name: "registry", type: "string", placeholder: "R", fallback: '"default"', text: "the registry to watch" },
      {
        name: "from-version",
        type: "string",
        placeholder: "V",
        fallback: "0, start with a snapshot",
        text: "skip the snapshot and replay the changes after registry version V, then follow live",
      },
      {
        name: "json",
        type: "boolean",
        fallback: "on when stdout is not a terminal",
        text: "print one JSON object (a WatchToolsResponse, heartbeats included) per line",
      },
      ...commonOptions,
    ],
    notes: [
      "Exit codes: 130 interrupted (the normal end), 0 the server ended the watch, 2 usage error, 3 RPC error\n(with the version to resume from).",
    ],
  },
  async run(args, io, env) {
    const parsed = parseOrHelp(this.doc, args, io, false);
    if (parsed === undefined) return ExitCode.ok;
    const fromText = stringValue(parsed, "from-version");
    const fromVersion = fromText === undefined ? 0n : parseVersion(fromText);
    const settings = await readConnectionSettings(parsed, env);
    const json = flagValue(parsed, "json") || !isTerminal(io);
    const request = { registry: stringValue(parsed, "registry") ?? "", fromVersion };
    let lastVersion = fromVersion;
    const resumeHint = (): string | undefined =>
      lastVersion > 0n ? `resume with: toolruntime watch --from-version ${lastVersion}` : undefined;

    return withConnection(
      settings,
      io,
      "WatchTools",
      async ({ registry }) => {
        for await (const change of registry.watchTools(request, callOptions(io))) {
          if (change.type !== ToolChangeType.SNAPSHOT) lastVersion = change.version;
          if (json) io.stdout.write(jsonLine(WatchToolsResponseSchema, change));
          else if (change.type !== ToolChangeType.HEARTBEAT)
            io.stdout.write(describeChange(change, terminalColumns(io)));
        }
        io.stderr.write(`toolruntime: the server ended the watch at version ${lastVersion}\n`);
        const hint = resumeHint();
        if (hint !== undefined) io.stderr.write(`  ${hint}\n`);
        return ExitCode.ok;
      },
      resumeHint,
    );
  },
};

function parseVersion(text: string): bigint {
  if (!/^[0-9]{1,20}$/.test(text) || BigInt(text) > 0xffff_ffff_ffff_ffffn) {
    throw new UsageError(
      `--from-version "${text}" is invalid: use a registry version, a whole number from 0 (a snapshot first) up`,
    );
  }
  return BigInt(text);
}

const labels: Readonly<Record<ToolChangeType, string>> = {
  [ToolChangeType.UNSPECIFIED]: "unknown",
  [ToolChangeType.SNAPSHOT]: "snapshot",
  [ToolChangeType.SNAPSHOT_END]: "snapshot",
  [ToolChangeType.ADDED]: "added",
  [ToolChangeType.UPDATED]: "updated",
  [ToolChangeType.REMOVED]: "removed",
  [ToolChangeType.HEARTBEAT]: "heartbeat",
};

function describeChange(change: WatchToolsResponse, columns: number): string {
  const time = new Date().toTimeString().slice(0, 8);
  const label = (labels[change.type] ?? "unknown").padEnd(9);
  const text =
    change.type === ToolChangeType.SNAPSHOT_END
      ? `complete at version ${change.version}; watching for changes`
      : `${change.spec?.name ?? "?"}  v${change.version}  ${change.spec?.description ?? ""}`;
  return `${cutToWidth(`${time}  ${label}  ${text}`, columns - 1).trimEnd()}\n`;
}
