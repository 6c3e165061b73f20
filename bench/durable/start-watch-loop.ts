// StartExecution, then WatchExecution to the run's end, in a closed loop: exactly `inFlight` runs
// between their start and the end their watcher saw, each slot starting its next run once its
// watcher saw the last one complete. What an orchestrator that starts work and follows it does.
// The client is connect-node's gRPC transport (one HTTP/2 connection).
import { performance } from "node:perf_hooks";
import type { JsonObject } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ExecutionService } from "../../gen/toolruntime/v1/execution_pb.js";
import { percentileOfSorted } from "../lib/stats.js";

/** Runs started and watched to their end per second, and start → end seen latencies in ms. */
export interface StartWatchResult {
  readonly runsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** Runs the loop against the gRPC port at `address` for a second of warm-up, then `measureS` seconds. */
export async function startAndWatch(
  address: string,
  tool: { name: string; inputs: JsonObject },
  inFlight: number,
  measureS: number,
): Promise<StartWatchResult> {
  const executions = createClient(ExecutionService, createGrpcTransport({ baseUrl: `http://${address}` }));
  const latencies: number[] = [];
  let measuring = false;
  let stopping = false;
  const runOnce = async (): Promise<void> => {
    const began = performance.now();
    const started = await executions.startExecution({ toolName: tool.name, inputs: tool.inputs });
    const id = started.execution?.executionId ?? "";
    let succeeded = false;
    for await (const message of executions.watchExecution({ executionId: id })) {
      if (message.event?.event.case === "completed") {
        succeeded = message.event.event.value.result?.success ?? false;
        break;
      }
    }
    if (!succeeded) throw new Error(`run ${id} of ${tool.name} did not succeed`);
    if (measuring) latencies.push(performance.now() - began);
  };
  const slots = Array.from({ length: inFlight }, async () => {
    while (!stopping) await runOnce();
  });
  // A failed slot is reported by the Promise.all below, not as an unhandled rejection meanwhile.
  for (const slot of slots) slot.catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  measuring = true;
  const began = performance.now();
  await new Promise((resolve) => setTimeout(resolve, measureS * 1000));
  measuring = false;
  const elapsedS = (performance.now() - began) / 1000;
  const runs = latencies.length;
  stopping = true;
  await Promise.all(slots);
  const sorted = latencies.slice(0, runs).sort((a, b) => a - b);
  return {
    runsPerSecond: runs / elapsedS,
    p50Ms: percentileOfSorted(sorted, 50),
    p99Ms: percentileOfSorted(sorted, 99),
  };
}
