import type { Execution } from "../../gen/toolruntime/v1/execution_pb.js";
import type { ExecutionManager } from "../executions/execution-manager.js";
import type { ExecutionRecord } from "../executions/execution-record.js";

/** One message of {@link followExecutions}: a record, the caught-up marker, or a heartbeat. */
export type ExecutionsFeedItem =
  | { readonly kind: "execution"; readonly execution: Execution }
  | { readonly kind: "caughtUp" }
  | { readonly kind: "heartbeat" };

/** What {@link followExecutions} follows, and for how long. */
export interface FollowExecutionsOptions {
  /** Only runs this predicate accepts: the tool filter and what the caller may see. */
  readonly include: (record: ExecutionRecord) => boolean;
  /** Ends the feed (the call went away). */
  readonly signal: AbortSignal;
  /** A heartbeat after this long without a message, in milliseconds. */
  readonly heartbeatIntervalMs: number;
}

/** What a watcher last sent of a run: a new record is sent only when one of these changed. */
function fingerprint(record: ExecutionRecord): string {
  return `${record.state}/${record.attempts}/${record.isLive}/${record.decision ? 1 : 0}`;
}

/**
 * Follows the runs `include` accepts: yields `caughtUp` once every live run and every new one is
 * followed, then a run's record whenever it starts, changes state, starts an attempt, gets an
 * approval decision or ends, and a heartbeat while nothing happens. Runs that finished before the
 * feed began are not repeated (ListExecutions has them). Each live run is followed through its
 * record's change notifications until it ends; nothing is left behind when `signal` aborts but the
 * run's next notification, which then finds the feed gone.
 */
export async function* followExecutions(
  executions: ExecutionManager,
  options: FollowExecutionsOptions,
): AsyncGenerator<ExecutionsFeedItem> {
  const { signal } = options;
  const pending: ExecutionRecord[] = [];
  let wake: (() => void) | undefined;
  const notify = (record: ExecutionRecord): void => {
    pending.push(record);
    wake?.();
  };
  const follow = async (record: ExecutionRecord): Promise<void> => {
    let sent = fingerprint(record);
    while (record.isLive && !signal.aborted) {
      await record.changed();
      const now = fingerprint(record);
      if (now !== sent && !signal.aborted) {
        sent = now;
        notify(record);
      }
    }
  };
  const start = (record: ExecutionRecord): void => {
    if (!options.include(record)) return;
    void follow(record);
  };
  const stopAdding = executions.store.onAdd((record) => {
    if (!options.include(record)) return;
    notify(record);
    void follow(record);
  });
  const onAbort = (): void => wake?.();
  signal.addEventListener("abort", onAbort);
  try {
    for (const record of executions.store.live()) start(record);
    yield { kind: "caughtUp" };
    while (!signal.aborted) {
      if (pending.length === 0) {
        let timer: NodeJS.Timeout | undefined;
        const woke = await new Promise<boolean>((resolve) => {
          wake = () => resolve(true);
          timer = setTimeout(() => resolve(false), options.heartbeatIntervalMs);
        });
        clearTimeout(timer);
        wake = undefined;
        if (!woke && !signal.aborted) yield { kind: "heartbeat" };
        continue;
      }
      // A run that changed twice before the client read is sent once, as it is now.
      const batch = [...new Set(pending.splice(0))];
      for (const record of batch) yield { kind: "execution", execution: record.toProto() };
    }
  } finally {
    stopAdding();
    signal.removeEventListener("abort", onAbort);
  }
}
