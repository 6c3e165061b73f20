import type { VariantMeasurement } from "../cases/measure-variant.js";
import type { VariantId } from "../cases/wire-variants.js";
import type { CaseNumber } from "../options.js";
import type { RoundResults } from "./round-results.js";

/** A target a ratio must meet. */
export interface Target {
  readonly op: ">=" | "<=";
  readonly value: number;
}

/** One line of the ratio table: a figure of ours against its baseline from the same round. */
export interface RatioDefinition {
  readonly caseNumber: CaseNumber;
  /** What is compared, e.g. "ExecuteTool calls/s, gRPC port ÷ bare grpc-js echo". */
  readonly measure: string;
  readonly unit: string;
  /** Which way is better for the ratio. */
  readonly better: "higher" | "lower";
  readonly target?: Target;
  /** Our figure and the baseline's in one round; undefined when the round lacks either. */
  readonly pick: (round: RoundResults) => { ours: number; baseline: number } | undefined;
}

type Figure = (measurement: VariantMeasurement) => number;
const callsPerSecond: Figure = (m) => m.callsPerSecond;
const cpuMsPerCall: Figure = (m) => m.cpuMsPerCall;
const p50Ms: Figure = (m) => m.p50Ms;
const p99Ms: Figure = (m) => m.p99Ms;

function wirePair(ours: VariantId, baseline: VariantId, figure: Figure, baselineFigure: Figure = figure) {
  return (round: RoundResults): { ours: number; baseline: number } | undefined => {
    const subject = round.wire.find((m) => m.id === ours);
    const base = round.wire.find((m) => m.id === baseline);
    return subject && base ? { ours: figure(subject), baseline: baselineFigure(base) } : undefined;
  };
}

function overhead(caseNumber: CaseNumber, ours: VariantId, baseline: VariantId, label: string, target?: Target) {
  const rows: RatioDefinition[] = [
    {
      caseNumber,
      measure: `${label}: calls/s`,
      unit: "calls/s",
      better: "higher",
      ...(target ? { target } : {}),
      pick: wirePair(ours, baseline, callsPerSecond),
    },
    {
      caseNumber,
      measure: `${label}: p50 latency`,
      unit: "ms",
      better: "lower",
      pick: wirePair(ours, baseline, p50Ms),
    },
    {
      caseNumber,
      measure: `${label}: p99 latency`,
      unit: "ms",
      better: "lower",
      pick: wirePair(ours, baseline, p99Ms),
    },
    {
      caseNumber,
      measure: `${label}: server CPU per call`,
      unit: "ms",
      better: "lower",
      pick: wirePair(ours, baseline, cpuMsPerCall),
    },
  ];
  return rows;
}

/** Every ratio the report shows, in case order. */
export const ratioDefinitions: readonly RatioDefinition[] = [
  ...overhead(1, "toolruntime-grpc", "grpc-echo", "ExecuteTool (gRPC port) ÷ bare grpc-js echo", {
    op: ">=",
    value: 0.8,
  }),
  ...overhead(2, "toolruntime-connect-proto", "connect-echo-proto", "ExecuteTool (Connect binary) ÷ bare connect-node"),
  ...overhead(2, "toolruntime-connect-json", "connect-echo-json", "ExecuteTool (Connect JSON) ÷ bare connect-node"),
  {
    caseNumber: 3,
    measure: "RunTool runs/s ÷ ExecuteTool calls/s",
    unit: "calls/s",
    better: "higher",
    pick: wirePair("toolruntime-runtool", "toolruntime-grpc", callsPerSecond),
  },
  {
    caseNumber: 3,
    measure: "RunTool events/s ÷ ExecuteTool calls/s",
    unit: "msgs/s",
    better: "higher",
    pick: wirePair(
      "toolruntime-runtool",
      "toolruntime-grpc",
      (m) => m.callsPerSecond * m.messagesPerCall,
      callsPerSecond,
    ),
  },
  {
    caseNumber: 3,
    measure: "RunTool server CPU per run ÷ per ExecuteTool call",
    unit: "ms",
    better: "lower",
    pick: wirePair("toolruntime-runtool", "toolruntime-grpc", cpuMsPerCall),
  },
  {
    caseNumber: 4,
    measure: "toolruntime ExecuteTool calls/s (gRPC) ÷ MCP SDK tools/call calls/s",
    unit: "calls/s",
    better: "higher",
    target: { op: ">=", value: 8 },
    pick: wirePair("toolruntime-grpc", "mcp-noop", callsPerSecond),
  },
  {
    caseNumber: 4,
    measure: "server CPU per call: toolruntime ÷ MCP SDK",
    unit: "ms",
    better: "lower",
    pick: wirePair("toolruntime-grpc", "mcp-noop", cpuMsPerCall),
  },
  {
    caseNumber: 4,
    measure: "tools/call through /mcp ÷ ExecuteTool (gRPC port): calls/s",
    unit: "calls/s",
    better: "higher",
    pick: wirePair("toolruntime-mcp", "toolruntime-grpc", callsPerSecond),
  },
  {
    caseNumber: 4,
    measure: "tools/call through /mcp ÷ ExecuteTool (gRPC port): server CPU per call",
    unit: "ms",
    better: "lower",
    pick: wirePair("toolruntime-mcp", "toolruntime-grpc", cpuMsPerCall),
  },
  ...overhead(4, "toolruntime-mcp", "mcp-noop", "tools/call through /mcp ÷ bare MCP SDK server (same no-op tool)"),
];
