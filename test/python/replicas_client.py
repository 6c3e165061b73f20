"""A real grpcio client of several toolruntime replicas, driven by test/replicas/replicas.test.ts.

Usage: /usr/bin/python3 replicas_client.py STUBS_DIR SCENARIO PARAMS_JSON

The replicas share one PostgreSQL store; PARAMS_JSON names their gRPC addresses ("addresses") and
the scenario's other parameters. Each scenario talks to the replicas directly, one channel per
replica, and prints ONE JSON object on stdout with what it observed. It asserts nothing itself:
the mocha test does. A scenario that cannot run at all exits non-zero with a traceback.
"""

import json
import sys
import threading

if len(sys.argv) != 4:
    sys.exit("usage: replicas_client.py STUBS_DIR SCENARIO PARAMS_JSON")
STUBS_DIR, SCENARIO, PARAMS_TEXT = sys.argv[1:4]
PARAMS = json.loads(PARAMS_TEXT)
sys.dont_write_bytecode = True
sys.path.insert(0, STUBS_DIR)

import grpc  # noqa: E402
from grpc_observations import (  # noqa: E402
    TIMEOUT,
    call,
    error_json,
    event_json,
    must,
    new_channel,
    result_json,
    to_struct,
)
from toolruntime.v1 import (  # noqa: E402
    execution_pb2,
    execution_pb2_grpc,
    registry_pb2,
    registry_pb2_grpc,
    runner_pb2,
    runner_pb2_grpc,
    tool_pb2,
)

CHANGE_TYPES = registry_pb2.ToolChangeType


def registries(channels):
    return [registry_pb2_grpc.RegistryServiceStub(channel) for channel in channels]


def runners(channels):
    return [runner_pb2_grpc.RunnerServiceStub(channel) for channel in channels]


def register_race(channels):
    """Registers one name on every replica at once, from one thread per call; reports each outcome."""
    stubs = registries(channels)
    per_replica = PARAMS["per_replica"]
    outcomes = [None] * (len(stubs) * per_replica)
    start = threading.Barrier(len(outcomes))

    def register(index):
        stub = stubs[index % len(stubs)]
        spec = tool_pb2.ToolSpec(name=PARAMS["name"], description=f"from call {index}")
        start.wait()
        response, error = call(stub.RegisterTool, registry_pb2.RegisterToolRequest(spec=spec))
        outcomes[index] = {"ok": True, "version": response.spec.version} if error is None else error

    threads = [threading.Thread(target=register, args=(index,)) for index in range(len(outcomes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen = []
    for stub in stubs:
        response, error = call(stub.GetTool, registry_pb2.GetToolRequest(name=PARAMS["name"]))
        seen.append(response.spec.description if error is None else error)
    return {"outcomes": outcomes, "descriptions": seen}


def watch(channels):
    """Watches the replica at index `watch_on` from `from_version` until `count` changes arrived."""
    stub = registries(channels)[PARAMS["watch_on"]]
    stream = stub.WatchTools(
        registry_pb2.WatchToolsRequest(from_version=PARAMS["from_version"]), timeout=TIMEOUT
    )
    changes = []
    try:
        for message in stream:
            if message.type == CHANGE_TYPES.TOOL_CHANGE_TYPE_HEARTBEAT:
                continue
            changes.append(
                {
                    "type": CHANGE_TYPES.Name(message.type),
                    "version": message.version,
                    "name": message.spec.name,
                }
            )
            if len(changes) >= PARAMS["count"]:
                break
    finally:
        stream.cancel()
    return {"changes": changes}


def activations(channels):
    """Activates on replica 0, executes on 1, deactivates on 2, then executes on 0 again."""
    stubs = runners(channels)
    tool = PARAMS["tool"]
    inputs = to_struct({"message": "across replicas"})
    activated = must(stubs[0].ActivateTool, runner_pb2.ActivateToolRequest(runner="shared", tool_name=tool))
    executed = must(
        stubs[1].ExecuteTool, runner_pb2.ExecuteToolRequest(runner="shared", tool_name=tool, inputs=inputs)
    )
    deactivated = must(
        stubs[2].DeactivateTool, runner_pb2.DeactivateToolRequest(runner="shared", tool_name=tool)
    )
    _, refused = call(
        stubs[0].ExecuteTool, runner_pb2.ExecuteToolRequest(runner="shared", tool_name=tool, inputs=inputs)
    )
    return {
        "already_active": activated.already_active,
        "result": result_json(executed.result),
        "was_active": deactivated.was_active,
        "refused": refused,
    }


def executions(channels):
    return [execution_pb2_grpc.ExecutionServiceStub(channel) for channel in channels]


def watch_run(stub, execution_id, stop_kind="completed"):
    """Events of a run from the start until one of `stop_kind` (or the stream's end), as JSON."""
    events = []
    stream = stub.WatchExecution(execution_pb2.WatchExecutionRequest(execution_id=execution_id), timeout=60)
    try:
        for message in stream:
            observed = event_json(message.event)
            kind = observed["kind"]
            if kind == "execution_started":
                observed["attempt"] = message.event.execution_started.attempt
            elif kind == "retry_scheduled":
                observed["error_type"] = message.event.retry_scheduled.error.error_type
            elif kind == "awaiting_approval":
                observed["inputs_digest"] = message.event.awaiting_approval.inputs_digest
            events.append(observed)
            if kind == stop_kind:
                break
    finally:
        stream.cancel()
    return events


def state_name(execution):
    return execution_pb2.ExecutionState.Name(execution.state)


def across(channels):
    """Starts a run on replica 0, reads it on 1, lists and watches it live on 2, cancels it on 1."""
    stubs = executions(channels)
    started = must(
        stubs[0].StartExecution,
        execution_pb2.StartExecutionRequest(tool_name="replica.writes", inputs=to_struct({"interval_ms": 20})),
    )
    execution_id = started.execution.execution_id
    live = watch_run(stubs[2], execution_id, "progress")
    read = must(stubs[1].GetExecution, execution_pb2.GetExecutionRequest(execution_id=execution_id))
    listed = must(stubs[2].ListExecutions, execution_pb2.ListExecutionsRequest(tool_name="replica.writes"))
    must(stubs[1].CancelExecution, execution_pb2.CancelExecutionRequest(execution_id=execution_id))
    ended = watch_run(stubs[2], execution_id)
    final = must(stubs[0].GetExecution, execution_pb2.GetExecutionRequest(execution_id=execution_id))
    return {
        "live_kinds": [event["kind"] for event in live],
        "read_state": state_name(read.execution),
        "listed": [execution.execution_id for execution in listed.executions],
        "id": execution_id,
        "ended": ended,
        "final_state": state_name(final.execution),
    }


def approval_once(channels):
    """Starts a run needing approval on 0; 1 approves and 2 rejects at once; 0 watches the end."""
    stubs = executions(channels)
    started = must(
        stubs[0].StartExecution,
        execution_pb2.StartExecutionRequest(tool_name="replica.approval", inputs=to_struct({"n": 2})),
    )
    execution_id = started.execution.execution_id
    digest = watch_run(stubs[1], execution_id, "awaiting_approval")[-1]["inputs_digest"]
    outcomes = [None, None]
    start = threading.Barrier(2)

    def decide(index):
        start.wait()
        if index == 0:
            request = execution_pb2.ApproveExecutionRequest(execution_id=execution_id, inputs_digest=digest)
            _, error = call(stubs[1].ApproveExecution, request)
        else:
            request = execution_pb2.RejectExecutionRequest(execution_id=execution_id, inputs_digest=digest)
            _, error = call(stubs[2].RejectExecution, request)
        outcomes[index] = {"ok": True} if error is None else error

    threads = [threading.Thread(target=decide, args=(index,)) for index in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"outcomes": outcomes, "ended": watch_run(stubs[0], execution_id)}


def idempotent_start(channels):
    """Starts with one idempotency key on replicas 0 and 1 at once."""
    stubs = executions(channels)
    results = [None, None]
    start = threading.Barrier(2)

    def begin(index):
        request = execution_pb2.StartExecutionRequest(
            tool_name="replica.idempotent",
            inputs=to_struct({"ms": 10}),
            options=execution_pb2.ExecutionOptions(idempotency_key=PARAMS["key"]),
        )
        start.wait()
        response = must(stubs[index].StartExecution, request)
        results[index] = {"id": response.execution.execution_id, "deduplicated": response.deduplicated}

    threads = [threading.Thread(target=begin, args=(index,)) for index in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"results": results}


def watch_to_end(channels):
    """Watches run `id` on replica `on` from the start to its end, and reads its record there."""
    stub = executions(channels)[PARAMS["on"]]
    events = watch_run(stub, PARAMS["id"])
    final = must(stub.GetExecution, execution_pb2.GetExecutionRequest(execution_id=PARAMS["id"]))
    return {"events": events, "state": state_name(final.execution), "attempts": final.execution.attempts}


def states(channels):
    """The state of each run `ids` through replica `on`."""
    stub = executions(channels)[PARAMS["on"]]
    return {
        "states": [
            state_name(must(stub.GetExecution, execution_pb2.GetExecutionRequest(execution_id=run_id)).execution)
            for run_id in PARAMS["ids"]
        ]
    }


def start_keyed(channels):
    """StartExecution of `tool` with `inputs` and idempotency key `key` on replica `on`, with a
    deadline of `timeout_s`: the run's id and whether it was deduplicated, or the error."""
    stub = executions(channels)[PARAMS["on"]]
    request = execution_pb2.StartExecutionRequest(
        tool_name=PARAMS["tool"],
        inputs=to_struct(PARAMS.get("inputs", {})),
        options=execution_pb2.ExecutionOptions(idempotency_key=PARAMS["key"]),
    )
    try:
        response = stub.StartExecution(request, timeout=PARAMS.get("timeout_s", TIMEOUT))
    except grpc.RpcError as err:
        return error_json(err)
    return {"ok": True, "execution_id": response.execution.execution_id, "deduplicated": response.deduplicated}


def read(channels):
    """GetExecution of `id` on replica `on`, with a deadline of `timeout_s`: its state, or the error."""
    stub = executions(channels)[PARAMS["on"]]
    try:
        response = stub.GetExecution(
            execution_pb2.GetExecutionRequest(execution_id=PARAMS["id"]), timeout=PARAMS.get("timeout_s", TIMEOUT)
        )
    except grpc.RpcError as err:
        return error_json(err)
    return {"ok": True, "state": state_name(response.execution), "attempts": response.execution.attempts}


SCENARIOS = {
    "start_keyed": start_keyed,
    "read": read,
    "states": states,
    "register_race": register_race,
    "watch": watch,
    "activations": activations,
    "across": across,
    "approval_once": approval_once,
    "idempotent_start": idempotent_start,
    "watch_to_end": watch_to_end,
}

scenario = SCENARIOS.get(SCENARIO)
if scenario is None:
    sys.exit(f"unknown scenario {SCENARIO!r}: use one of {', '.join(SCENARIOS)}")
opened = [new_channel(address) for address in PARAMS["addresses"]]
try:
    observed = scenario(opened)
finally:
    for each in opened:
        each.close()
print(json.dumps(observed, allow_nan=False, default=str))
