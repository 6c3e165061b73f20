import { toJson } from "@bufbuild/protobuf";
import { ToolSpecSchema } from "../../../gen/toolruntime/v1/tool_pb.js";
import { callOptions, readConnectionSettings, withConnection } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import { prettyJson } from "../format.js";
import { commonOptions, stringValue } from "../options.js";
import { UsageError } from "../usage-error.js";
import { parseOrHelp, type CliCommand } from "./command.js";

/** `toolruntime tools get NAME`: one tool's spec as JSON. */
export const toolsGetCommand: CliCommand = {
  doc: {
    command: "tools get",
    usage: "tools get NAME [options]",
    summary: "Prints the spec of the tool NAME (RegistryService.GetTool) as indented JSON.",
    options: [
      { name: "registry", type: "string", placeholder: "R", fallback: '"default"', text: "the registry to read" },
      ...commonOptions,
    ],
    notes: ["Exit codes: 0 printed, 2 usage error, 3 RPC error (NOT_FOUND for an unknown tool)."],
  },
  async run(args, io, env) {
    const parsed = parseOrHelp(this.doc, args, io, true);
    if (parsed === undefined) return ExitCode.ok;
    const [name, ...extra] = parsed.positionals;
    if (name === undefined) {
      throw new UsageError(
        'missing tool name: write "toolruntime tools get NAME", for example "toolruntime tools get builtin.echo"',
      );
    }
    if (extra.length > 0) {
      throw new UsageError(`unexpected argument "${extra[0] ?? ""}": "toolruntime tools get" takes one tool name`);
    }
    const settings = await readConnectionSettings(parsed, env);
    const registryName = stringValue(parsed, "registry") ?? "";
    return withConnection(settings, io, "GetTool", async ({ registry }) => {
      const response = await registry.getTool({ registry: registryName, name }, callOptions(io));
      io.stdout.write(prettyJson(response.spec === undefined ? {} : toJson(ToolSpecSchema, response.spec)));
      return ExitCode.ok;
    });
  },
};
