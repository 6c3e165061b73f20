"""A small Python library for serving tools to a toolruntime server over its provider protocol.

A provider opens ONE bidirectional gRPC stream to the server (ProviderService.Connect, see
proto/toolruntime/v1/provider.proto), introduces itself with `hello` (its name, its tools, how many
runs it takes at once), is `welcome`d, and then receives run assignments and answers them with
progress, log lines, output chunks and exactly one result each. It opens no port of its own.

Stubs
-----
The library needs the Python modules generated from the contract. They ship beside it, in the
package `toolruntime.v1` (regenerated with `npm run generate:python`), so nothing needs to be
generated: with this folder on sys.path, or installed with pip, they are found. To use stubs of
your own instead, pass their directory as `stubs_dir` to Provider (it is put first on sys.path).

Use
---
    from toolruntime_provider import Provider, tool

    @tool("demo.upper", description="Upper-cases inputs.text.",
          input_schema={"type": "object", "properties": {"text": {"type": "string"}}})
    def upper(inputs, context):
        context.report_progress(0.5, "half way")
        return {"text": inputs.get("text", "").upper()}

    provider = Provider("127.0.0.1:50051", "demo", [upper], max_concurrency=4)
    provider.start()                      # the stream runs in a background thread
    provider.wait_connected(timeout=10)   # True once welcomed
    ...
    provider.close()                      # ends the stream; runs in flight see `cancelled`

A tool function is called as `function(inputs, context)` in a worker thread (a ThreadPoolExecutor
of max_concurrency threads). `inputs` is a plain dict (JSON numbers arrive as floats). It returns
the output, a dict (None means {}), or raises: the run then fails with error_type "HandlerError"
and the exception's text as details. The context (RunContext) offers `report_progress(fraction,
message)`, `log(level, message)`, `emit_output(value)`, the `cancelled` threading.Event (set when
the server cancels the run or the stream ends), `execution_id`, `tool_name`, `deadline` (an aware
UTC datetime) and `remaining()` (seconds until the deadline).
"""

import datetime
import importlib
import queue
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

__all__ = ["Provider", "RunContext", "Tool", "tool"]

# Until the server's welcome says otherwise, how often an idle provider sends a heartbeat (seconds).
DEFAULT_HEARTBEAT_INTERVAL = 1.0
# The spec fields a tool dict may carry, besides "handler" (see ToolSpec in tool.proto).
SPEC_FIELDS = (
    "name",
    "description",
    "tool_type",
    "capabilities",
    "input_schema",
    "output_schema",
    "default_timeout_ms",
    "max_timeout_ms",
    "max_concurrency",
)
_CLOSE = object()


def load_stubs(stubs_dir=None):
    """Imports the generated modules: from `stubs_dir` (put first on sys.path) when given, else the
    `toolruntime.v1` package shipped beside this file.

    Returns a namespace with `provider_pb2`, `provider_pb2_grpc`, `tool_pb2`, `struct_pb2` and
    `json_format`.
    """
    if stubs_dir and stubs_dir not in sys.path:
        sys.path.insert(0, stubs_dir)

    class Stubs:
        provider_pb2 = importlib.import_module("toolruntime.v1.provider_pb2")
        provider_pb2_grpc = importlib.import_module("toolruntime.v1.provider_pb2_grpc")
        tool_pb2 = importlib.import_module("toolruntime.v1.tool_pb2")
        struct_pb2 = importlib.import_module("google.protobuf.struct_pb2")
        json_format = importlib.import_module("google.protobuf.json_format")

    return Stubs


class Tool:
    """A tool: its spec as a plain dict (ToolSpec's field names) and the function that runs it."""

    def __init__(self, spec, handler):
        if not isinstance(spec, dict) or not spec.get("name"):
            raise ValueError("a tool spec is a dict with at least a 'name'")
        unknown = set(spec) - set(SPEC_FIELDS)
        if unknown:
            raise ValueError(f"unknown ToolSpec fields {sorted(unknown)}: use {', '.join(SPEC_FIELDS)}")
        self.spec = dict(spec)
        self.handler = handler

    @property
    def name(self):
        return self.spec["name"]

    @classmethod
    def from_dict(cls, value):
        """A Tool from {"name": ..., "handler": function, ...other ToolSpec fields}."""
        if isinstance(value, Tool):
            return value
        value = dict(value)
        handler = value.pop("handler", None)
        if not callable(handler):
            raise ValueError(f"tool {value.get('name')!r} has no callable 'handler'")
        return cls(value, handler)


def tool(name, **spec):
    """Decorator: turns `function(inputs, context)` into a Tool named `name` with ToolSpec `spec`."""

    def wrap(function):
        return Tool({"name": name, **spec}, function)

    return wrap


class RunContext:
    """What a tool function gets besides its inputs: one run's identity, deadline and channels."""

    def __init__(self, provider, execution_id, tool_name, deadline):
        self._provider = provider
        self.execution_id = execution_id
        self.tool_name = tool_name
        # When the run times out (aware UTC datetime); the server stops waiting then.
        self.deadline = deadline
        # Set when the server cancels the run (or the stream ends): stop promptly.
        self.cancelled = threading.Event()

    def remaining(self):
        """Seconds until the deadline (negative once past it)."""
        return (self.deadline - datetime.datetime.now(datetime.timezone.utc)).total_seconds()

    def report_progress(self, fraction=None, message=""):
        """Reports progress: `fraction` from 0 to 1 (None: no fraction) and what is being done."""
        pb = self._provider.stubs.provider_pb2
        value = -1.0 if fraction is None else float(fraction)
        self._provider._send(
            pb.ConnectRequest(
                progress=pb.ProviderProgress(execution_id=self.execution_id, fraction=value, message=str(message))
            )
        )

    def log(self, level, message):
        """Writes a log line of the run: level "debug", "info", "warn" or "error"."""
        pb = self._provider.stubs.provider_pb2
        self._provider._send(
            pb.ConnectRequest(log=pb.ProviderLog(execution_id=self.execution_id, level=level, message=str(message)))
        )

    def emit_output(self, value):
        """Emits a chunk of partial output: any JSON value."""
        stubs = self._provider.stubs
        pb = stubs.provider_pb2
        chunk = stubs.json_format.ParseDict(value, stubs.struct_pb2.Value())
        self._provider._send(pb.ConnectRequest(output=pb.ProviderOutput(execution_id=self.execution_id, chunk=chunk)))


class Provider:
    """A provider: one stream to the server at `address` serving `tools` (Tool objects or dicts).

    `max_concurrency` (1 to 10,000) is both what the hello declares and the size of the worker
    pool. `token`, when given, is sent as a bearer token. `on_event(kind, detail)`, when given, is
    called (from the stream's threads) with "welcome", "assign", "cancel", "rejected" and "closed".
    """

    def __init__(
        self, address, provider_name, tools, max_concurrency=4, stubs_dir=None, token=None, on_event=None
    ):
        import grpc  # imported here so that a missing grpcio fails with a clear ImportError at use

        self._grpc = grpc
        self.stubs = load_stubs(stubs_dir)
        self.address = address
        self.provider_name = provider_name
        self.tools = {t.name: t for t in (Tool.from_dict(t) for t in tools)}
        if not self.tools:
            raise ValueError("a provider must serve at least one tool")
        self.max_concurrency = int(max_concurrency)
        self._token = token
        self._on_event = on_event or (lambda kind, detail: None)
        self._outgoing = queue.Queue()
        self._runs = {}
        self._runs_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="tool")
        self._heartbeat_interval = DEFAULT_HEARTBEAT_INTERVAL
        self._welcomed = threading.Event()
        self._finished = threading.Event()
        self._closing = False
        self._call = None
        self._thread = None
        # After the stream ended: the error that ended it (None when it ended cleanly or by close).
        self.error = None
        # The connection id of the welcome.
        self.connection_id = None

    # -- the stream ----------------------------------------------------------------------------

    def _spec_message(self, spec):
        stubs = self.stubs
        fields = dict(spec)
        for key in ("input_schema", "output_schema"):
            if key in fields and fields[key] is not None:
                struct = stubs.struct_pb2.Struct()
                struct.update(fields[key])
                fields[key] = struct
        if isinstance(fields.get("capabilities"), dict):
            fields["capabilities"] = stubs.tool_pb2.ToolCapability(**fields["capabilities"])
        return stubs.tool_pb2.ToolSpec(**{k: v for k, v in fields.items() if v is not None})

    def _hello(self):
        pb = self.stubs.provider_pb2
        return pb.ConnectRequest(
            hello=pb.ProviderHello(
                provider_name=self.provider_name,
                tools=[self._spec_message(t.spec) for t in self.tools.values()],
                max_concurrency=self.max_concurrency,
            )
        )

    def _send(self, request):
        self._outgoing.put(request)

    def _requests(self):
        """The request generator of the stream: hello, then the queue, with heartbeats when idle."""
        pb = self.stubs.provider_pb2
        yield self._hello()
        while True:
            # Half the interval, so that a heartbeat always goes out well within it.
            try:
                request = self._outgoing.get(timeout=self._heartbeat_interval / 2)
            except queue.Empty:
                request = pb.ConnectRequest(heartbeat=pb.ProviderHeartbeat())
            if request is _CLOSE:
                return
            yield request

    def _serve(self):
        stub = self.stubs.provider_pb2_grpc.ProviderServiceStub(self._channel)
        metadata = (("authorization", f"Bearer {self._token}"),) if self._token else None
        try:
            # wait_for_ready: a provider started before its server waits for it instead of failing.
            self._call = stub.Connect(self._requests(), metadata=metadata, wait_for_ready=True)
            if self._closing:
                self._call.cancel()
            for response in self._call:
                self._handle(response)
        except self._grpc.RpcError as err:
            if not self._closing:
                self.error = err
        except Exception as err:  # a bug in a handler of a server message: end the stream
            self.error = err
            traceback.print_exc()
            if self._call is not None:
                self._call.cancel()
        finally:
            self._outgoing.put(_CLOSE)
            with self._runs_lock:
                for context in self._runs.values():
                    context.cancelled.set()
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._channel.close()
            self._finished.set()
            self._on_event("closed", self.error)

    def _handle(self, response):
        pb = self.stubs.provider_pb2
        kind = response.WhichOneof("message")
        if kind == "welcome":
            welcome = response.welcome
            if welcome.heartbeat_interval_ms:
                self._heartbeat_interval = welcome.heartbeat_interval_ms / 1000.0
            self.connection_id = welcome.connection_id
            self._welcomed.set()
            self._on_event("welcome", welcome.connection_id)
        elif kind == "heartbeat":
            self._send(pb.ConnectRequest(heartbeat=pb.ProviderHeartbeat()))
        elif kind == "assign":
            self._assign(response.assign)
        elif kind == "cancel":
            with self._runs_lock:
                context = self._runs.get(response.cancel.execution_id)
            if context is not None:
                context.cancelled.set()
            self._on_event("cancel", response.cancel.execution_id)
        elif kind == "rejected":
            self._on_event("rejected", (response.rejected.execution_id, response.rejected.reason))

    def _assign(self, assignment):
        stamp = assignment.deadline
        if assignment.HasField("deadline"):
            deadline = datetime.datetime.fromtimestamp(stamp.seconds + stamp.nanos / 1e9, datetime.timezone.utc)
        else:
            deadline = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=30)
        context = RunContext(self, assignment.execution_id, assignment.tool_name, deadline)
        inputs = self.stubs.json_format.MessageToDict(assignment.inputs)
        with self._runs_lock:
            self._runs[context.execution_id] = context
        self._on_event("assign", (context.execution_id, context.tool_name))
        try:
            self._executor.submit(self._run, context, inputs)
        except RuntimeError:  # the pool is shut down: the stream is ending
            self._finish(context, None, "the provider is shutting down")

    def _run(self, context, inputs):
        """Runs one assignment in a worker thread and sends its one result."""
        output, error = None, None
        try:
            chosen = self.tools.get(context.tool_name)
            if chosen is None:
                raise LookupError(f"this provider does not serve {context.tool_name!r}")
            output = chosen.handler(inputs, context)
            if output is None:
                output = {}
            if not isinstance(output, dict):
                raise TypeError(f"a tool returns a dict, not {type(output).__name__}")
        except BaseException as err:  # noqa: BLE001 - every failure becomes the run's result
            error = str(err) or type(err).__name__
        self._finish(context, output, error)

    def _finish(self, context, output, error):
        stubs = self.stubs
        pb = stubs.provider_pb2
        result = pb.ProviderResult(execution_id=context.execution_id)
        if error is None:
            try:
                result.output.update(output)
            except Exception as err:  # not JSON: report it as the handler's failure
                result = pb.ProviderResult(execution_id=context.execution_id)
                error = f"the output is not a JSON object: {err}"
        if error is not None:
            result.error.CopyFrom(
                stubs.tool_pb2.ToolError(tool_name=context.tool_name, error_type="HandlerError", details=error)
            )
        with self._runs_lock:
            self._runs.pop(context.execution_id, None)
        self._send(pb.ConnectRequest(result=result))

    # -- the public interface ------------------------------------------------------------------

    def start(self):
        """Opens the stream in a background thread and returns at once."""
        if self._thread is not None:
            raise RuntimeError("the provider was already started")
        self._channel = self._grpc.insecure_channel(self.address)
        self._thread = threading.Thread(target=self._serve, name="toolruntime-provider", daemon=True)
        self._thread.start()
        return self

    def wait_connected(self, timeout=None):
        """True once the server welcomed the provider; False when the stream ended first or on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._welcomed.is_set():
            if self._finished.is_set():
                return self._welcomed.is_set()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            self._welcomed.wait(0.05 if left is None else min(0.05, left))
        return True

    def wait_closed(self, timeout=None):
        """Waits until the stream ended; True when it did within `timeout`."""
        return self._finished.wait(timeout)

    def serve_forever(self):
        """start() and wait until the stream ends (close() from a signal handler ends it)."""
        if self._thread is None:
            self.start()
        # A wait with a timeout, so that the main thread still runs signal handlers.
        while not self._finished.wait(0.2):
            pass
        return self.error

    def close(self):
        """Ends the stream: runs in flight see `cancelled` set, and the server fails them."""
        self._closing = True
        self._outgoing.put(_CLOSE)
        if self._call is not None:
            self._call.cancel()
