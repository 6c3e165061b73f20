"""A real grpcio client of toolruntime, driven by test/wire/python-client.test.ts.

Usage: /usr/bin/python3 wire_client.py STUBS_DIR HOST:PORT SCENARIO

STUBS_DIR holds the modules that grpc_tools.protoc generated from proto/toolruntime/v1/*.proto and
test/python/rpc_status.proto (from a copy of the contract with each proto3 `optional` field written
as its equivalent one-field oneof, when the installed protoc predates `optional`). The script runs one scenario against the gRPC port and prints ONE
JSON object on stdout with what it observed: status codes by name, messages, the ToolError decoded
from the `grpc-status-details-bin` trailer, results, events. It asserts nothing itself: the mocha
test does. A scenario that cannot run at all (a crash, an unexpected status where the scenario
needs a response to go on) exits non-zero with a traceback on stderr.
"""

import json
import math
import sys
import time
import uuid

if len(sys.argv) != 4:
    sys.exit("usage: wire_client.py STUBS_DIR HOST:PORT SCENARIO")
STUBS_DIR, ADDRESS, SCENARIO = sys.argv[1:4]
# No __pycache__ in test/python (or in STUBS_DIR) for the modules imported below.
sys.dont_write_bytecode = True
# The stubs go on sys.path first: grpc_observations and the imports below need the generated modules.
sys.path.insert(0, STUBS_DIR)

import grpc  # noqa: E402

from grpc_observations import (  # noqa: E402
    TIMEOUT,
    call,
    collect_events,
    error_json,
    event_json,
    event_kind,
    must,
    result_json,
    run,
    to_struct,
)
from toolruntime.v1 import registry_pb2, registry_pb2_grpc  # noqa: E402
from toolruntime.v1 import runner_pb2, runner_pb2_grpc  # noqa: E402
from toolruntime.v1 import tool_pb2  # noqa: E402

CHANGE_TYPES = registry_pb2.ToolChangeType


# ---------------------------------------------------------------------------------------------
# Helpers: names and conversions (the shared ones, and RpcError decoding, are in grpc_observations).


def unique(prefix):
    """A fresh name segment: the prefix and 8 hex digits (lowercase, starts with a letter)."""
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def spec_json(spec):
    caps = spec.capabilities
    return {
        "name": spec.name,
        "description": spec.description,
        "tool_type": spec.tool_type,
        "has_handler": spec.has_handler,
        "version": spec.version,
        "default_timeout_ms": spec.default_timeout_ms,
        "capabilities": {
            "read_only": caps.read_only,
            "writes": caps.writes,
            "checkpointable": caps.checkpointable,
            "idempotent": caps.idempotent,
        },
    }


def change_json(message):
    return {
        "type": CHANGE_TYPES.Name(message.type),
        "name": message.spec.name if message.HasField("spec") else None,
        "version": message.version,
    }


def next_change(stream):
    """The next WatchTools message that is not a HEARTBEAT."""
    for message in stream:
        if message.type != CHANGE_TYPES.TOOL_CHANGE_TYPE_HEARTBEAT:
            return message
    raise RuntimeError("the watch ended early")


def register_request(name, registry="", **spec_fields):
    spec = tool_pb2.ToolSpec(name=name, description=f"{name} (registered by wire_client.py)", **spec_fields)
    return registry_pb2.RegisterToolRequest(registry=registry, spec=spec)


class Client:
    def __init__(self, channel):
        self.registry = registry_pb2_grpc.RegistryServiceStub(channel)
        self.runner = runner_pb2_grpc.RunnerServiceStub(channel)

    def activate(self, runner, tool_name):
        return must(self.runner.ActivateTool, runner_pb2.ActivateToolRequest(runner=runner, tool_name=tool_name))

    def execute(self, runner, tool_name, inputs, timeout_ms=0):
        request = runner_pb2.ExecuteToolRequest(
            runner=runner, tool_name=tool_name, inputs=to_struct(inputs), timeout_ms=timeout_ms
        )
        return call(self.runner.ExecuteTool, request)

    def execute_result(self, runner, tool_name, inputs):
        response, error = self.execute(runner, tool_name, inputs)
        return result_json(response.result) if error is None else error


# ---------------------------------------------------------------------------------------------
# Scenarios: each takes a Client and returns the JSON object to print.


def registry_crud(client):
    ns = unique("crud")
    names = [f"{ns}.alpha", f"{ns}.beta", f"{ns}.sub.gamma"]
    decoy = f"{ns}x.delta"  # shares the prefix but not the namespace
    registered = [
        must(client.registry.RegisterTool, register_request(name, tool_type="function"))
        for name in [*names, decoy]
    ]
    got = must(client.registry.GetTool, registry_pb2.GetToolRequest(name=names[0]))
    pages, token = [], ""
    for _ in range(10):
        page = must(
            client.registry.ListTools,
            registry_pb2.ListToolsRequest(namespace=ns, page_size=1, page_token=token),
        )
        pages.append({"names": [spec.name for spec in page.tools], "has_next": page.next_page_token != ""})
        token = page.next_page_token
        if not token:
            break
    removed = must(client.registry.RemoveTool, registry_pb2.RemoveToolRequest(name=names[0]))
    removed_again = must(client.registry.RemoveTool, registry_pb2.RemoveToolRequest(name=names[0]))
    _, get_after_remove = call(client.registry.GetTool, registry_pb2.GetToolRequest(name=names[0]))
    return {
        "namespace": ns,
        "names": names,
        "registered": [
            {"spec": spec_json(response.spec), "replaced": response.replaced} for response in registered
        ],
        "got": spec_json(got.spec),
        "pages": pages,
        "removed": removed.removed,
        "removed_again": removed_again.removed,
        "get_after_remove": get_after_remove,
    }


def register_taken_name(client):
    name = f"{unique('taken')}.tool"
    first = must(client.registry.RegisterTool, register_request(name))
    _, second = call(client.registry.RegisterTool, register_request(name))
    _, builtin = call(client.registry.RegisterTool, register_request("builtin.echo"))
    return {"name": name, "first_version": first.spec.version, "second": second, "builtin": builtin}


def read_only_rule(client):
    ns = unique("ro")
    observed = {"namespace": ns}
    for label, tool, capabilities in [
        ("writes", "alpha", tool_pb2.ToolCapability(read_only=True, writes=True)),
        ("checkpointable", "beta", tool_pb2.ToolCapability(read_only=True, checkpointable=True)),
    ]:
        _, observed[label] = call(
            client.registry.RegisterTool, register_request(f"{ns}.{tool}", capabilities=capabilities)
        )
    # The flags are fine on their own: read_only with idempotent, writes with checkpointable.
    _, observed["read_only_idempotent_error"] = call(
        client.registry.RegisterTool,
        register_request(f"{ns}.reader", capabilities=tool_pb2.ToolCapability(read_only=True, idempotent=True)),
    )
    _, observed["writes_checkpointable_error"] = call(
        client.registry.RegisterTool,
        register_request(f"{ns}.writer", capabilities=tool_pb2.ToolCapability(writes=True, checkpointable=True)),
    )
    return observed


INVALID_NAMES = {
    "empty": "",
    "uppercase and space": "Fs Read",
    "__proto__ namespace": "__proto__.x",
    "__proto__ segment": "fs.__proto__",
    "tab": "fs.re\tad",
    "200 characters": ".".join(["a" * 50, "b" * 49, "c" * 49, "d" * 49]),
    "cyrillic look-alike": "fs.r\u0435ad",
}


def invalid_names(client):
    register, get = {}, {}
    for label, name in INVALID_NAMES.items():
        _, register[label] = call(client.registry.RegisterTool, register_request(name))
        _, get[label] = call(client.registry.GetTool, registry_pb2.GetToolRequest(name=name))
    registered, register_error = call(client.registry.RegisterTool, register_request("constructor.tostring"))
    got, get_error = call(client.registry.GetTool, registry_pb2.GetToolRequest(name="constructor.tostring"))
    _, get_unregistered = call(client.registry.GetTool, registry_pb2.GetToolRequest(name="constructor.constructor"))
    return {
        "lengths": {label: len(name) for label, name in INVALID_NAMES.items()},
        "register": register,
        "get": get,
        "prototype_like": {
            "register_error": register_error,
            "registered_name": registered.spec.name if registered is not None else None,
            "get_error": get_error,
            "got_name": got.spec.name if got is not None else None,
            "get_unregistered": get_unregistered,
        },
    }


def unknown_tool(client):
    name = f"{unique('nosuch')}.tool"
    runner = unique("runner")
    _, activate = call(client.runner.ActivateTool, runner_pb2.ActivateToolRequest(runner=runner, tool_name=name))
    _, execute = client.execute(runner, name, {})
    deactivate = must(
        client.runner.DeactivateTool, runner_pb2.DeactivateToolRequest(runner=runner, tool_name=name)
    )
    events, run_error = collect_events(
        client.runner.RunTool(runner_pb2.RunToolRequest(tool_name=name), timeout=TIMEOUT)
    )
    return {
        "name": name,
        "activate": activate,
        "execute": execute,
        "deactivate_was_active": deactivate.was_active,
        "run_events": events,
        "run_error": run_error,
    }


def execute_inactive(client):
    _, execute = client.execute(unique("runner"), "builtin.echo", {"x": 1})
    return {"execute": execute}


def echo_lifecycle(client):
    runner = unique("runner")
    inputs = {"a": [1, "x", None, True]}
    first = client.activate(runner, "builtin.echo")
    second = client.activate(runner, "builtin.echo")
    response, error = client.execute(runner, "builtin.echo", inputs)
    if error is not None:
        raise RuntimeError(f"ExecuteTool failed: {json.dumps(error)}")
    deactivate = lambda: must(  # noqa: E731
        client.runner.DeactivateTool, runner_pb2.DeactivateToolRequest(runner=runner, tool_name="builtin.echo")
    ).was_active
    was_active = deactivate()
    was_active_again = deactivate()
    _, execute_after = client.execute(runner, "builtin.echo", inputs)
    return {
        "runner": runner,
        "inputs": inputs,
        "activated_name": first.spec.name,
        "already_active": [first.already_active, second.already_active],
        "execution_id": response.execution_id,
        "result": result_json(response.result),
        "deactivate_was_active": was_active,
        "deactivate_again_was_active": was_active_again,
        "execute_after_deactivate": execute_after,
    }


def non_finite_inputs(client):
    runner = unique("runner")
    client.activate(runner, "builtin.echo")
    observed = {}
    for label, inputs in [
        ("nan", {"value": float("nan")}),
        ("infinity", {"nested": {"list": [1, float("inf")]}}),
        ("negative_infinity", {"value": -math.inf}),
    ]:
        observed[label] = client.execute_result(runner, "builtin.echo", inputs)
    return observed


def throw_string(client):
    runner = unique("runner")
    client.activate(runner, "test.throw_string")
    return {"result": client.execute_result(runner, "test.throw_string", {})}


def bad_output(client):
    runner = unique("runner")
    client.activate(runner, "test.bad_output")
    kinds = ["bigint", "cycle", "undefined", "function", "nan"]
    return {kind: client.execute_result(runner, "test.bad_output", {"kind": kind}) for kind in kinds}


def hang(client):
    runner = unique("runner")
    client.activate(runner, "test.hang")
    started = time.monotonic()
    result = client.execute_result(runner, "test.hang", {})
    return {"result": result, "elapsed_ms": (time.monotonic() - started) * 1000}


def schema(client):
    runner = unique("runner")
    client.activate(runner, "test.schema")
    return {
        "bad_input": client.execute_result(runner, "test.schema", {"count": -1}),
        "bad_output": client.execute_result(runner, "test.schema", {"count": 1, "reply": {"total": "x"}}),
        "good": client.execute_result(runner, "test.schema", {"count": 1, "reply": {"total": 2}}),
    }


def wire_tool_without_handler(client):
    ns = unique("wire")
    name = f"{ns}.remote"
    registered = must(client.registry.RegisterTool, register_request(name))
    listed = must(client.registry.ListTools, registry_pb2.ListToolsRequest(namespace=ns))
    runner = unique("runner")
    activated = client.activate(runner, name)
    _, execute = client.execute(runner, name, {})
    events, run_error = collect_events(
        client.runner.RunTool(runner_pb2.RunToolRequest(tool_name=name), timeout=TIMEOUT)
    )
    return {
        "name": name,
        "registered_has_handler": registered.spec.has_handler,
        "listed": [spec_json(spec) for spec in listed.tools],
        "activated_name": activated.spec.name,
        "execute": execute,
        "run_events": events,
        "run_error": run_error,
    }


def run_countdown(client):
    request = runner_pb2.RunToolRequest(
        tool_name="builtin.countdown", inputs=to_struct({"from": 3, "interval_ms": 20})
    )
    events, error = collect_events(client.runner.RunTool(request, timeout=TIMEOUT))
    return {"events": events, "error": error}


def run_cancel(client):
    stream = client.runner.RunTool(runner_pb2.RunToolRequest(tool_name="test.wait_for_cancel"), timeout=TIMEOUT)
    events, error = [], None
    try:
        for response in stream:
            events.append(event_json(response.event))
            if event_kind(response.event) == "progress":
                stream.cancel()
    except grpc.RpcError as err:
        error = error_json(err)
    got, get_error = call(client.registry.GetTool, registry_pb2.GetToolRequest(name="test.wait_for_cancel"))
    return {
        "events": events,
        "error": error,
        "code_after_cancel": stream.code().name,
        "get_after": {"name": got.spec.name if got is not None else None, "error": get_error},
    }


def oversized_request(client):
    runner = unique("runner")
    client.activate(runner, "builtin.echo")
    blob = "x" * (5 * 1024 * 1024)
    _, large = client.execute(runner, "builtin.echo", {"blob": blob})
    small = client.execute_result(runner, "builtin.echo", {"small": "ok"})
    return {"large": large, "small": small}


def alternate_registry(client):
    registry = "staging"
    name = f"{unique('alt')}.tool"
    registered = must(client.registry.RegisterTool, register_request(name, registry=registry))
    discover = lambda registry_name: call(  # noqa: E731
        client.runner.DiscoverTools, runner_pb2.DiscoverToolsRequest(registry=registry_name, page_size=1000)
    )
    staging, staging_error = discover(registry)
    default, default_error = discover("")
    _, nope = discover("nope")
    _, get_default = call(client.registry.GetTool, registry_pb2.GetToolRequest(name=name))
    got_staging = must(client.registry.GetTool, registry_pb2.GetToolRequest(registry=registry, name=name))
    return {
        "name": name,
        "registered_name": registered.spec.name,
        "staging": [spec.name for spec in staging.tools] if staging is not None else staging_error,
        "default": [spec.name for spec in default.tools] if default is not None else default_error,
        "default_has_next_page": default.next_page_token != "" if default is not None else None,
        "nope": nope,
        "get_default": get_default,
        "got_staging_name": got_staging.spec.name,
    }


def registry_lifecycle(client):
    registry = unique("tmp")
    name = f"{unique('short')}.lived"
    list_tools = lambda: call(  # noqa: E731
        client.registry.ListTools, registry_pb2.ListToolsRequest(registry=registry)
    )
    remove = lambda: must(  # noqa: E731
        client.registry.RemoveTool, registry_pb2.RemoveToolRequest(registry=registry, name=name)
    ).removed
    _, list_before = list_tools()
    removed_before = remove()
    must(client.registry.RegisterTool, register_request(name, registry=registry))
    listed, _ = list_tools()
    removed = remove()
    listed_after, list_after_error = list_tools()
    discovered_after, discover_after_error = call(
        client.runner.DiscoverTools, runner_pb2.DiscoverToolsRequest(registry=registry)
    )
    return {
        "registry": registry,
        "name": name,
        "list_before": list_before,
        "removed_before": removed_before,
        "listed": [spec.name for spec in listed.tools],
        "removed": removed,
        "listed_after": [spec.name for spec in listed_after.tools] if listed_after is not None else None,
        "list_after_error": list_after_error,
        "discovered_after": (
            [spec.name for spec in discovered_after.tools] if discovered_after is not None else None
        ),
        "discover_after_error": discover_after_error,
    }


def concurrent_register(_client):
    name = f"{unique('race')}.tool"
    channels = [grpc.insecure_channel(ADDRESS) for _ in range(8)]
    try:
        stubs = [registry_pb2_grpc.RegistryServiceStub(channel) for channel in channels]
        # No deadline here: the test's process timeout bounds the scenario. (The gRPC adapter keeps
        # each call's deadline timer until the deadline passes, so 1,000 long deadlines would keep
        # the test process alive that long after the server closed.)
        futures = [stubs[index % len(stubs)].RegisterTool.future(register_request(name)) for index in range(1000)]
        codes, error_types, versions = {}, {}, []
        for future in futures:
            try:
                versions.append(future.result().spec.version)
                code = "OK"
            except grpc.RpcError as err:
                observed = error_json(err)
                code = observed["code"]
                error_type = (observed["tool_error"] or {}).get("error_type")
                error_types[error_type] = error_types.get(error_type, 0) + 1
            codes[code] = codes.get(code, 0) + 1
    finally:
        for channel in channels:
            channel.close()
    return {"name": name, "codes": codes, "error_types": error_types, "winner_versions": versions}


def watch_tools(client):
    name = f"{unique('watched')}.tool"
    stream = client.registry.WatchTools(registry_pb2.WatchToolsRequest(), timeout=TIMEOUT)
    snapshot = []
    for message in stream:
        snapshot.append(change_json(message))
        if message.type == CHANGE_TYPES.TOOL_CHANGE_TYPE_SNAPSHOT_END:
            break
    end_version = snapshot[-1]["version"]
    registered = must(client.registry.RegisterTool, register_request(name))
    removed = must(client.registry.RemoveTool, registry_pb2.RemoveToolRequest(name=name))
    live = [change_json(next_change(stream)), change_json(next_change(stream))]
    stream.cancel()
    live_end = None
    try:
        next(stream)
    except grpc.RpcError as err:
        live_end = err.code().name

    replay_stream = client.registry.WatchTools(
        registry_pb2.WatchToolsRequest(from_version=end_version), timeout=TIMEOUT
    )
    replay = [change_json(next_change(replay_stream)), change_json(next_change(replay_stream))]
    replay_stream.cancel()

    future_stream = client.registry.WatchTools(
        registry_pb2.WatchToolsRequest(from_version=end_version + 1000), timeout=TIMEOUT
    )
    future_error = None
    try:
        next(future_stream)
    except grpc.RpcError as err:
        future_error = error_json(err)
    return {
        "name": name,
        "snapshot": snapshot,
        "registered_version": registered.spec.version,
        "removed": removed.removed,
        "live": live,
        "live_end": live_end,
        "replay": replay,
        "future_version": future_error,
    }


def watch_missing_registry(client):
    registry = unique("fresh")
    name = f"{unique('first')}.tool"
    observed = {"registry": registry, "name": name, "missing_first": None, "missing_error": None}
    stream = client.registry.WatchTools(registry_pb2.WatchToolsRequest(registry=registry), timeout=TIMEOUT)
    try:
        observed["missing_first"] = change_json(next_change(stream))
    except grpc.RpcError as err:
        observed["missing_error"] = error_json(err)
    finally:
        stream.cancel()
    must(client.registry.RegisterTool, register_request(name, registry=registry))
    stream = client.registry.WatchTools(registry_pb2.WatchToolsRequest(registry=registry), timeout=TIMEOUT)
    observed["snapshot"] = [change_json(next_change(stream)), change_json(next_change(stream))]
    stream.cancel()
    return observed


SCENARIOS = {
    scenario.__name__: scenario
    for scenario in [
        registry_crud,
        register_taken_name,
        read_only_rule,
        invalid_names,
        unknown_tool,
        execute_inactive,
        echo_lifecycle,
        non_finite_inputs,
        throw_string,
        bad_output,
        hang,
        schema,
        wire_tool_without_handler,
        run_countdown,
        run_cancel,
        oversized_request,
        alternate_registry,
        registry_lifecycle,
        concurrent_register,
        watch_tools,
        watch_missing_registry,
    ]
}


def main():
    run(SCENARIOS, SCENARIO, ADDRESS, Client)


if __name__ == "__main__":
    main()
