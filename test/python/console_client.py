"""Starts one run over native gRPC with grpcio, for test/browser/console.test.ts.

Usage: /usr/bin/python3 console_client.py STUBS_DIR HOST:PORT TOKEN TOOL INPUTS_JSON

STUBS_DIR holds the modules grpc_tools.protoc generated from proto/toolruntime/v1/*.proto. The run is
started detached (ExecutionService.StartExecution) with "authorization: Bearer TOKEN"; the script
prints ONE JSON object on stdout: {"execution_id": ..., "caller": ..., "state": ...}.
"""

import json
import sys

if len(sys.argv) != 6:
    sys.exit("usage: console_client.py STUBS_DIR HOST:PORT TOKEN TOOL INPUTS_JSON")
STUBS_DIR, ADDRESS, TOKEN, TOOL, INPUTS = sys.argv[1:6]
sys.dont_write_bytecode = True
sys.path.insert(0, STUBS_DIR)

import grpc  # noqa: E402
from google.protobuf import json_format, struct_pb2  # noqa: E402

from toolruntime.v1 import execution_pb2, execution_pb2_grpc  # noqa: E402

inputs = struct_pb2.Struct()
json_format.ParseDict(json.loads(INPUTS), inputs)
with grpc.insecure_channel(ADDRESS) as channel:
    stub = execution_pb2_grpc.ExecutionServiceStub(channel)
    response = stub.StartExecution(
        execution_pb2.StartExecutionRequest(tool_name=TOOL, inputs=inputs),
        metadata=[("authorization", "Bearer " + TOKEN)],
        timeout=30,
    )
print(
    json.dumps(
        {
            "execution_id": response.execution.execution_id,
            "caller": response.execution.caller,
            "state": execution_pb2.ExecutionState.Name(response.execution.state),
        }
    )
)
