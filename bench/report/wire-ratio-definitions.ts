import type { BenchOptions } from "../options.js";
import { thousands } from "./inproc-ratio-definitions.js";
import type { RatioDefinition } from "./ratio-definitions.js";
import { firstWindowTools } from "../wire/registration.js";

const mb = (bytes: number): number => bytes / 1e6;
/** The event-loop delay target of the admission burst, in milliseconds: the baseline of its row. */
const eventLoopTargetMs = 50;

/** The ratios of the over-the-wire cases (7 registrations, 8 admission burst) for these options. */
export function wireRatioDefinitions(options: BenchOptions): RatioDefinition[] {
  const tools = thousands(options.wireRegistryTools);
  const firstTools = thousands(Math.min(firstWindowTools, Math.floor(options.wireRegistryTools / 2)));
  return [
    {
      caseNumber: 7,
      measure: `RegisterTool over gRPC, distinct ~1 KiB schemas, 64 in flight, a fresh server's first ${firstTools} tools (after a chunk of 500): registrations/s ÷ a bare grpc-js server answering the same bytes`,
      unit: "regs/s",
      better: "higher",
      target: { op: ">=", value: 5000, on: "ours" },
      headline: `registrations/s over gRPC, distinct 1 KiB schemas, a fresh server's first ${firstTools} tools (baseline: bare grpc-js server taking the same RegisterTool bytes)`,
      pick: (r) =>
        r.registration && {
          ours: r.registration.first.registrationsPerSecond,
          baseline: r.registration.first.baselinePerSecond,
          verified: r.registration.check.verified,
        },
    },
    {
      caseNumber: 7,
      measure: `RegisterTool over gRPC, the same, from ${firstTools} to ${tools} tools (a server under way): registrations/s ÷ a bare grpc-js server answering the same bytes`,
      unit: "regs/s",
      better: "higher",
      target: { op: ">=", value: 5000, on: "ours" },
      headline: `registrations/s over gRPC, distinct 1 KiB schemas, from ${firstTools} to ${tools} tools (baseline: bare grpc-js server taking the same RegisterTool bytes)`,
      pick: (r) =>
        r.registration && {
          ours: r.registration.registrationsPerSecond,
          baseline: r.registration.baselinePerSecond,
          verified: r.registration.check.verified,
        },
    },
    {
      caseNumber: 7,
      measure: `RegisterTool: server CPU per registration ÷ the bare grpc-js server's, from ${firstTools} to ${tools} tools`,
      unit: "ms",
      better: "lower",
      pick: (r) =>
        r.registration && {
          ours: r.registration.serverCpuMsPerRegistration,
          baseline: r.registration.baselineCpuMsPerRegistration,
          verified: r.registration.check.verified,
        },
    },
    {
      caseNumber: 7,
      measure: "server RSS holding 100,000 registered tools, settled after the registrations ÷ the fresh server's RSS",
      unit: "MB",
      better: "lower",
      target: { op: "<=", value: 300, on: "ours" },
      headline: "RSS at 100,000 registered tools, settled (baseline: the fresh server)",
      pick: (r) =>
        r.registration?.memory && {
          ours: mb(r.registration.memory.rssAt100kBytes),
          baseline: mb(r.registration.rssFreshBytes),
          verified: r.registration.check.verified,
        },
    },
    {
      caseNumber: 8,
      measure: `a burst of ${thousands(options.burstRuns)} StartExecution of builtin.sleep over gRPC, 512 in flight, the first on a fresh server (after 1,000 no-op runs): admissions/s ÷ a bare grpc-js server answering the same bytes (its first burst)`,
      unit: "runs/s",
      better: "higher",
      target: { op: ">=", value: 10_000, on: "ours" },
      headline: `${thousands(options.burstRuns)}-run burst (StartExecution over gRPC), a fresh server's first: admissions/s (baseline: bare grpc-js server taking the same bytes)`,
      pick: (r) =>
        r.admission && {
          ours: r.admission.first.admissionsPerSecond,
          baseline: r.admission.first.baselinePerSecond,
          verified: r.admission.check.verified,
        },
    },
    {
      caseNumber: 8,
      measure: `the same burst again, once every run of the first ended (a server under way): admissions/s ÷ the bare grpc-js server's second burst`,
      unit: "runs/s",
      better: "higher",
      target: { op: ">=", value: 10_000, on: "ours" },
      headline: `${thousands(options.burstRuns)}-run burst (StartExecution over gRPC), the server's second: admissions/s (baseline: bare grpc-js server taking the same bytes)`,
      pick: (r) =>
        r.admission && {
          ours: r.admission.admissionsPerSecond,
          baseline: r.admission.baselinePerSecond,
          verified: r.admission.check.verified,
        },
    },
    {
      caseNumber: 8,
      measure: `the bursts: server event-loop delay p99 (its /metrics), the higher of the two, ÷ the ${eventLoopTargetMs} ms target`,
      unit: "ms",
      better: "lower",
      target: { op: "<", value: eventLoopTargetMs, on: "ours" },
      headline: `${thousands(options.burstRuns)}-run bursts: server event-loop delay p99, the higher of the two (baseline: the target)`,
      pick: (r) =>
        r.admission && {
          ours: Math.max(r.admission.eventLoopP99Ms, r.admission.first.eventLoopP99Ms),
          baseline: eventLoopTargetMs,
          verified: r.admission.check.verified,
        },
    },
    {
      caseNumber: 8,
      measure: "the second burst: GetTool p99 from another process ÷ the same in the second before it",
      unit: "ms",
      better: "lower",
      pick: (r) =>
        r.admission && {
          ours: r.admission.getToolBurstP99Ms,
          baseline: r.admission.getToolIdleP99Ms,
          verified: r.admission.check.verified,
        },
    },
    {
      caseNumber: 8,
      measure: `the second burst: time until every run ended ÷ runs × ${options.burstSleepMs} ms ÷ the server's max concurrent runs`,
      unit: "ms",
      better: "lower",
      pick: (r) =>
        r.admission && {
          ours: r.admission.drainMs,
          baseline: r.admission.idealDrainMs,
          verified: r.admission.check.verified,
        },
    },
  ];
}
