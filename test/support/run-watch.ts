import type { Client } from "@connectrpc/connect";
import type { ExecutionService } from "../../gen/toolruntime/v1/execution_pb.js";
import type { RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";

/** Anything with a client of the ExecutionService (one replica's clients). */
export interface ExecutionClients {
  readonly executions: Client<typeof ExecutionService>;
}

/**
 * Watches a run through one replica from `afterSequence` until `stop` accepts an event (the
 * completed event by default), and resolves with every event seen. Ends on the stream's end too.
 */
export async function watchUntil(
  clients: ExecutionClients,
  executionId: string,
  stop: (event: RunEvent) => boolean = (event) => event.event.case === "completed",
  afterSequence = 0n,
): Promise<RunEvent[]> {
  const seen: RunEvent[] = [];
  const abort = new AbortController();
  try {
    for await (const message of clients.executions.watchExecution(
      { executionId, afterSequence },
      { signal: abort.signal },
    )) {
      if (!message.event) continue;
      seen.push(message.event);
      if (stop(message.event)) break;
    }
  } finally {
    abort.abort();
  }
  return seen;
}

/** The kinds of `events`, in order. */
export const kinds = (events: RunEvent[]) => events.map((event) => event.event.case);

/** The result of the completed event that ends `events`, if it does. */
export const completedResult = (events: RunEvent[]) => {
  const last = events.at(-1);
  return last?.event.case === "completed" ? last.event.value.result : undefined;
};

/** The attempt numbers of the EXECUTION_STARTED events among `events`, in order. */
export const startedAttempts = (events: RunEvent[]) =>
  events.flatMap((event) => (event.event.case === "executionStarted" ? [event.event.value.attempt] : []));
