import { optionDocs, type OptionDoc } from "./config.js";

/** The line before the README's options table; `npm run docs:options` rewrites what follows it. */
export const optionsTableBegin = "<!-- options table: generated from src/config.ts by `npm run docs:options` -->";

/** The line after the README's options table. */
export const optionsTableEnd = "<!-- end of options table -->";

/**
 * The README's table of server options, one row per option of src/config.ts in `--help` order
 * (then `--help` itself): flag, environment variable, default, meaning. Deterministic, so that it
 * is regenerated the same way after any merge; unformatted (prettier aligns the columns).
 */
export function optionsTable(): string {
  const rows = optionDocs().map((option) => [
    `\`--${option.flag}\``,
    envCell(option),
    defaultCell(option),
    escape(option.text),
  ]);
  rows.push(["`--help`", "", "", "print the options with their environment variables and defaults, and exit"]);
  const lines = [["flag", "environment", "default", "meaning"], ["---", "---", "---", "---"], ...rows];
  return `${lines.map((cells) => `| ${cells.join(" | ")} |`).join("\n")}\n`;
}

/**
 * `readme` with the text between {@link optionsTableBegin} and {@link optionsTableEnd} replaced by
 * `table`. Throws when the markers are missing or out of order.
 */
export function replaceOptionsTable(readme: string, table: string): string {
  const begin = readme.indexOf(optionsTableBegin);
  const end = readme.indexOf(optionsTableEnd);
  if (begin < 0 || end < begin) {
    throw new Error(`README.md needs the lines "${optionsTableBegin}" and "${optionsTableEnd}", in that order`);
  }
  return `${readme.slice(0, begin + optionsTableBegin.length)}\n\n${table}\n${readme.slice(end)}`;
}

/** The text between the markers of `readme`, trimmed; undefined when they are missing. */
export function currentOptionsTable(readme: string): string | undefined {
  const begin = readme.indexOf(optionsTableBegin);
  const end = readme.indexOf(optionsTableEnd);
  return begin < 0 || end < begin ? undefined : readme.slice(begin + optionsTableBegin.length, end).trim();
}

function envCell(option: OptionDoc): string {
  const env = `\`${option.env}\``;
  if (option.kind === "list") return `${env} (comma-separated)`;
  if (option.kind === "boolean") return `\`${option.env}=true\``;
  return env;
}

function defaultCell(option: OptionDoc): string {
  if (option.fallback === undefined) return "none";
  if (option.fallback === false) return "off";
  return `\`${String(option.fallback)}\``;
}

function escape(text: string): string {
  return text.replaceAll("|", "\\|");
}
