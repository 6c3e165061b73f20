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

from grpc_observations import TIMEOUT, call, must, new_channel, result_json, to_struct  # noqa: E402
from toolruntime.v1 import registry_pb2, registry_pb2_grpc, runner_pb2, runner_pb2_grpc, tool_pb2  # noqa: E402

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


SCENARIOS = {"register_race": register_race, "watch": watch, "activations": activations}

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
