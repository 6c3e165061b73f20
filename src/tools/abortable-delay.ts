import { performance } from "node:perf_hooks";

/**
 * Resolves after `ms` milliseconds, or rejects with the signal's reason as soon as it aborts. Node
 * may fire a timer up to a millisecond before `performance.now()` says its delay is over (libuv
 * counts from the time it cached at the start of the loop's turn): a timer that fires early is
 * armed again for the rest, so that a caller measuring the wait never sees less than `ms`.
 */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const dueAt = performance.now() + ms;
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const fire = (): void => {
      const left = dueAt - performance.now();
      if (left > 0) {
        timer = setTimeout(fire, Math.ceil(left));
        return;
      }
      signal.removeEventListener("abort", onAbort);
      resolve();
    };
    let timer = setTimeout(fire, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
