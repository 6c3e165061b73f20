import { formatFigure, formatRatio } from "./format-number.js";
import { table } from "./markdown-table.js";
import type { RatioDefinition, Target } from "./ratio-definitions.js";
import type { RoundResults, WindowRecord } from "./round-results.js";
import type { RatioSummary, VariantSummary } from "./summarize.js";
import { wireSections, windowsSection } from "./wire-markdown.js";

/** Facts about the run printed above the tables. */
export interface RunFacts {
  readonly mode: "quick" | "full";
  readonly rounds: number;
  readonly startedAt: string;
  readonly elapsedS: number;
  readonly node: string;
  readonly h2load: string;
  readonly cpus: string;
  readonly warmupS: number;
  readonly measureS: number;
  readonly slices: number;
  /** How the toolruntime under test is started. */
  readonly serverCommand: string;
  /** Runs of the concurrency case that did not succeed, over all rounds. */
  readonly concurrencyErrors: number;
}

/** Everything the report shows. */
export interface ReportInput {
  readonly facts: RunFacts;
  readonly variants: readonly VariantSummary[];
  readonly ratios: readonly RatioSummary[];
  /** Every ratio definition, so that the targets table can show the rows that were not run. */
  readonly definitions: readonly RatioDefinition[];
  readonly rounds: readonly RoundResults[];
  readonly windows: readonly WindowRecord[];
}

function wanted(target: Target, value = target.value): string {
  const op = { ">=": "≥", "<=": "≤", "<": "<" }[target.op];
  return `${op} ${value.toLocaleString("en-US")}${target.on === "ours" ? "" : "×"}`;
}

function targetCell(summary: RatioSummary): string {
  if (!summary.target) return "";
  const text = wanted(summary.target);
  if (summary.failedRounds > 0) {
    return `${text}: **failed** (${summary.failedRounds} of ${summary.rounds} windows not verified)`;
  }
  const stretch =
    summary.target.stretch === undefined
      ? ""
      : ` (stretch ${wanted(summary.target, summary.target.stretch)}: ${summary.stretchMet ? "met" : "missed"})`;
  return `${text}: ${summary.met ? "met" : "**missed**"}${stretch}`;
}

function verifiedCell(summary: RatioSummary): string {
  return `${summary.rounds - summary.failedRounds}/${summary.rounds}`;
}

function targetsSection(input: ReportInput): string[] {
  const rows = input.definitions.flatMap((definition) => {
    if (!definition.headline) return [];
    const summary = input.ratios.find((r) => r.measure === definition.measure);
    if (!summary) {
      const target = definition.target ? wanted(definition.target) : "";
      return [
        [String(definition.caseNumber), definition.headline, "–", "–", definition.unit, "–", `${target}: not run`, "–"],
      ];
    }
    return [
      [
        String(summary.caseNumber),
        definition.headline,
        formatFigure(summary.ours),
        formatFigure(summary.baseline),
        summary.unit,
        formatRatio(summary.ratio),
        targetCell(summary),
        verifiedCell(summary),
      ],
    ];
  });
  return [
    "## Targets",
    "",
    "The fast-path issue's table. A target marked × applies to the ratio (median of per-round ratios); the others to our figure itself. Only windows whose success was verified count: a row with a failed window says so instead of met or missed.",
    "",
    table(["case", "measure", "ours", "baseline", "unit", "ours ÷ baseline", "target", "windows verified"], rows),
    "",
  ];
}

/** The report: run facts, the targets, the ratio table, the server-bound measurements, cases 7–8, and every window. */
export function renderMarkdown(input: ReportInput): string {
  const { facts, variants, ratios } = input;
  const loadErrors = variants.reduce((sum, v) => sum + v.errors, 0);
  const loadCalls = variants.reduce((sum, v) => sum + v.succeeded, 0);
  const failedWindows = input.windows.filter((w) => !w.check.verified).length;
  const parts = [
    `# toolruntime benchmark (${facts.mode} mode)`,
    "",
    `${facts.startedAt} · ${facts.rounds} rounds, cases interleaved in a shuffled order each round, each server in a fresh process · ` +
      `${facts.warmupS} s warm-up + ${facts.measureS} s measured per server, in ${facts.slices} slices taken in turn by the servers compared with each other · Node ${facts.node} · ${facts.h2load} · ${facts.cpus} · ${facts.elapsedS.toFixed(0)} s`,
    "",
    `Server under test: \`${facts.serverCommand}\`, stdout (its log, at the default level) to a file; every other setting the default as shipped.`,
    "",
    ...targetsSection(input),
    "## Ratios against baselines measured in the same run",
    "",
    "Each ratio is the median over rounds of (ours ÷ the baseline measured in the same round); ours and baseline are medians over rounds. Rounds whose windows were not verified are left out (counted in the last column).",
    "",
    table(
      ["case", "measure", "ours", "baseline", "unit", "ours ÷ baseline", "better", "target", "verified"],
      ratios.map((r) => [
        String(r.caseNumber),
        r.measure,
        formatFigure(r.ours),
        formatFigure(r.baseline),
        r.unit,
        formatRatio(r.ratio),
        r.better,
        targetCell(r),
        verifiedCell(r),
      ]),
    ),
    "",
    "## Server-bound measurements (h2load, 64 calls in flight; medians over rounds)",
    "",
    table(
      [
        "server",
        "calls/s",
        "p50 ms",
        "p99 ms",
        "server CPU ms/call",
        "server cores",
        "h2load cores",
        "msgs/call",
        "h2load errors",
        "server OK / non-OK",
        "verified",
        "machine busy",
        "other cores",
        "load 1m",
      ],
      variants.map((v) => [
        `${v.title} \`${v.id}\``,
        formatFigure(v.callsPerSecond),
        formatFigure(v.p50Ms),
        formatFigure(v.p99Ms),
        formatFigure(v.cpuMsPerCall),
        v.serverCores.toFixed(2),
        v.loadGeneratorCores.toFixed(2),
        formatFigure(v.messagesPerCall),
        String(v.errors),
        v.serverOk === undefined ? "–" : `${formatFigure(v.serverOk)} / ${formatFigure(v.serverNonOk ?? 0)}`,
        `${v.verifiedRounds}/${v.rounds}`,
        `${v.machineBusyPct.toFixed(0)}%`,
        v.otherCores.toFixed(2),
        v.loadAvg1m.toFixed(2),
      ]),
    ),
    "",
    ...wireSections(input.rounds),
    ...windowsSection(input.windows),
    "## How success was verified",
    "",
    `Before each h2load load, one call of each server was checked with a real client (connect-node gRPC/Connect, the MCP SDK client) ` +
      `and by replaying h2load's exact body (grpc-status 0 / HTTP 200 and a successful result or JSON-RPC result). ` +
      `Around the warm-up and the measured window, the toolruntime's /metrics were read (\`toolruntime_rpc_requests_total\` by code, \`toolruntime_executions_total\` by outcome): ` +
      `a window is verified when the server counted no non-OK call and no failed run (but for CANCELLED calls h2load abandoned at the end of its time, at most as many as it left in flight) ` +
      `and at least as many OK calls and successful runs as h2load counted. The bare baselines keep no counters: h2load's counts and the replayed call are their check. ` +
      `Case 7 checks every call's status in its client and on the server's counters; case 8's burst (sent by h2load) is checked on the server's counters (every StartExecution OK, every run a success) and by listing each of its runs as SUCCEEDED. ` +
      `Under h2load: ${loadErrors} failed or non-2xx of ${loadCalls.toLocaleString("en-US")} requests. ` +
      `Windows not verified: ${failedWindows} of ${input.windows.length}. Concurrency case: ${facts.concurrencyErrors} runs failed.`,
    "",
  ];
  return parts.join("\n");
}
