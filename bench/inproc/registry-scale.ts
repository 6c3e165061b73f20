import { performance } from "node:perf_hooks";
import type { ToolSpec } from "../../gen/toolruntime/v1/tool_pb.js";
import { encodePageToken } from "../../src/registry/page-token.js";
import { ToolRegistry } from "../../src/registry/tool-registry.js";
import type { RegisteredTool } from "../../src/registry/tool-definition.js";
import { percentileOfSorted } from "../lib/stats.js";
import { measureWatchFanout, type FanoutResult } from "./watch-fanout.js";
import { reachableHeapBytes, requireGc } from "./measure-heap.js";
import { shuffledIndices, toolSpecFor } from "./tool-specs.js";

/** ListTools page latency with a given number of tools registered, and of the 1k-tool baseline. */
export interface ListLatency {
  readonly tools: number;
  readonly p50Us: number;
  readonly p99Us: number;
  /** The same page size and kind of token on a separate registry of 1,000 tools, timed alternately. */
  readonly baselineP50Us: number;
  readonly baselineP99Us: number;
}

/** What the registry-scale case measured (printed as JSON, the last line of stdout). */
export interface RegistryScaleResult {
  readonly tools: number;
  readonly registrationsPerSecond: number;
  /** Baseline: the same specs put in a plain Map, timed in chunks interleaved with the registry's. */
  readonly mapInsertsPerSecond: number;
  readonly heapBytesPerTool: number;
  /** Baseline: heap of the plain Map of the same specs, per tool. */
  readonly mapHeapBytesPerTool: number;
  readonly list: readonly ListLatency[];
  readonly fanout: FanoutResult;
}

const pageSize = 100;
const chunkSize = 1000;
const baselineTools = 1000;

/** A ListTools query for a page of 100 from the middle of the registry, with a real page token. */
function middleQuery(registry: ToolRegistry): { pageSize: number; pageToken: string } {
  const { tools } = registry.snapshot();
  const middle = tools[tools.length >> 1] as RegisteredTool;
  return { pageSize, pageToken: encodePageToken(middle.spec.name) };
}

function timePages(
  registry: ToolRegistry,
  query: { pageSize: number; pageToken: string },
  times: number[],
  count: number,
) {
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const page = registry.list(query);
    times.push(performance.now() - started);
    if (page.tools.length !== pageSize)
      throw new Error(`ListTools returned ${page.tools.length} tools, not ${pageSize}`);
  }
}

function quantilesUs(times: number[]): { p50: number; p99: number } {
  const sorted = Float64Array.from(times).sort();
  return { p50: percentileOfSorted(sorted, 50) * 1000, p99: percentileOfSorted(sorted, 99) * 1000 };
}

/**
 * ListTools page latency on `registry`, timed in alternating blocks with the same query on the
 * 1k-tool `baseline` registry, so that both see the same machine and the same heap.
 */
function measureListLatency(registry: ToolRegistry, baseline: ToolRegistry, samples: number): ListLatency {
  const query = middleQuery(registry);
  const baselineQuery = middleQuery(baseline);
  const times: number[] = [];
  const baselineTimes: number[] = [];
  timePages(registry, query, [], samples); // warm-up
  timePages(baseline, baselineQuery, [], samples);
  const block = 50;
  for (let done = 0; done < samples; done += block) {
    timePages(registry, query, times, block);
    timePages(baseline, baselineQuery, baselineTimes, block);
  }
  const ours = quantilesUs(times);
  const base = quantilesUs(baselineTimes);
  return { tools: registry.size, p50Us: ours.p50, p99Us: ours.p99, baselineP50Us: base.p50, baselineP99Us: base.p99 };
}

/**
 * Registers `tools` realistic tools (a ~1 KiB input schema each, all different) in shuffled order,
 * interleaving chunks with the same number of inserts into a plain Map (the baseline), measures
 * heap per tool for both, ListTools latency at each checkpoint, and watch fan-out at the end.
 */
export async function measureRegistryScale(
  tools: number,
  checkpoints: readonly number[],
  watchers: number,
): Promise<RegistryScaleResult> {
  requireGc();
  const registry = new ToolRegistry("bench", { maxTools: tools + 1000 });
  const map = new Map<string, ToolSpec>();
  const order = shuffledIndices(tools);
  const list: ListLatency[] = [];
  // The ListTools baseline: a registry of 1,000 other tools, built before the timed registrations.
  const baseline = new ToolRegistry("baseline");
  for (let index = 0; index < baselineTools; index++) baseline.register({ spec: toolSpecFor(tools + index) });
  const heapBefore = reachableHeapBytes();
  let registryMs = 0;
  let mapMs = 0;
  for (let start = 0; start < tools; start += chunkSize) {
    const chunk = order.slice(start, start + chunkSize);
    const forRegistry = chunk.map(toolSpecFor);
    const forMap = chunk.map(toolSpecFor);
    let started = performance.now();
    for (const spec of forRegistry) registry.register({ spec });
    registryMs += performance.now() - started;
    started = performance.now();
    for (const spec of forMap) map.set(spec.name, spec);
    mapMs += performance.now() - started;
    for (const checkpoint of checkpoints) {
      if (registry.size >= checkpoint && registry.size - chunk.length < checkpoint) {
        // The server packs specs once registrations pause (see BackgroundPacking): measure that state.
        registry.packPending();
        list.push(measureListLatency(registry, baseline, 2000));
      }
    }
  }
  registry.packPending();
  const heapBoth = reachableHeapBytes();
  map.clear();
  const heapRegistry = reachableHeapBytes();
  const fanout = await measureWatchFanout(registry, watchers, 7);
  return {
    tools,
    registrationsPerSecond: tools / (registryMs / 1000),
    mapInsertsPerSecond: tools / (mapMs / 1000),
    heapBytesPerTool: (heapRegistry - heapBefore) / tools,
    mapHeapBytesPerTool: (heapBoth - heapRegistry) / tools,
    list,
    fanout,
  };
}
