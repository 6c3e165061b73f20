// Tools for the multi-replica suite, loaded by each server process with --tools. Each reports the
// process that runs it (pid), so a test can tell which replica executed which attempt.
import { defineTool } from "../../src/tools/define-tool.js";

/** Resolves after `ms`, or rejects when `signal` aborts. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(new Error("aborted"));
      },
      { once: true },
    );
  });
}

/**
 * Reports progress every `interval_ms` (default 50) until `ms` passed (default: an hour), then
 * returns the pid of the process that ran it.
 */
async function progressUntil(
  inputs: Record<string, unknown>,
  context: Parameters<Parameters<typeof defineTool>[0]["handler"]>[1],
) {
  const total = Number(inputs["ms"] ?? 3_600_000);
  const interval = Number(inputs["interval_ms"] ?? 50);
  const started = Date.now();
  for (let step = 1; Date.now() - started < total; step++) {
    context.reportProgress({ message: `step ${step} in ${process.pid}` });
    await wait(Math.min(interval, total), context.signal);
  }
  return { pid: process.pid };
}

export const replicaTools = [
  defineTool({
    name: "replica.idempotent",
    description: "Idempotent: reports progress until `ms` passed, then returns the pid that ran it.",
    capabilities: { idempotent: true },
    defaultTimeoutMs: 60_000,
    handler: progressUntil,
  }),
  defineTool({
    name: "replica.writes",
    description: "Writes (not idempotent): reports progress until `ms` passed, then returns the pid.",
    capabilities: { writes: true },
    defaultTimeoutMs: 60_000,
    handler: progressUntil,
  }),
  defineTool({
    name: "replica.stall",
    description:
      "Idempotent: blocks its process's event loop for `ms` (a busy loop, as a CPU-bound handler does), then returns the pid.",
    capabilities: { idempotent: true },
    defaultTimeoutMs: 60_000,
    handler: (inputs) => {
      const until = Date.now() + Number(inputs["ms"] ?? 0);
      while (Date.now() < until) {
        // Deliberately busy: nothing else runs on this event loop meanwhile.
      }
      return { pid: process.pid };
    },
  }),
  defineTool({
    name: "replica.approval",
    description: "Needs a human's approval; returns the pid that ran it.",
    capabilities: { humanApprovalRequired: true, writes: true },
    handler: () => ({ pid: process.pid }),
  }),
];
