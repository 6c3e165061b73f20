"""What a grpcio client of toolruntime observed, as JSON: shared by the scripts in test/python.

wire_client.py and executions_client.py each run one scenario against the gRPC port and print ONE
JSON object of what they saw; this module holds what both need to get there: the deadline of a
call, the decoding of the google.rpc.Status (and its ToolError) in the `grpc-status-details-bin`
trailer, `call` and `must` around a unary call, the JSON of structs, ToolErrors, results and
events, and `run`, which runs the chosen scenario on a fresh channel and prints its JSON.

It parses no arguments and does nothing at import time but import. It imports modules that
grpc_tools.protoc generated (rpc_status_pb2, toolruntime.v1.tool_pb2), so a script must put its
STUBS_DIR on sys.path BEFORE it imports this module.
"""

import json
import sys

import grpc
from google.protobuf import json_format, struct_pb2

import rpc_status_pb2
from toolruntime.v1 import tool_pb2

# Deadline of every call, in seconds: a hung server fails the scenario instead of hanging it.
TIMEOUT = 10.0
# The trailer that carries the serialized google.rpc.Status of a failed call.
DETAILS_KEY = "grpc-status-details-bin"
# The full name of the detail message that carries the ToolError, the end of its type_url.
TOOL_ERROR_TYPE = "toolruntime.v1.ToolError"


# ---------------------------------------------------------------------------------------------
# Conversions: protobuf messages to the JSON the mocha tests check.


def to_struct(value):
    """A google.protobuf.Struct holding the JSON object `value`."""
    struct = struct_pb2.Struct()
    struct.update(value)
    return struct


def struct_json(struct):
    """The JSON object that a google.protobuf.Struct holds."""
    return json_format.MessageToDict(struct)


def tool_error_json(error):
    """A toolruntime.v1.ToolError as JSON: tool_name, error_type and details."""
    return {"tool_name": error.tool_name, "error_type": error.error_type, "details": error.details}


def result_json(result):
    """A toolruntime.v1.ToolResult as JSON; its error is None when the message has none."""
    return {
        "success": result.success,
        "output": struct_json(result.output),
        "error": tool_error_json(result.error) if result.HasField("error") else None,
        "duration_ms": result.duration_ms,
        "metadata": struct_json(result.metadata),
    }


def event_kind(event):
    """The name of the field set in a toolruntime.v1 event's `event` oneof ("progress", …)."""
    return event.WhichOneof("event")


def event_json(event):
    """An event as JSON: its sequence, kind and execution_id, and the fields of some kinds.

    A progress event adds its fraction (None when unset) and message, a completed one its result,
    an execution_finished one its success, a deactivated one was_active and a discovered one the
    tool's name. A script that reports more of an event extends the dict this returns.
    """
    kind = event_kind(event)
    observed = {"sequence": event.sequence, "kind": kind, "execution_id": event.execution_id}
    if kind == "progress":
        observed["fraction"] = event.progress.fraction.value if event.progress.HasField("fraction") else None
        observed["message"] = event.progress.message
    elif kind == "completed":
        observed["result"] = result_json(event.completed.result)
    elif kind == "execution_finished":
        observed["success"] = event.execution_finished.success
    elif kind == "deactivated":
        observed["was_active"] = event.deactivated.was_active
    elif kind == "discovered":
        observed["tool_name"] = event.discovered.spec.name
    return observed


# ---------------------------------------------------------------------------------------------
# Calls: one place that turns an RpcError into what the tests check.


def error_json(err):
    """What a failed call showed: its code and message, and the status decoded from the trailer."""
    code = err.code()
    observed = {
        "ok": False,
        "code": code.name,
        "code_number": code.value[0],
        "message": err.details(),
        "status": None,
        "tool_error": None,
    }
    for key, value in err.trailing_metadata() or ():
        if key != DETAILS_KEY:
            continue
        status = rpc_status_pb2.RpcStatus.FromString(value)
        observed["status"] = {
            "code": status.code,
            "message": status.message,
            "detail_types": [detail.type_url for detail in status.details],
        }
        for detail in status.details:
            if detail.type_url.endswith("/" + TOOL_ERROR_TYPE):
                observed["tool_error"] = tool_error_json(tool_pb2.ToolError.FromString(detail.value))
    return observed


def call(method, request):
    """(response, None) when the unary call succeeds, (None, error_json) when it fails."""
    try:
        return method(request, timeout=TIMEOUT), None
    except grpc.RpcError as err:
        return None, error_json(err)


def must(method, request):
    """The response of a unary call that the scenario needs to go on; raises when it fails."""
    response, error = call(method, request)
    if error is not None:
        raise RuntimeError(f"{method} failed: {json.dumps(error)}")
    return response


def collect_events(stream, to_json=event_json):
    """Every event of a stream as `to_json` writes it, and the error that ended it (None when OK)."""
    events = []
    try:
        for response in stream:
            events.append(to_json(response.event))
    except grpc.RpcError as err:
        return events, error_json(err)
    return events, None


# ---------------------------------------------------------------------------------------------
# Running a scenario.


def new_channel(address):
    """An insecure channel to `address`, once it is ready (within TIMEOUT)."""
    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=TIMEOUT)
    return channel


def run(scenarios, name, address, make_client):
    """Runs scenarios[name] with make_client(channel) on a new channel and prints its JSON.

    Exits with a message naming the scenarios when `name` is not one of them.
    """
    scenario = scenarios.get(name)
    if scenario is None:
        sys.exit(f"unknown scenario {name!r}: use one of {', '.join(scenarios)}")
    with new_channel(address) as channel:
        observed = scenario(make_client(channel))
    # allow_nan=False: what the script prints must be JSON that JSON.parse accepts.
    print(json.dumps(observed, allow_nan=False))
