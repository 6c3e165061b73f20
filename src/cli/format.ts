import { toJson, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";

/** One message as a line of canonical protobuf JSON (protobuf-es `toJson`), newline included. */
export function jsonLine<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): string {
  return `${JSON.stringify(toJson(schema, message))}\n`;
}

/** A JSON value indented by two spaces, newline included. */
export function prettyJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * `text` made safe for a terminal: each control character (line breaks, tabs, escape sequences a
 * server could send to redraw the screen) becomes a space.
 */
export function printable(text: string): string {
  let result = "";
  for (const character of text) {
    const code = character.codePointAt(0) ?? 0;
    result += code < 0x20 || (code >= 0x7f && code < 0xa0) ? " " : character;
  }
  return result;
}

/**
 * `text` on one line ({@link printable}) and at most `width` characters, ending with "…" when it
 * was cut.
 */
export function cutToWidth(text: string, width: number): string {
  const characters = Array.from(printable(text));
  if (characters.length <= width) return characters.join("");
  if (width <= 0) return "";
  return `${characters.slice(0, width - 1).join("")}…`;
}

const flagNames: readonly [keyof NonNullable<ToolSpec["capabilities"]>, string][] = [
  ["readOnly", "ro"],
  ["writes", "w"],
  ["checkpointable", "ckpt"],
  ["idempotent", "idem"],
  ["unsafe", "unsafe"],
  ["humanApprovalRequired", "approval"],
];

/** What the abbreviations of {@link capabilityFlags} stand for, for help texts. */
export const capabilityLegend =
  "ro read_only, w writes, ckpt checkpointable, idem idempotent, unsafe unsafe, approval human_approval_required";

/**
 * The capability flags of a tool that are set, abbreviated and comma-separated ("ro,idem"; see
 * {@link capabilityLegend}), or "-" for none.
 */
export function capabilityFlags(spec: ToolSpec): string {
  const capabilities = spec.capabilities;
  if (capabilities === undefined) return "-";
  const set = flagNames.filter(([field]) => capabilities[field] === true).map(([, label]) => label);
  return set.length === 0 ? "-" : set.join(",");
}

/**
 * A table of tools with a header: name, type, capability flags, whether the server has a handler,
 * and the description cut so that each line fits in `columns`.
 */
export function toolTable(specs: readonly ToolSpec[], columns: number): string {
  const rows = specs.map((spec) => [
    spec.name,
    spec.toolType || "-",
    capabilityFlags(spec),
    spec.hasHandler ? "yes" : "no",
  ]);
  const header = ["NAME", "TYPE", "FLAGS", "HANDLER"];
  const widths = header.map((title, index) => Math.max(title.length, ...rows.map((row) => row[index]?.length ?? 0)));
  const fixed = widths.reduce((sum, width) => sum + width + 2, 0);
  const descriptionWidth = Math.max(columns - 1 - fixed, 12);
  const line = (cells: readonly string[], description: string): string =>
    `${cells.map((cell, index) => cell.padEnd(widths[index] ?? 0)).join("  ")}  ${cutToWidth(description, descriptionWidth)}`.trimEnd();
  const lines = [line(header, "DESCRIPTION")];
  specs.forEach((spec, index) => lines.push(line(rows[index] ?? [], spec.description)));
  return `${lines.join("\n")}\n`;
}
