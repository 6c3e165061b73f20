import { ToolSpecSchema, type ToolSpec } from "../../../gen/toolruntime/v1/tool_pb.js";
import { isTerminal, terminalColumns } from "../cli-io.js";
import { callOptions, readConnectionSettings, withConnection } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import { capabilityLegend, jsonLine, toolTable } from "../format.js";
import { commonOptions, flagValue, stringValue } from "../options.js";
import { parseOrHelp, type CliCommand } from "./command.js";

/** Tools asked for per ListTools page: the most the server allows, to need the fewest calls. */
const pageSize = 1000;

/** `toolruntime tools list`: every tool of a registry (all pages), as a table or as JSON lines. */
export const toolsListCommand: CliCommand = {
  doc: {
    command: "tools list",
    usage: "tools list [options]",
    summary: "Lists the tools of a registry in name order, reading every page of RegistryService.ListTools.",
    options: [
      {
        name: "namespace",
        type: "string",
        placeholder: "NS",
        fallback: "every namespace",
        text: 'only tools in this namespace or below it ("fs" matches "fs.read" and "fs.remote.copy")',
      },
      { name: "type", type: "string", placeholder: "T", fallback: "every type", text: "only tools of this tool_type" },
      { name: "registry", type: "string", placeholder: "R", fallback: '"default"', text: "the registry to list" },
      {
        name: "json",
        type: "boolean",
        fallback: "on when stdout is not a terminal",
        text: "print one JSON object (a ToolSpec) per line instead of a table",
      },
      ...commonOptions,
    ],
    notes: [
      "On a terminal: a table of name, type, capability flags, whether the server has a handler, and the\ndescription cut to the terminal's width. Otherwise one JSON object per tool per line.",
      `Flags: ${capabilityLegend}.`,
      "Exit codes: 0 listed, 2 usage error, 3 RPC error.",
    ],
  },
  async run(args, io, env) {
    const parsed = parseOrHelp(this.doc, args, io, false);
    if (parsed === undefined) return ExitCode.ok;
    const settings = await readConnectionSettings(parsed, env);
    const json = flagValue(parsed, "json") || !isTerminal(io);
    const request = {
      registry: stringValue(parsed, "registry") ?? "",
      namespace: stringValue(parsed, "namespace") ?? "",
      toolType: stringValue(parsed, "type") ?? "",
      pageSize,
    };
    return withConnection(settings, io, "ListTools", async ({ registry }) => {
      const specs: ToolSpec[] = [];
      let pageToken = "";
      do {
        const page = await registry.listTools({ ...request, pageToken }, callOptions(io));
        if (json) for (const spec of page.tools) io.stdout.write(jsonLine(ToolSpecSchema, spec));
        else specs.push(...page.tools);
        pageToken = page.nextPageToken;
      } while (pageToken !== "");
      if (!json) io.stdout.write(specs.length === 0 ? "no tools match\n" : toolTable(specs, terminalColumns(io)));
      return ExitCode.ok;
    });
  },
};
