"""A real grpcio client of toolruntime's ExecutionService, driven by test/wire/python-executions.test.ts.

Usage: /usr/bin/python3 executions_client.py STUBS_DIR HOST:PORT SCENARIO [PARAMS_JSON]

STUBS_DIR holds the modules that grpc_tools.protoc generated from proto/toolruntime/v1/*.proto and
test/python/rpc_status.proto. PARAMS_JSON, when given, is a JSON object of the scenario's parameters
(for example the id of a run an earlier scenario started). The script runs one scenario against the
gRPC port and prints ONE JSON object on stdout with what it observed: status codes by name,
messages, the ToolError decoded from the `grpc-status-details-bin` trailer, records, events. It
asserts nothing itself: the mocha test does. A scenario that cannot run at all (a crash, an
unexpected status where the scenario needs a response to go on) exits non-zero with a traceback on
stderr.
"""

import json
import sys
import time
import uuid

if len(sys.argv) not in (4, 5):
    sys.exit("usage: executions_client.py STUBS_DIR HOST:PORT SCENARIO [PARAMS_JSON]")
STUBS_DIR, ADDRESS, SCENARIO = sys.argv[1:4]
PARAMS = json.loads(sys.argv[4]) if len(sys.argv) == 5 else {}
# No __pycache__ in test/python (or in STUBS_DIR) for the modules imported below.
sys.dont_write_bytecode = True
# The stubs go on sys.path first: grpc_observations and the imports below need the generated modules.
sys.path.insert(0, STUBS_DIR)

import grpc  # noqa: E402

import grpc_observations  # noqa: E402
from grpc_observations import (  # noqa: E402
    TIMEOUT,
    call,
    collect_events,
    error_json,
    event_kind,
    must,
    result_json,
    run,
    to_struct,
    tool_error_json,
)
from toolruntime.v1 import execution_pb2, execution_pb2_grpc  # noqa: E402

STATES = execution_pb2.ExecutionState


# ---------------------------------------------------------------------------------------------
# Helpers: conversions (the shared ones, and RpcError decoding, are in grpc_observations).


def event_json(event):
    """An event as grpc_observations.event_json writes it, with what ExecutionService adds.

    An execution_started event adds its attempt, an execution_finished one its attempt and error
    (None when it has none), and an activated one the tool's name.
    """
    observed = grpc_observations.event_json(event)
    kind = observed["kind"]
    if kind == "execution_started":
        observed["attempt"] = event.execution_started.attempt
    elif kind == "execution_finished":
        observed["attempt"] = event.execution_finished.attempt
        finished = event.execution_finished
        observed["error"] = tool_error_json(finished.error) if finished.HasField("error") else None
    elif kind == "activated":
        observed["tool_name"] = event.activated.tool_name
    return observed


def execution_json(execution):
    return {
        "execution_id": execution.execution_id,
        "tool_name": execution.tool_name,
        "runner": execution.runner,
        "state": STATES.Name(execution.state),
        "inputs_digest": execution.inputs_digest,
        "caller": execution.caller,
        "has_finished_at": execution.HasField("finished_at"),
        "attempts": execution.attempts,
        "result": result_json(execution.result) if execution.HasField("result") else None,
        "idempotency_key": execution.idempotency_key,
        "last_sequence": execution.last_sequence,
    }


def start_request(tool_name, inputs, **options):
    return execution_pb2.StartExecutionRequest(
        tool_name=tool_name,
        inputs=to_struct(inputs),
        options=execution_pb2.ExecutionOptions(**options) if options else None,
    )


class Client:
    def __init__(self, channel):
        self.executions = execution_pb2_grpc.ExecutionServiceStub(channel)

    def start(self, tool_name, inputs, **options):
        return must(self.executions.StartExecution, start_request(tool_name, inputs, **options))

    def get(self, execution_id):
        return call(self.executions.GetExecution, execution_pb2.GetExecutionRequest(execution_id=execution_id))

    def cancel(self, execution_id):
        return call(
            self.executions.CancelExecution, execution_pb2.CancelExecutionRequest(execution_id=execution_id)
        )

    def watch(self, execution_id, after_sequence=0):
        return self.executions.WatchExecution(
            execution_pb2.WatchExecutionRequest(execution_id=execution_id, after_sequence=after_sequence),
            timeout=TIMEOUT,
        )

    def watch_all(self, execution_id, after_sequence=0):
        return collect_events(self.watch(execution_id, after_sequence), event_json)


def maybe_execution(response, error, field="execution"):
    """The record of an OK call as JSON, or the error of a failed one."""
    return execution_json(getattr(response, field)) if error is None else error


def new_channel():
    """A ready channel to the server under test."""
    return grpc_observations.new_channel(ADDRESS)


# ---------------------------------------------------------------------------------------------
# Scenarios: each takes a Client (on a channel that main opens) and returns the JSON to print.

# Longest the client waits, away from the run, for an event recorded while no one watched.
DETACHED_WAIT_S = 10.0
# Progress events the first watch reads before it drops its connection.
PROGRESS_BEFORE_DROP = 2


def reattach(_client):
    """Start a countdown, watch part of it, drop the connection, reattach on a new one."""
    first_channel = new_channel()
    first = Client(first_channel)
    started = first.start("builtin.countdown", {"from": 6, "interval_ms": 150})
    execution_id = started.execution.execution_id

    stream = first.watch(execution_id, 0)
    first_events, first_error = [], None
    try:
        progress = 0
        for response in stream:
            first_events.append(event_json(response.event))
            if event_kind(response.event) == "progress":
                progress += 1
                if progress == PROGRESS_BEFORE_DROP:
                    break
    except grpc.RpcError as err:
        first_error = error_json(err)
    last_seen = first_events[-1]["sequence"] if first_events else 0
    # Drop everything: the stream, then the whole channel (its connection).
    stream.cancel()
    first_cancel_code = stream.code().name if stream.code() is not None else None
    first_channel.close()

    with new_channel() as second_channel:
        second = Client(second_channel)
        # Reattach once the run has recorded an event while no one watched it (or the wait ends).
        deadline = time.monotonic() + DETACHED_WAIT_S
        while True:
            at_reattach, at_reattach_error = second.get(execution_id)
            moved_on = at_reattach is not None and at_reattach.execution.last_sequence > last_seen
            if moved_on or at_reattach_error is not None or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        second_events, second_error = second.watch_all(execution_id, last_seen)
        final, final_error = second.get(execution_id)
    return {
        "execution_id": execution_id,
        "started": execution_json(started.execution),
        "deduplicated": started.deduplicated,
        "first_events": first_events,
        "first_error": first_error,
        "first_cancel_code": first_cancel_code,
        "last_seen": last_seen,
        "at_reattach": maybe_execution(at_reattach, at_reattach_error),
        "second_events": second_events,
        "second_error": second_error,
        "final": maybe_execution(final, final_error),
    }


def watch_unknown(client):
    execution_id = str(uuid.uuid4())
    events, error = client.watch_all(execution_id, 0)
    _, get_error = client.get(execution_id)
    return {"execution_id": execution_id, "events": events, "error": error, "get_error": get_error}


def cancel(client):
    started = client.start("builtin.sleep", {"ms": 60000})
    execution_id = started.execution.execution_id
    began = time.monotonic()
    cancelled, cancel_error = client.cancel(execution_id)
    events, watch_error = client.watch_all(execution_id, 0)
    elapsed_ms = (time.monotonic() - began) * 1000
    got, get_error = client.get(execution_id)
    again, again_error = client.cancel(execution_id)

    echo = client.start("builtin.echo", {"finished": True})
    echo_id = echo.execution.execution_id
    echo_events, echo_watch_error = client.watch_all(echo_id, 0)
    echo_got, echo_get_error = client.get(echo_id)
    _, cancel_finished = client.cancel(echo_id)
    echo_after, echo_after_error = client.get(echo_id)
    return {
        "execution_id": execution_id,
        "started": execution_json(started.execution),
        "cancel": maybe_execution(cancelled, cancel_error),
        "events": events,
        "watch_error": watch_error,
        "elapsed_ms": elapsed_ms,
        "got": maybe_execution(got, get_error),
        "cancel_again": maybe_execution(again, again_error),
        "echo_id": echo_id,
        "echo_events": echo_events,
        "echo_watch_error": echo_watch_error,
        "echo_got": maybe_execution(echo_got, echo_get_error),
        "cancel_finished": cancel_finished,
        "echo_after": maybe_execution(echo_after, echo_after_error),
    }


def idempotency_key(client):
    key = f"key-{uuid.uuid4().hex}"
    inputs = {"order": 17, "items": ["a", "b"]}
    first = client.start("builtin.echo", inputs, idempotency_key=key)
    second = client.start("builtin.echo", inputs, idempotency_key=key)
    # The same inputs with the keys of its object in another order: the same canonical JSON.
    reordered = client.start("builtin.echo", {"items": ["a", "b"], "order": 17}, idempotency_key=key)
    _, other_inputs = call(
        client.executions.StartExecution, start_request("builtin.echo", {"order": 18}, idempotency_key=key)
    )
    other_key = client.start("builtin.echo", inputs, idempotency_key=f"{key}-other")
    return {
        "key": key,
        "first": {"execution": execution_json(first.execution), "deduplicated": first.deduplicated},
        "second": {"execution": execution_json(second.execution), "deduplicated": second.deduplicated},
        "reordered": {"execution": execution_json(reordered.execution), "deduplicated": reordered.deduplicated},
        "other_inputs": other_inputs,
        "other_key": {"execution": execution_json(other_key.execution), "deduplicated": other_key.deduplicated},
    }


def retry_not_idempotent(client):
    policy = execution_pb2.RetryPolicy(max_attempts=3)
    response, error = call(
        client.executions.StartExecution, start_request("test.throw_string", {}, retry_policy=policy)
    )
    # The same policy on an idempotent tool is accepted.
    accepted, accepted_error = call(
        client.executions.StartExecution, start_request("builtin.echo", {}, retry_policy=policy)
    )
    return {
        "started": execution_json(response.execution) if response is not None else None,
        "error": error,
        "idempotent_started": maybe_execution(accepted, accepted_error),
    }


def capabilities(client):
    response = must(client.executions.GetCapabilities, execution_pb2.GetCapabilitiesRequest())
    return {
        "max_concurrent_runs": response.max_concurrent_runs,
        "max_queued_runs": response.max_queued_runs,
        "default_queue_timeout_ms": response.default_queue_timeout_ms,
        "default_approval_timeout_ms": response.default_approval_timeout_ms,
        "default_timeout_ms": response.default_timeout_ms,
        "heartbeat_interval_ms": response.heartbeat_interval_ms,
        "retained_executions": response.retained_executions,
        "retention_ms": response.retention_ms,
        "retained_bytes": response.retained_bytes,
        "max_message_bytes": response.max_message_bytes,
        "features": list(response.features),
    }


def list_executions(client):
    def listed(**fields):
        response, error = call(client.executions.ListExecutions, execution_pb2.ListExecutionsRequest(**fields))
        if error is not None:
            return {"error": error}
        return {
            "executions": [execution_json(execution) for execution in response.executions],
            "next_page_token": response.next_page_token,
        }

    return {
        "execution_id": PARAMS.get("execution_id"),
        "by_tool": listed(tool_name="builtin.countdown"),
        "succeeded": listed(tool_name="builtin.countdown", state=STATES.EXECUTION_STATE_SUCCEEDED),
        "cancelled": listed(tool_name="builtin.countdown", state=STATES.EXECUTION_STATE_CANCELLED),
        "other_tool": listed(tool_name="builtin.echo"),
    }


SCENARIOS = {
    scenario.__name__: scenario
    for scenario in [
        reattach,
        watch_unknown,
        cancel,
        idempotency_key,
        retry_not_idempotent,
        capabilities,
        list_executions,
    ]
}


def main():
    run(SCENARIOS, SCENARIO, ADDRESS, Client)


if __name__ == "__main__":
    main()
