import type { Execution, ExecutionState } from "../../gen/toolruntime/v1/execution_pb.js";
import type { Clients } from "./session.js";

/** What {@link followRuns} reports: the runs it knows, whenever one changed. */
export interface RunsFeedOptions {
  readonly clients: Clients;
  readonly toolName: string;
  /** Listed from the start (ListExecutions); changes of other states are streamed too. */
  readonly state: ExecutionState;
  readonly signal: AbortSignal;
  /** Called with each run's newest record, from the listing and from the stream. */
  readonly onRecord: (execution: Execution) => void;
  /** Called with the listing's next page token once the first page is in ("" when none). */
  readonly onListed: (nextPageToken: string) => void;
  /** Called with each message: the stream is alive. */
  readonly live?: () => void;
}

/**
 * Follows runs live without polling: WatchExecutions first, then, once it says it follows every run
 * (`caught_up`), the first page of ListExecutions, so that no change falls between the two. A
 * record older than one already seen (smaller `last_sequence`) is the caller's to ignore; see
 * {@link isNewer}.
 */
export async function followRuns(options: RunsFeedOptions): Promise<void> {
  const { clients, toolName, signal } = options;
  for await (const message of clients.executions.watchExecutions({ toolName }, { signal })) {
    options.live?.();
    if (message.execution) options.onRecord(message.execution);
    else if (message.caughtUp) {
      const page = await clients.executions.listExecutions({ toolName, state: options.state }, { signal });
      for (const execution of page.executions) options.onRecord(execution);
      options.onListed(page.nextPageToken);
    }
  }
}

/** Whether `next` is at least as recent as `known` (records of one run are ordered by last_sequence). */
export function isNewer(next: Execution, known: Execution | undefined): boolean {
  return !known || next.lastSequence >= known.lastSequence;
}
