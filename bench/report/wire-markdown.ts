import type { WindowCheck } from "../cases/server-counters.js";
import type { MachineLoad } from "../lib/machine-load.js";
import type { AdmissionResult } from "../wire/admission-burst.js";
import type { RegistrationResult } from "../wire/registration.js";
import { formatFigure } from "./format-number.js";
import { table } from "./markdown-table.js";
import type { RoundResults, WindowRecord } from "./round-results.js";

const mb = (bytes: number): string => `${formatFigure(bytes / 1e6)} MB`;

/** "verified", or "**failed**: why". */
export function verdictOf(check: WindowCheck): string {
  return check.verified ? "verified" : `**failed**: ${check.problems.join("; ")}`;
}

/** The server's counts of a window, e.g. "OK 2,512 · runs success 2,512"; "–" for a baseline. */
export function serverCountsOf(check: WindowCheck): string {
  if (!check.server) return "– (baseline: h2load's counts only)";
  const describe = (counts: Readonly<Record<string, number>>): string =>
    Object.entries(counts)
      .map(([key, value]) => `${key} ${formatFigure(value)}`)
      .join(", ");
  const parts = [];
  if (Object.keys(check.server.rpcByCode).length > 0) parts.push(`calls: ${describe(check.server.rpcByCode)}`);
  if (Object.keys(check.server.runsByOutcome).length > 0) parts.push(`runs: ${describe(check.server.runsByOutcome)}`);
  return parts.join(" · ") || "nothing counted";
}

/** The load cells of a window: machine busy %, other processes' cores, 1-minute load average. */
export function loadCells(load: MachineLoad): string[] {
  return [`${load.busyPct.toFixed(0)}%`, load.otherCores.toFixed(2), load.loadAvg1m.toFixed(2)];
}

/** The memory rows of case 7, for the round that filled the registry to 100,000 tools. */
function memoryRows(result: RegistrationResult): string[][] {
  const memory = result.memory;
  if (!memory) return [];
  return [
    [
      "filled to 100,000 tools: registrations · per second (this client alone)",
      `${formatFigure(memory.filled)} · ${formatFigure(memory.fillPerSecond)}`,
    ],
    [
      "server RSS fresh · just after the last registration · peak",
      `${mb(result.rssFreshBytes)} · ${mb(memory.rssBytes)} · ${mb(memory.peakRssBytes)}`,
    ],
    [
      "RSS at 100,000 tools, settled · after · per tool over the fresh server",
      `${mb(memory.rssAt100kBytes)} · ${formatFigure(memory.settleMs / 1000)} s${memory.settled ? "" : " (had not fallen by a tenth)"} · ${formatFigure(memory.rssBytesPerTool)} B`,
    ],
    [
      "V8 heap used fresh · settled (garbage included)",
      `${mb(memory.heapUsedFreshBytes)} · ${mb(memory.heapUsedBytes)}`,
    ],
  ];
}

function registrationSection(result: RegistrationResult, round: number): string {
  return table(
    ["round", "measure", "value"],
    [
      [
        "tools in the registry at the end (registered by the case)",
        `${formatFigure(result.tools)} (${formatFigure(result.registered)})`,
      ],
      ["request size (RegisterToolRequest)", `${formatFigure(result.requestBytes)} B`],
      [
        `first window, a fresh server's tools up to ${formatFigure(result.first.tools)}: registrations · per second · bare server's · server CPU each`,
        `${formatFigure(result.first.registrations)} · ${formatFigure(result.first.registrationsPerSecond)} · ${formatFigure(result.first.baselinePerSecond)} · ${formatFigure(result.first.serverCpuMsPerRegistration)} ms`,
      ],
      [
        `second window, up to ${formatFigure(result.tools)} tools: registrations/s · bare grpc-js server, same bytes`,
        `${formatFigure(result.registrationsPerSecond)} · ${formatFigure(result.baselinePerSecond)}`,
      ],
      [
        "server CPU per registration · bare server's",
        `${formatFigure(result.serverCpuMsPerRegistration)} ms · ${formatFigure(result.baselineCpuMsPerRegistration)} ms`,
      ],
      [
        "load generator (node:http2 gRPC client, this process) cores · CPU per call",
        `${result.loadGeneratorCores.toFixed(2)} · ${formatFigure(result.loadGeneratorCpuMsPerCall * 1000)} µs`,
      ],
      ...memoryRows(result),
      ["server counts", serverCountsOf(result.check)],
      ["success", verdictOf(result.check)],
    ].map((cells) => [String(round), ...cells]),
  );
}

function admissionRow(result: AdmissionResult, round: number): string[] {
  const first = result.first;
  return [
    String(round),
    `${formatFigure(first.admissionsPerSecond)} → ${formatFigure(result.admissionsPerSecond)}`,
    `${formatFigure(first.baselinePerSecond)} → ${formatFigure(result.baselinePerSecond)}`,
    `${formatFigure(first.serverCpuMsPerAdmission)} → ${formatFigure(result.serverCpuMsPerAdmission)}`,
    `${formatFigure(first.eventLoopP99Ms)} / ${formatFigure(first.eventLoopMaxMs)} → ${formatFigure(result.eventLoopP99Ms)} / ${formatFigure(result.eventLoopMaxMs)}`,
    `${formatFigure(first.getToolIdleP99Ms)} → ${formatFigure(first.getToolBurstP99Ms)}; ${formatFigure(result.getToolIdleP99Ms)} → ${formatFigure(result.getToolBurstP99Ms)} (${result.getToolBurstCalls})`,
    `${formatFigure(first.drainMs)} → ${formatFigure(result.drainMs)} / ${formatFigure(result.idealDrainMs)}`,
    result.loadGeneratorCores.toFixed(2),
    `${formatFigure(result.listedSucceeded)} of ${formatFigure(result.runs)}`,
    serverCountsOf(result.check),
    verdictOf(result.check),
  ];
}

/** The sections of the over-the-wire cases (7, 8), when they ran. */
export function wireSections(rounds: readonly RoundResults[]): string[] {
  const parts: string[] = [];
  const registrations = rounds.flatMap((round) =>
    round.registration ? [{ result: round.registration, round: round.round }] : [],
  );
  const firstRegistration = registrations[0]?.result;
  if (firstRegistration) {
    parts.push(
      `## Case 7: registrations over gRPC (node:http2 gRPC client, ${firstRegistration.connections} connections × ${firstRegistration.inFlightPerConnection} in flight)`,
      "",
      "Chunks of 500 distinct tools go alternately to the toolruntime and to a bare grpc-js server answering the same bytes with a real RegisterToolResponse, on fresh servers every round; the first chunk warms up and is not timed. The chunks are timed in two windows, reported apart: until the registry holds 10,000 tools (a fresh server, whose code V8 is still compiling on the other core), then up to the case's size (a server under way). In the middle round the registry is then filled to 100,000 tools from this client alone and the server's memory measured: RSS from /proc (no forced collection: what an operator sees).",
      "",
    );
    for (const { result, round } of registrations) parts.push(registrationSection(result, round), "");
  }
  const admissions = rounds.flatMap((round) => (round.admission ? [admissionRow(round.admission, round.round)] : []));
  if (admissions.length > 0) {
    parts.push(
      "## Case 8: admission bursts over gRPC (h2load, 8 connections × 64 in flight, the same request bytes every call)",
      "",
      "Two bursts per server: the first on a fresh server (after 1,000 no-op runs; the bare server after 1,000 calls of the burst's bytes), the second once every run of the first ended (the bare server's 2 s after its first); both are held against the target (during a fresh server's first burst, V8 compiles the server's code on the other core). Event-loop delay from the server's own /metrics (prom-client's gauges, reset by the scrape just before each burst, read just after it). GetTool is timed one call at a time by a separate process, in the second before each burst and during it. Every run of both bursts must end SUCCEEDED: the server's counters and ListExecutions (each burst's runs, listed after it) are both checked.",
      "",
      table(
        [
          "round",
          "admissions/s, first → second burst",
          "bare grpc-js, same bytes",
          "server CPU ms per admission",
          "event-loop p99 / max ms",
          "GetTool p99 ms before → during, first; second (calls)",
          "all ended ms / ideal",
          "h2load cores (second)",
          "listed SUCCEEDED (second; the first's checked too)",
          "server counts (both bursts)",
          "success",
        ],
        admissions,
      ),
      "",
    );
  }
  return parts;
}

/** Every measured window in the order run, with its verification and the machine's load. */
export function windowsSection(windows: readonly WindowRecord[]): string[] {
  if (windows.length === 0) return [];
  return [
    "## Every window: success and machine load",
    "",
    "Machine busy % is all CPUs' busy share during the window (/proc/stat). Other cores are the busy cores not accounted for by the processes the bench measures in that window (the server under test, h2load or the bench's gRPC client, the GetTool prober, the registration baseline): other engineers' work, the kernel, the bench's own bookkeeping. Load is /proc/loadavg's 1-minute figure at the window's end.",
    "",
    table(
      ["round", "window", "figure", "server counts", "success", "machine busy", "other cores", "load 1m"],
      windows.map((w) => [
        String(w.round),
        w.name,
        w.figure,
        serverCountsOf(w.check),
        verdictOf(w.check),
        ...loadCells(w.machine),
      ]),
    ),
    "",
  ];
}
