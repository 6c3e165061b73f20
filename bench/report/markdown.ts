import { formatFigure, formatRatio } from "./format-number.js";
import type { RatioSummary, VariantSummary } from "./summarize.js";

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
  /** Runs of the concurrency case that did not succeed, over all rounds. */
  readonly concurrencyErrors: number;
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((cell) => cell.replace(/\|/g, "\\|")).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

function targetCell(summary: RatioSummary): string {
  if (!summary.target) return "";
  const wanted = `${summary.target.op === ">=" ? "≥" : "≤"} ${summary.target.value}`;
  return `${wanted}: ${summary.met ? "met" : "**missed**"}`;
}

/** The report: run facts, the ratio table (the headline), and the server-bound measurements. */
export function renderMarkdown(
  facts: RunFacts,
  variants: readonly VariantSummary[],
  ratios: readonly RatioSummary[],
): string {
  const loadErrors = variants.reduce((sum, v) => sum + v.errors, 0);
  const loadCalls = variants.reduce((sum, v) => sum + v.succeeded, 0);
  const parts = [
    `# toolruntime benchmark (${facts.mode} mode)`,
    "",
    `${facts.startedAt} · ${facts.rounds} rounds, cases interleaved in a shuffled order each round, each server in a fresh process · ` +
      `${facts.warmupS} s warm-up + ${facts.measureS} s measured per server · Node ${facts.node} · ${facts.h2load} · ${facts.cpus} · ${facts.elapsedS.toFixed(0)} s`,
    "",
    "## Ratios against baselines measured in the same run",
    "",
    "Each ratio is the median over rounds of (ours ÷ the baseline measured in the same round); ours and baseline are medians over rounds.",
    "",
    table(
      ["case", "measure", "ours", "baseline", "unit", "ours ÷ baseline", "better", "target"],
      ratios.map((r) => [
        String(r.caseNumber),
        r.measure,
        formatFigure(r.ours),
        formatFigure(r.baseline),
        r.unit,
        formatRatio(r.ratio),
        r.better,
        targetCell(r),
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
        "errors",
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
      ]),
    ),
    "",
    `Correctness: before each load, one call of each server was checked with a real client (connect-node gRPC/Connect, the MCP SDK client) ` +
      `and by replaying h2load's exact body (grpc-status 0 / HTTP 200 and a successful result or JSON-RPC result). ` +
      `Under load: ${loadErrors} failed or non-2xx of ${loadCalls.toLocaleString("en-US")} requests. ` +
      `Concurrency case: ${facts.concurrencyErrors} runs failed.`,
    "",
  ];
  return parts.join("\n");
}
