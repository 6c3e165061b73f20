// ExecutionService as a Python grpcio client sees it: each test runs one scenario of
// test/python/executions_client.py against a real server and checks the JSON it prints: runs as
// resources, reattaching after a dropped connection without missing or repeating an event,
// cancellation, idempotency keys, retry policies, capabilities and listing.
import { expect } from "chai";
import {
  expectRpcError,
  pythonScenarios,
  uuidPattern,
  type EventSeen,
  type ResultSeen,
  type RpcErrorSeen,
} from "../support/python-harness.js";

// ---------------------------------------------------------------------------------------------
// What executions_client.py prints beyond what the harness describes (snake_case, as the script writes it).

interface ExecutionSeen {
  readonly execution_id: string;
  readonly tool_name: string;
  readonly runner: string;
  readonly state: string;
  readonly inputs_digest: string;
  readonly caller: string;
  readonly has_finished_at: boolean;
  readonly attempts: number;
  readonly result: ResultSeen | null;
  readonly idempotency_key: string;
  readonly last_sequence: number;
}

/** A StartExecution response as the script reports it. */
interface StartedSeen {
  readonly execution: ExecutionSeen;
  readonly deduplicated: boolean;
}

/** A ListExecutions page, or the error of the call. */
type ListSeen = { readonly executions: ExecutionSeen[]; readonly next_page_token: string } | { error: RpcErrorSeen };

// ---------------------------------------------------------------------------------------------
// Helpers.

const sha256Pattern = /^[0-9a-f]{64}$/;

/** Expects an OK call that returned a record, and returns it. */
function expectExecution(seen: ExecutionSeen | RpcErrorSeen | null | undefined, what: string): ExecutionSeen {
  expect(seen, `${what} should answer OK`).to.be.an("object");
  expect(seen, `${what} should answer OK: ${JSON.stringify(seen)}`).to.have.property("execution_id");
  return seen as ExecutionSeen;
}

/** Expects an OK ListExecutions call and returns its records. */
function expectListed(seen: ListSeen): ExecutionSeen[] {
  expect(seen, `ListExecutions should answer OK: ${JSON.stringify(seen)}`).to.have.property("executions");
  return (seen as { executions: ExecutionSeen[] }).executions;
}

/** Lifecycle kinds of a run of a private runner without approval, queueing or retries. */
function expectLifecycle(events: readonly EventSeen[], middle: string): void {
  const kinds = events.map((event) => event.kind).filter((kind) => kind !== "heartbeat");
  expect(kinds.slice(0, 3), "the lifecycle starts").to.deep.equal(["discovered", "activated", "execution_started"]);
  expect(kinds.slice(-3), "the lifecycle ends").to.deep.equal(["execution_finished", "deactivated", "completed"]);
  for (const kind of kinds.slice(3, -3))
    expect(kind, "between EXECUTION_STARTED and EXECUTION_FINISHED").to.equal(middle);
}

/** Expects events numbered 1, 2, … without gaps or repeats, all of `executionId`. */
function expectNumbered(events: readonly EventSeen[], executionId: string): void {
  expect(events.map((event) => event.sequence)).to.deep.equal(events.map((_event, index) => index + 1));
  expect([...new Set(events.map((event) => event.execution_id))]).to.deep.equal([executionId]);
}

// ---------------------------------------------------------------------------------------------

describe("Python grpcio client of ExecutionService", function () {
  this.timeout(60_000);

  /** Runs one scenario of executions_client.py against the server and returns what it printed. */
  const scenario = pythonScenarios("test/python/executions_client.py");
  /** The countdown run the reattach scenario started, which the listing scenario looks for. */
  let countdownId: string | undefined;

  it("reattaches on a new connection after dropping its watch, and misses and repeats no event", async function () {
    const seen = await scenario<{
      execution_id: string;
      started: ExecutionSeen;
      deduplicated: boolean;
      first_events: EventSeen[];
      first_error: RpcErrorSeen | null;
      first_cancel_code: string | null;
      last_seen: number;
      at_reattach: ExecutionSeen | RpcErrorSeen;
      second_events: EventSeen[];
      second_error: RpcErrorSeen | null;
      final: ExecutionSeen | RpcErrorSeen;
    }>("reattach");
    const id = seen.execution_id;
    expect(id).to.match(uuidPattern);
    countdownId = id;

    // StartExecution returns the record at once, live.
    expect(seen.deduplicated).to.equal(false);
    expect(seen.started).to.deep.include({
      execution_id: id,
      tool_name: "builtin.countdown",
      runner: "(private)",
      state: "EXECUTION_STATE_RUNNING",
      has_finished_at: false,
      result: null,
      idempotency_key: "",
    });
    expect(seen.started.inputs_digest).to.match(sha256Pattern);

    // The first watch read up to its second PROGRESS event, then dropped its connection.
    expect(seen.first_error, "the first watch ends only by the client's cancel").to.equal(null);
    expect(seen.first_cancel_code).to.equal("CANCELLED");
    const firstKinds = seen.first_events.map((event) => event.kind);
    expect(firstKinds.filter((kind) => kind === "progress")).to.have.length(2);
    expect(firstKinds[firstKinds.length - 1]).to.equal("progress");
    expect(firstKinds, "the run was not over when the client dropped").to.not.include("completed");
    expect(seen.last_seen).to.equal(seen.first_events.length);

    // While no one watched, the run went on: it was not cancelled by the dropped connection.
    const atReattach = expectExecution(seen.at_reattach, "GetExecution on reattaching");
    expect(atReattach.state, "the dropped connection did not cancel the run").to.not.equal("EXECUTION_STATE_CANCELLED");
    expect(atReattach.last_sequence, "events were recorded while detached").to.be.greaterThan(seen.last_seen);

    // The second watch starts right after the last event seen and follows the run to its end.
    expect(seen.second_error, "the second watch ends OK").to.equal(null);
    expect(seen.second_events[0]?.sequence, "the reattached watch resumes after last_seen").to.equal(
      seen.last_seen + 1,
    );
    const events = [...seen.first_events, ...seen.second_events];
    expectNumbered(events, id);
    expectLifecycle(events, "progress");
    expect(events.filter((event) => event.kind === "completed")).to.have.length(1);
    expect(events.find((event) => event.kind === "discovered")?.tool_name).to.equal("builtin.countdown");
    expect(events.find((event) => event.kind === "activated")?.tool_name).to.equal("builtin.countdown");
    expect(events.find((event) => event.kind === "execution_started")?.attempt).to.equal(1);
    expect(events.find((event) => event.kind === "execution_finished")).to.deep.include({ success: true, attempt: 1 });
    expect(events.find((event) => event.kind === "deactivated")?.was_active).to.equal(true);
    // Every step's report is kept in the record: 0/6 … 5/6, then 1.
    const fractions = events.filter((event) => event.kind === "progress").map((event) => event.fraction);
    expect(fractions).to.deep.equal([0, 1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6, 1]);

    const completed = events[events.length - 1] as EventSeen;
    expect(completed.kind).to.equal("completed");
    const result = completed.result as ResultSeen;
    expect(result.success).to.equal(true);
    expect(result.error).to.equal(null);
    expect(result.output).to.deep.equal({ counted: 6 });
    expect(result.metadata["execution_id"]).to.equal(id);
    expect(result.metadata["tool_name"]).to.equal("builtin.countdown");

    const final = expectExecution(seen.final, "GetExecution after the run");
    expect(final).to.deep.include({
      execution_id: id,
      state: "EXECUTION_STATE_SUCCEEDED",
      attempts: 1,
      last_sequence: events.length,
      has_finished_at: true,
    });
    expect(final.result).to.deep.equal(result);
  });

  it("gets NOT_FOUND with a NotFoundError watching or getting an unknown execution id", async function () {
    const seen = await scenario<{
      execution_id: string;
      events: EventSeen[];
      error: RpcErrorSeen | null;
      get_error: RpcErrorSeen | null;
    }>("watch_unknown");
    expect(seen.events, "no event before the error").to.deep.equal([]);
    expectRpcError(seen.error, "NOT_FOUND", "NotFoundError", seen.execution_id);
    expectRpcError(seen.get_error, "NOT_FOUND", "NotFoundError", seen.execution_id);
  });

  it("cancels a running execution, idempotently, and gets FAILED_PRECONDITION cancelling a succeeded one", async function () {
    const seen = await scenario<{
      execution_id: string;
      started: ExecutionSeen;
      cancel: ExecutionSeen | RpcErrorSeen;
      events: EventSeen[];
      watch_error: RpcErrorSeen | null;
      elapsed_ms: number;
      got: ExecutionSeen | RpcErrorSeen;
      cancel_again: ExecutionSeen | RpcErrorSeen;
      echo_id: string;
      echo_events: EventSeen[];
      echo_watch_error: RpcErrorSeen | null;
      echo_got: ExecutionSeen | RpcErrorSeen;
      cancel_finished: RpcErrorSeen | null;
      echo_after: ExecutionSeen | RpcErrorSeen;
    }>("cancel");
    const id = seen.execution_id;
    expect(seen.started).to.deep.include({
      execution_id: id,
      tool_name: "builtin.sleep",
      state: "EXECUTION_STATE_RUNNING",
    });

    const cancelled = expectExecution(seen.cancel, "CancelExecution of a running execution");
    expect(cancelled.execution_id).to.equal(id);
    expect(["EXECUTION_STATE_RUNNING", "EXECUTION_STATE_CANCELLED"]).to.include(cancelled.state);

    expect(seen.watch_error, "the watch ends OK").to.equal(null);
    expectNumbered(seen.events, id);
    expectLifecycle(seen.events, "progress");
    expect(seen.events.find((event) => event.kind === "execution_finished")).to.deep.include({ success: false });
    const completed = seen.events[seen.events.length - 1] as EventSeen;
    expect(completed.kind).to.equal("completed");
    const result = completed.result as ResultSeen;
    expect(result.success).to.equal(false);
    expect(result.output).to.deep.equal({});
    expect(result.error?.error_type, result.error?.details).to.equal("CancelledError");
    expect(result.error?.tool_name).to.equal("builtin.sleep");
    expect(seen.elapsed_ms, "the 60 s sleep stops at once").to.be.below(10_000);

    const got = expectExecution(seen.got, "GetExecution after the cancellation");
    expect(got).to.deep.include({
      execution_id: id,
      state: "EXECUTION_STATE_CANCELLED",
      has_finished_at: true,
      last_sequence: seen.events.length,
    });
    expect(got.result).to.deep.equal(result);

    const again = expectExecution(seen.cancel_again, "a second CancelExecution");
    expect(again).to.deep.include({ execution_id: id, state: "EXECUTION_STATE_CANCELLED" });
    expect(again.result, "a cancelled run is returned unchanged").to.deep.equal(result);

    // A run that succeeded cannot be cancelled, and stays as it was.
    expect(seen.echo_watch_error).to.equal(null);
    expect(seen.echo_events[seen.echo_events.length - 1]?.result?.success).to.equal(true);
    expect(expectExecution(seen.echo_got, "GetExecution of the echo run").state).to.equal("EXECUTION_STATE_SUCCEEDED");
    const error = expectRpcError(seen.cancel_finished, "FAILED_PRECONDITION", undefined, seen.echo_id);
    expect(error.tool_name).to.equal("builtin.echo");
    expect(expectExecution(seen.echo_after, "GetExecution after the refused cancel").state).to.equal(
      "EXECUTION_STATE_SUCCEEDED",
    );
  });

  it("returns the same execution for a reused idempotency key and inputs, and INVALID_ARGUMENT for other inputs", async function () {
    const seen = await scenario<{
      key: string;
      first: StartedSeen;
      second: StartedSeen;
      reordered: StartedSeen;
      other_inputs: RpcErrorSeen | null;
      other_key: StartedSeen;
    }>("idempotency_key");
    const id = seen.first.execution.execution_id;
    expect(id).to.match(uuidPattern);
    expect(seen.first.deduplicated).to.equal(false);
    expect(seen.first.execution).to.deep.include({ tool_name: "builtin.echo", idempotency_key: seen.key });
    expect(seen.second.deduplicated).to.equal(true);
    expect(seen.second.execution).to.deep.include({
      execution_id: id,
      idempotency_key: seen.key,
      inputs_digest: seen.first.execution.inputs_digest,
    });
    expect(seen.reordered.deduplicated, "the digest is of the canonical JSON, keys sorted").to.equal(true);
    expect(seen.reordered.execution.execution_id).to.equal(id);
    const error = expectRpcError(seen.other_inputs, "INVALID_ARGUMENT", "InvalidRequestError", seen.key);
    expect(error.details).to.contain(id);
    expect(error.tool_name).to.equal("builtin.echo");
    expect(seen.other_key.deduplicated).to.equal(false);
    expect(seen.other_key.execution.execution_id).to.not.equal(id);
  });

  it("gets INVALID_ARGUMENT for a retry policy on a tool that is neither idempotent nor read_only", async function () {
    const seen = await scenario<{
      started: ExecutionSeen | null;
      error: RpcErrorSeen | null;
      idempotent_started: ExecutionSeen | RpcErrorSeen;
    }>("retry_not_idempotent");
    expect(seen.started, "no run is started").to.equal(null);
    const error = expectRpcError(
      seen.error,
      "INVALID_ARGUMENT",
      "InvalidRequestError",
      "neither idempotent nor read_only",
    );
    expect(error.details).to.contain("test.throw_string");
    expect(error.tool_name).to.equal("test.throw_string");
    expect(expectExecution(seen.idempotent_started, "the same policy on builtin.echo").tool_name).to.equal(
      "builtin.echo",
    );
  });

  it("reports the server's limits and features with GetCapabilities", async function () {
    const seen = await scenario<{
      max_concurrent_runs: number;
      max_queued_runs: number;
      default_queue_timeout_ms: number;
      default_approval_timeout_ms: number;
      default_timeout_ms: number;
      heartbeat_interval_ms: number;
      retained_executions: number;
      retention_ms: number;
      retained_bytes: number;
      max_message_bytes: number;
      features: string[];
    }>("capabilities");
    expect(seen.max_concurrent_runs).to.be.greaterThan(0);
    expect(seen.max_queued_runs).to.be.greaterThan(0);
    expect(seen.retained_executions).to.be.greaterThan(0);
    expect(seen.retention_ms).to.be.greaterThan(0);
    expect(seen.retained_bytes).to.be.greaterThan(0);
    expect(seen.heartbeat_interval_ms).to.be.greaterThan(0);
    expect(seen.default_queue_timeout_ms).to.be.greaterThan(0);
    expect(seen.default_approval_timeout_ms).to.be.greaterThan(0);
    expect(seen.default_timeout_ms).to.be.greaterThan(0);
    expect(seen.max_message_bytes).to.be.greaterThan(0);
    expect(seen.features).to.include("detached-runs");
    expect(new Set(seen.features).size, "no feature listed twice").to.equal(seen.features.length);
  });

  it("lists the countdown run of the reattach test by tool, and by tool and state", async function () {
    if (countdownId === undefined) throw new Error("the reattach test did not run or did not start its countdown");
    const seen = await scenario<{
      execution_id: string;
      by_tool: ListSeen;
      succeeded: ListSeen;
      cancelled: ListSeen;
      other_tool: ListSeen;
    }>("list_executions", { execution_id: countdownId });
    expect(seen.execution_id).to.equal(countdownId);
    const byTool = expectListed(seen.by_tool);
    expect(byTool.map((execution) => execution.execution_id)).to.include(countdownId);
    expect(new Set(byTool.map((execution) => execution.tool_name))).to.deep.equal(new Set(["builtin.countdown"]));
    expect(byTool.find((execution) => execution.execution_id === countdownId)).to.deep.include({
      state: "EXECUTION_STATE_SUCCEEDED",
      attempts: 1,
    });
    const succeeded = expectListed(seen.succeeded);
    expect(succeeded.map((execution) => execution.execution_id)).to.include(countdownId);
    expect(new Set(succeeded.map((execution) => execution.state))).to.deep.equal(
      new Set(["EXECUTION_STATE_SUCCEEDED"]),
    );
    expect(expectListed(seen.cancelled).map((execution) => execution.execution_id)).to.not.include(countdownId);
    expect(expectListed(seen.other_tool).map((execution) => execution.execution_id)).to.not.include(countdownId);
  });
});
