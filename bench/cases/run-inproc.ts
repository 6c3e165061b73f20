import { fileURLToPath } from "node:url";
import { runJsonChild } from "../lib/child-process.js";
import type { ConcurrencyResult } from "../inproc/concurrency.js";
import type { RegistryScaleResult } from "../inproc/registry-scale.js";
import type { BenchOptions } from "../options.js";

const script = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url));
// global.gc for the heap figures, and room for 100,000 tools with compiled schemas.
const nodeFlags = ["--expose-gc", "--max-old-space-size=8192"];

/** Runs the registry-scale case (5) in a fresh child process. */
export async function runRegistryScale(options: BenchOptions): Promise<RegistryScaleResult> {
  const args = [
    ...nodeFlags,
    script("../inproc/registry-scale-child.js"),
    "--tools",
    String(options.registryTools),
    "--checkpoints",
    options.listCheckpoints.join(","),
    "--watchers",
    String(options.watchers),
  ];
  return (await runJsonChild("node", args, 1_800_000)) as RegistryScaleResult;
}

/** Runs the concurrency case (6) in a fresh child process. */
export async function runConcurrency(options: BenchOptions): Promise<ConcurrencyResult> {
  const args = [
    ...nodeFlags,
    script("../inproc/concurrency-child.js"),
    "--runs",
    String(options.concurrentRuns),
    "--sleep-ms",
    String(options.sleepMs),
  ];
  return (await runJsonChild("node", args, 300_000)) as ConcurrencyResult;
}
