"""A grpcio client of the tools toolruntime imports from an MCP server, for test/wire/mcp-import.test.ts.

Usage: /usr/bin/python3 mcp_import_client.py STUBS_DIR HOST:PORT SCENARIO

The server imports the fixture MCP server (test/fixtures/mcp-fixture-server.ts) as "fixture". The
script runs one scenario against the gRPC port and prints ONE JSON object with what it observed;
the mocha test asserts.
"""

import sys

if len(sys.argv) != 4:
    sys.exit("usage: mcp_import_client.py STUBS_DIR HOST:PORT SCENARIO")
STUBS_DIR, ADDRESS, SCENARIO = sys.argv[1:4]
sys.dont_write_bytecode = True
sys.path.insert(0, STUBS_DIR)

from grpc_observations import TIMEOUT, collect_events, event_json, run, to_struct  # noqa: E402
from toolruntime.v1 import registry_pb2, registry_pb2_grpc  # noqa: E402
from toolruntime.v1 import runner_pb2, runner_pb2_grpc  # noqa: E402

CHANGE_TYPES = registry_pb2.ToolChangeType
PREFIX = "mcp.fixture."


class Client:
    def __init__(self, channel):
        self.registry = registry_pb2_grpc.RegistryServiceStub(channel)
        self.runner = runner_pb2_grpc.RunnerServiceStub(channel)

    def run_tool(self, name, inputs):
        stream = self.runner.RunTool(
            runner_pb2.RunToolRequest(tool_name=name, inputs=to_struct(inputs)), timeout=TIMEOUT
        )
        events, error = collect_events(stream, event_json)
        return {"events": events, "error": error}


def change_json(message):
    spec = message.spec
    return {
        "type": CHANGE_TYPES.Name(message.type),
        "name": spec.name if message.HasField("spec") else None,
        "tool_type": spec.tool_type,
        "has_handler": spec.has_handler,
        "writes": spec.capabilities.writes,
        "read_only": spec.capabilities.read_only,
        "idempotent": spec.capabilities.idempotent,
    }


def tour(client):
    """Watches the imported tools, runs each kind, and sees a tool added at runtime."""
    watch = client.registry.WatchTools(registry_pb2.WatchToolsRequest(), timeout=TIMEOUT)
    snapshot = []
    for message in watch:
        if message.type == CHANGE_TYPES.TOOL_CHANGE_TYPE_SNAPSHOT_END:
            break
        if message.spec.name.startswith(PREFIX):
            snapshot.append(change_json(message))
    slow = client.run_tool(PREFIX + "slow", {"steps": 3, "interval_ms": 20})
    failing = client.run_tool(PREFIX + "fail", {})
    mapped = client.run_tool(PREFIX + "needs_mapping", {})
    added = client.run_tool(PREFIX + "add_later", {})
    live = []
    for message in watch:
        if message.type == CHANGE_TYPES.TOOL_CHANGE_TYPE_HEARTBEAT:
            continue
        live.append(change_json(message))
        if message.spec.name == PREFIX + "late_tool":
            break
    watch.cancel()
    late = client.run_tool(PREFIX + "late_tool", {})
    return {"snapshot": snapshot, "slow": slow, "fail": failing, "mapped": mapped, "added": added, "live": live, "late": late}


run({"tour": tour}, SCENARIO, ADDRESS, Client)
