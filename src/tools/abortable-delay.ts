import { performance } from "node:perf_hooks";
import { cancellationOfSignal, type CancellationView } from "../async/cancellation.js";

/**
 * Resolves after `ms` milliseconds, or rejects with the cancellation's reason as soon as it is
 * cancelled. Node may fire a timer up to a millisecond before `performance.now()` says its delay
 * is over (libuv counts from the time it cached at the start of the loop's turn): a timer that
 * fires early is armed again for the rest, so that a caller measuring the wait never sees less
 * than `ms`. A run's own {@link CancellationView} (see `cancellationOf`) spares the AbortSignal
 * an EventTarget costs to make and to listen to.
 */
export function abortableDelay(ms: number, cancel: AbortSignal | CancellationView): Promise<void> {
  // Told apart by shape, not by class: a signal from another realm is no instance of this one's.
  const cancellation = "onAbort" in cancel ? cancel : cancellationOfSignal(cancel);
  // A cancellation's reason is the run's error (see Cancellation.abort's callers): rejected as it is.
  return new Promise((resolve, reject: (reason: Error) => void) => {
    if (cancellation.aborted) {
      reject(cancellation.reason as Error);
      return;
    }
    const dueAt = performance.now() + ms;
    const onAbort = (reason: unknown): void => {
      clearTimeout(timer);
      reject(reason as Error);
    };
    const fire = (): void => {
      const left = dueAt - performance.now();
      if (left > 0) {
        timer = setTimeout(fire, Math.ceil(left));
        return;
      }
      cancellation.offAbort(onAbort);
      resolve();
    };
    let timer = setTimeout(fire, ms);
    cancellation.onAbort(onAbort);
  });
}
