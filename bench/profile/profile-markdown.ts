import { formatFigure } from "../report/format-number.js";
import type { ProfiledRun } from "./profile-server.js";
import type { SelfTime } from "./summarize-profile.js";

function rows(entries: readonly SelfTime[], calls: number): string[] {
  return entries.map(
    (entry) =>
      `| ${(entry.share * 100).toFixed(1)}% | ${formatFigure((entry.ms * 1000) / calls)} | \`${entry.name.replace(/\|/g, "\\|")}\` |`,
  );
}

/** A profiled run as Markdown: busy time per call, then self time by area and by function. */
export function renderProfile(run: ProfiledRun): string {
  const { summary, calls } = run;
  return [
    `### \`${run.variant}\`: ${formatFigure(run.callsPerSecond)} calls/s under the profiler, ${formatFigure((summary.busyMs * 1000) / calls)} µs busy main-thread time per call`,
    "",
    "| self time | µs/call | package, folder or V8 category |",
    "| --- | --- | --- |",
    ...rows(summary.areas, calls),
    "",
    "| self time | µs/call | function |",
    "| --- | --- | --- |",
    ...rows(summary.functions, calls),
    "",
    "| inclusive time | µs/call | function of a package or of the project, with its callees |",
    "| --- | --- | --- |",
    ...rows(summary.inclusive, calls),
    "",
  ].join("\n");
}
