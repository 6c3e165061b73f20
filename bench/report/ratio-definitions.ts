import type { VariantMeasurement } from "../cases/measure-group.js";
import type { VariantId } from "../cases/wire-variants.js";
import type { CaseNumber } from "../options.js";
import type { RoundResults } from "./round-results.js";

/** A target a figure must meet. */
export interface Target {
  readonly op: ">=" | "<=" | "<";
  readonly value: number;
  /** What the target applies to: the ratio (default) or our figure itself, in the row's unit. */
  readonly on?: "ratio" | "ours";
  /** A further value worth reaching, reported beside the target. */
  readonly stretch?: number;
}

/** One round's figures for a row: ours, the baseline's, and whether the windows behind them were verified. */
export interface RoundPair {
  readonly ours: number;
  readonly baseline: number;
  /** False when a window behind either figure had a failed or uncounted call (see server-counters.ts). */
  readonly verified: boolean;
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
  /** Set on the rows of the fast-path issue's table of targets: the row's title there. */
  readonly headline?: string;
  /** Our figure and the baseline's in one round; undefined when the round lacks either. */
  readonly pick: (round: RoundResults) => RoundPair | undefined;
}

type Figure = (measurement: VariantMeasurement) => number;
const callsPerSecond: Figure = (m) => m.callsPerSecond;
const cpuMsPerCall: Figure = (m) => m.cpuMsPerCall;
const p50Ms: Figure = (m) => m.p50Ms;
const p99Ms: Figure = (m) => m.p99Ms;

function wirePair(ours: VariantId, baseline: VariantId, figure: Figure, baselineFigure: Figure = figure) {
  return (round: RoundResults): RoundPair | undefined => {
    const subject = round.wire.find((m) => m.id === ours);
    const base = round.wire.find((m) => m.id === baseline);
    return subject && base
      ? {
          ours: figure(subject),
          baseline: baselineFigure(base),
          verified: subject.check.verified && base.check.verified,
        }
      : undefined;
  };
}

/** Targets and headline titles of an overhead row set's calls/s and CPU rows. */
interface OverheadTargets {
  readonly calls?: { readonly target: Target; readonly headline: string };
  readonly cpu?: { readonly target: Target; readonly headline: string };
}

function overhead(
  caseNumber: CaseNumber,
  ours: VariantId,
  baseline: VariantId,
  label: string,
  targets: OverheadTargets = {},
) {
  const rows: RatioDefinition[] = [
    {
      caseNumber,
      measure: `${label}: calls/s`,
      unit: "calls/s",
      better: "higher",
      ...(targets.calls ?? {}),
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
      ...(targets.cpu ?? {}),
      pick: wirePair(ours, baseline, cpuMsPerCall),
    },
  ];
  return rows;
}

/** Every ratio the report shows, in case order. */
export const ratioDefinitions: readonly RatioDefinition[] = [
  ...overhead(1, "toolruntime-grpc", "grpc-echo", "ExecuteTool (gRPC port) ÷ bare grpc-js echo", {
    calls: {
      target: { op: ">=", value: 0.6, stretch: 0.8 },
      headline: "ExecuteTool no-op, gRPC port ÷ bare grpc-js echo, calls/s",
    },
    cpu: { target: { op: "<=", value: 1.7 }, headline: "server CPU per call ÷ bare grpc-js echo" },
  }),
  ...overhead(
    2,
    "toolruntime-connect-proto",
    "connect-echo-proto",
    "ExecuteTool (Connect binary) ÷ bare connect-node",
    {
      calls: {
        target: { op: ">=", value: 0.8 },
        headline: "Connect+proto ExecuteTool ÷ bare connect-node echo, calls/s",
      },
    },
  ),
  ...overhead(2, "toolruntime-connect-json", "connect-echo-json", "ExecuteTool (Connect JSON) ÷ bare connect-node"),
  {
    caseNumber: 3,
    measure: "RunTool runs/s ÷ ExecuteTool calls/s",
    unit: "calls/s",
    better: "higher",
    target: { op: ">=", value: 0.8 },
    headline: "RunTool runs/s ÷ ExecuteTool calls/s",
    pick: wirePair("toolruntime-runtool", "toolruntime-grpc", callsPerSecond),
  },
  {
    caseNumber: 3,
    measure:
      "what the transport allows: bare grpc-js stream of the same six events ÷ bare grpc-js echo of the same response, calls/s",
    unit: "calls/s",
    better: "higher",
    pick: wirePair("grpc-echo-stream", "grpc-echo", callsPerSecond),
  },
  {
    caseNumber: 3,
    measure: "RunTool runs/s ÷ bare grpc-js stream of the same six events, calls/s",
    unit: "calls/s",
    better: "higher",
    pick: wirePair("toolruntime-runtool", "grpc-echo-stream", callsPerSecond),
  },
  {
    caseNumber: 3,
    measure: "RunTool server CPU per run ÷ bare grpc-js stream of the same six events",
    unit: "ms",
    better: "lower",
    pick: wirePair("toolruntime-runtool", "grpc-echo-stream", cpuMsPerCall),
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
    target: { op: ">=", value: 10 },
    headline: "ExecuteTool, gRPC port ÷ MCP SDK tools/call, calls/s",
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
