import { setMaxListeners } from "node:events";
import { performance } from "node:perf_hooks";
import { setImmediate as nextTurn } from "node:timers/promises";
import { watchRegistry } from "../../src/registry/watch-registry.js";
import type { ToolRegistry } from "../../src/registry/tool-registry.js";
import { median } from "../lib/stats.js";
import { toolSpecFor } from "./tool-specs.js";

/** Time for one registry change to reach every watcher, against a bare fan-out. */
export interface FanoutResult {
  readonly watchers: number;
  /** Median over the trials, from the registration to the last watcher receiving it, in ms. */
  readonly allReceivedMs: number;
  /** Baseline: the same number of awaiting consumers, each woken by a plain callback, in ms. */
  readonly bareMs: number;
  readonly trials: number;
}

async function bareFanout(consumers: number): Promise<number> {
  const wakers: ((value: number) => void)[] = [];
  const received = Array.from({ length: consumers }, () => new Promise<number>((resolve) => wakers.push(resolve)));
  const started = performance.now();
  for (const wake of wakers) wake(started);
  await Promise.all(received);
  return performance.now() - started;
}

/**
 * Starts `watchers` watchRegistry streams that follow `registry` live (no snapshot), then `trials`
 * times registers one new tool and times until every watcher has received its ADDED item,
 * alternating with a bare fan-out to as many consumers.
 */
export async function measureWatchFanout(
  registry: ToolRegistry,
  watchers: number,
  trials: number,
): Promise<FanoutResult> {
  const stop = new AbortController();
  setMaxListeners(watchers + 10, stop.signal); // every watcher listens to the one signal
  const iterators = Array.from({ length: watchers }, () =>
    watchRegistry(registry, { fromVersion: registry.version, signal: stop.signal })[Symbol.asyncIterator](),
  );
  const subscribedBefore = registry.subscriberCount;
  const times: number[] = [];
  const bareTimes: number[] = [];
  try {
    for (let trial = 0; trial < trials; trial++) {
      bareTimes.push(await bareFanout(watchers));
      const pending = iterators.map((iterator) => iterator.next());
      await nextTurn(); // let every watcher reach its wait (and subscribe, the first time)
      if (registry.subscriberCount - subscribedBefore !== watchers) {
        throw new Error(`${registry.subscriberCount - subscribedBefore} of ${watchers} watchers subscribed`);
      }
      const spec = toolSpecFor(10_000_000 + trial);
      const started = performance.now();
      registry.register({ spec });
      const items = await Promise.all(pending);
      times.push(performance.now() - started);
      const wrong = items.find((item) => item.done || item.value.spec?.name !== spec.name);
      if (wrong) {
        const got = wrong.done ? "the end of its stream" : `${wrong.value.kind} ${wrong.value.spec?.name ?? ""}`;
        throw new Error(`a watcher received ${got} instead of ADDED ${spec.name}`);
      }
    }
  } finally {
    stop.abort();
    await Promise.all(iterators.map((iterator) => iterator.return(undefined)));
  }
  return { watchers, allReceivedMs: median(times), bareMs: median(bareTimes), trials };
}
