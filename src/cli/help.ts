import type { OptionSpec } from "./options.js";

/** What `toolruntime COMMAND --help` documents. */
export interface CommandDoc {
  /** The command as typed, for example "tools list". */
  readonly command: string;
  /** The synopsis after "toolruntime", for example "run NAME [options]". */
  readonly usage: string;
  /** One sentence saying what the command does. */
  readonly summary: string;
  /** Every flag the command accepts, the common ones included. */
  readonly options: readonly OptionSpec[];
  /** Further paragraphs: arguments, output, exit codes. */
  readonly notes?: readonly string[];
}

/** The `--help` text of one command: usage, summary, every option with its default, notes. */
export function renderCommandHelp(doc: CommandDoc): string {
  const flags = doc.options.map((option) => {
    const name = `${option.short === undefined ? "" : `-${option.short}, `}--${option.name}`;
    return option.placeholder === undefined ? name : `${name} ${option.placeholder}`;
  });
  const width = Math.max(...flags.map((flag) => flag.length)) + 2;
  const lines = doc.options.map((option, index) => {
    const source = option.env === undefined ? "" : `env ${option.env}; `;
    return `  ${(flags[index] ?? "").padEnd(width)}${option.text} (${source}default: ${option.fallback})`;
  });
  const notes = (doc.notes ?? []).map((note) => `\n${note}\n`).join("");
  return `usage: toolruntime ${doc.usage}\n\n${doc.summary}\n\noptions:\n${lines.join("\n")}\n${notes}`;
}
