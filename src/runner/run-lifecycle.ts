import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { RunEventSchema, type RunEvent } from "../../gen/toolruntime/v1/run_event_pb.js";
import { isToolRuntimeError } from "../errors/tool-runtime-error.js";
import { EventQueue } from "./event-queue.js";
import { failed } from "./run-outcome.js";
import type { RunnerSet } from "./runner-set.js";

/** What {@link runLifecycle} runs. */
export interface LifecycleRequest {
  readonly toolName: string;
  readonly inputs: unknown;
  /** Time the execute stage may take, in milliseconds; 0 for the tool's default. */
  readonly timeoutMs: number;
  /** Time left before the caller's deadline, in milliseconds, if it has one. */
  readonly deadlineMs?: number | undefined;
  /** Aborted when the caller goes away: the run is cancelled. */
  readonly signal: AbortSignal;
  /** Interval between HEARTBEAT events, in milliseconds. Default 15,000. */
  readonly heartbeatIntervalMs?: number | undefined;
  /** Name of the caller's identity, for observers. */
  readonly caller?: string | undefined;
  /** W3C traceparent of the calling RPC. */
  readonly traceParent?: string | undefined;
}

type EventBody = NonNullable<MessageInitShape<typeof RunEventSchema>["event"]>;

/**
 * Runs discover → activate → execute → deactivate for one tool in a private runner and yields one
 * RunEvent per transition, ending with exactly one COMPLETED event. Problems that prevent the run
 * (invalid name or timeout, unknown tool, no handler) throw before the first event. Once events
 * flow, every failure ends up in the COMPLETED result. Returning early (the client went away)
 * cancels the run; nothing is left behind either way.
 */
export async function* runLifecycle(runners: RunnerSet, request: LifecycleRequest): AsyncGenerator<RunEvent> {
  const runner = runners.createPrivate();
  const prepared = runner.prepare(
    request.toolName,
    { timeoutMs: request.timeoutMs, deadlineMs: request.deadlineMs },
    false,
  );
  const toolName = prepared.tool.spec.name;
  const executionId = randomUUID();
  let sequence = 0n;
  const event = (body: EventBody): RunEvent =>
    create(RunEventSchema, { sequence: ++sequence, time: timestampNow(), executionId, event: body });

  yield event({ case: "discovered", value: { spec: prepared.tool.spec } });
  try {
    runner.activate(toolName);
  } catch (error) {
    // The tool was removed between discovery and activation.
    if (!isToolRuntimeError(error)) throw error;
    const result = failed(toolName, error.errorType, error.details, 0, {
      execution_id: executionId,
      tool_name: toolName,
    });
    yield event({ case: "completed", value: { result } });
    return;
  }
  yield event({ case: "activated", value: { toolName } });
  yield event({ case: "executionStarted", value: { timeoutMs: prepared.timeoutMs } });

  const runAbort = new AbortController();
  const cancel = (): void => runAbort.abort(request.signal.reason);
  request.signal.addEventListener("abort", cancel, { once: true });
  const queue = new EventQueue<EventBody>((queued, next) => queued.case === "progress" && next.case === "progress");
  let handlerStartedAt = 0;
  const heartbeat = setInterval(() => {
    const elapsedMs = handlerStartedAt === 0 ? 0 : performance.now() - handlerStartedAt;
    queue.push({ case: "heartbeat", value: { elapsedMs } });
  }, request.heartbeatIntervalMs ?? 15_000);
  try {
    const pending = runner
      .run(prepared, request.inputs, {
        executionId,
        signal: runAbort.signal,
        caller: request.caller,
        traceParent: request.traceParent,
        onStart: () => (handlerStartedAt = performance.now()),
        onProgress: (report) => queue.push({ case: "progress", value: report }),
      })
      .finally(() => queue.end());
    for await (const body of queue) yield event(body);
    const result = await pending;
    yield event({ case: "executionFinished", value: { success: result.success, durationMs: result.durationMs } });
    yield event({ case: "deactivated", value: { wasActive: runner.deactivate(toolName) } });
    yield event({ case: "completed", value: { result } });
  } finally {
    clearInterval(heartbeat);
    request.signal.removeEventListener("abort", cancel);
    // Reached early only when the consumer stopped reading: cancel the run.
    runAbort.abort();
  }
}
