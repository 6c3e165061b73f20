"""Runs one tool with RunnerService.RunTool as a grpcio client, for test/wire/python-provider.test.ts.

Usage: /usr/bin/python3 provider_client.py STUBS_DIR HOST:PORT TOOL_NAME INPUTS_JSON

STUBS_DIR holds the modules that grpc_tools.protoc generated from proto/toolruntime/v1/*.proto and
test/python/rpc_status.proto. The script streams the run's lifecycle events and prints ONE JSON
object: {"events": [...], "error": null or the RpcError seen}. Each event is written as
grpc_observations.event_json writes it, plus the chunk of an output event and the level and
message of a log event. It asserts nothing itself: the mocha test does.
"""

import json
import sys

if len(sys.argv) != 5:
    sys.exit("usage: provider_client.py STUBS_DIR HOST:PORT TOOL_NAME INPUTS_JSON")
STUBS_DIR, ADDRESS, TOOL_NAME, INPUTS_JSON = sys.argv[1:5]
# No __pycache__ in test/python (or in STUBS_DIR) for the modules imported below.
sys.dont_write_bytecode = True
# The stubs go on sys.path first: grpc_observations and the imports below need the generated modules.
sys.path.insert(0, STUBS_DIR)

from google.protobuf import json_format  # noqa: E402

from grpc_observations import TIMEOUT, collect_events, event_json, event_kind, run, to_struct  # noqa: E402
from toolruntime.v1 import runner_pb2, runner_pb2_grpc  # noqa: E402


def provider_event_json(event):
    """event_json, plus an output event's chunk and a log event's level and message."""
    observed = event_json(event)
    kind = event_kind(event)
    if kind == "output":
        observed["chunk"] = json_format.MessageToDict(event.output.chunk)
    elif kind == "log":
        observed["level"] = event.log.level
        observed["message"] = event.log.message
    return observed


def run_tool(runner):
    request = runner_pb2.RunToolRequest(tool_name=TOOL_NAME, inputs=to_struct(json.loads(INPUTS_JSON)))
    events, error = collect_events(runner.RunTool(request, timeout=TIMEOUT), provider_event_json)
    return {"events": events, "error": error}


if __name__ == "__main__":
    run({"run_tool": run_tool}, "run_tool", ADDRESS, runner_pb2_grpc.RunnerServiceStub)
