import { Code, ConnectError } from "@connectrpc/connect";
import { describeError } from "./describe-error.js";

/** Failures that following again would meet the same way: the person must act (token, URL, filter). */
const final = new Set([
  Code.Unauthenticated,
  Code.PermissionDenied,
  Code.NotFound,
  Code.InvalidArgument,
  Code.FailedPrecondition,
  Code.OutOfRange,
]);

/** Longest wait between two attempts, in milliseconds. */
const maxDelayMs = 30_000;

/** What {@link keepFollowing} reports to its view. */
export interface FollowReporting {
  readonly signal: AbortSignal;
  /** Shows a problem ("" clears it). */
  readonly showError: (message: string) => void;
}

/**
 * Runs `follow` (a view's server stream) and follows again when the stream breaks or ends for a
 * reason that may pass (the server restarted, the network dropped, a proxy timed out), after 1 s,
 * then twice as long each time up to 30 s; `follow` calls its `live` argument once messages flow
 * again, which clears the error and the backoff. A final failure (UNAUTHENTICATED,
 * PERMISSION_DENIED, NOT_FOUND…) is shown and not retried; `done` tells that `follow` ended as it
 * should (a run's stream after its last event) and stops.
 */
export function keepFollowing(
  follow: (live: () => void) => Promise<"done" | void>,
  { signal, showError }: FollowReporting,
): void {
  let failures = 0;
  const live = (): void => {
    if (failures === 0) return;
    failures = 0;
    showError("");
  };
  const attempt = async (): Promise<void> => {
    for (;;) {
      let problem: string;
      try {
        if ((await follow(live)) === "done") return;
        problem = "the live stream ended";
      } catch (error) {
        if (signal.aborted) return;
        const connectError = ConnectError.from(error);
        if (connectError.code === Code.Canceled && signal.aborted) return;
        if (final.has(connectError.code)) {
          showError(describeError(connectError));
          return;
        }
        problem = describeError(connectError);
      }
      if (signal.aborted) return;
      const delayMs = Math.min(maxDelayMs, 1000 * 2 ** failures);
      failures += 1;
      showError(`Connection lost (${problem}); following again in ${Math.round(delayMs / 1000)} s…`);
      const resumed = await new Promise<boolean>((resolve) => {
        const onAbort = (): void => {
          clearTimeout(timer);
          resolve(false);
        };
        const timer = setTimeout(() => {
          signal.removeEventListener("abort", onAbort);
          resolve(true);
        }, delayMs);
        signal.addEventListener("abort", onAbort, { once: true });
      });
      if (!resumed) return;
    }
  };
  void attempt();
}
