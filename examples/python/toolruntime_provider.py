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
    provider.drain(grace=10)              # or close(): stops at once, runs in flight see `cancelled`

A tool function is called as `function(inputs, context)` in a worker thread (a ThreadPoolExecutor
of max_concurrency threads). `inputs` is a plain dict (JSON numbers arrive as floats). It behaves as
a tool in the server's own process would:

- it returns the output, a dict; returning None (nothing) or anything but a dict fails the run with
  error_type "OutputValidationError", as does output that is not JSON;
- it raises: the run fails with error_type "HandlerError" and details "handler of "TOOL" failed:
  TYPE: TEXT" (the exception's type and text), or with the exception's own `error_type` when it has
  one (a string attribute such as "QuotaExceeded"). "ProviderError" is kept for the provider
  itself failing: it disconnected, crashed or fell silent.

The context (RunContext) offers `report_progress(fraction, message)`, `log(level, message)`,
`emit_output(value)`, the `cancelled` threading.Event (set when the server cancels the run, the
stream ends, or a drain hands the run back), `execution_id`, `tool_name`, `deadline` (an aware
UTC datetime) and `remaining()` (seconds until the deadline).

Connection
----------
The stream goes to the server's gRPC port, plaintext by default; pass `root_certificates` for TLS
and `certificate_chain` and `private_key` as well for mutual TLS. A token is refused over plaintext
to a host other than loopback unless `allow_insecure_token=True`. When the server drops the stream,
the provider reconnects with backoff (0.25 s doubling to 10 s, jittered) and announces its tools
again; `drain(grace)` stops it gracefully (see Provider.drain).
"""

import datetime
import importlib
import json
import ipaddress
import queue
import random
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
# What the server keeps of a run's text, in characters (cut here too, so that no message is over the
# stream's limit: one would end the stream and every run on it).
MAX_LOG_MESSAGE_LENGTH = 4096
MAX_PROGRESS_MESSAGE_LENGTH = 1024
MAX_ERROR_DETAILS_LENGTH = 1000
# The server's message limit (bytes) and the largest output chunk it forwards (JSON and protobuf).
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
MAX_OUTPUT_CHUNK_BYTES = 1024 * 1024
# Room a result leaves for what travels with its output on the server's side (as output-fits.ts).
RESULT_RESERVE_BYTES = 64 * 1024


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

    def __init__(self, provider, session, execution_id, tool_name, deadline):
        self._provider = provider
        self._session = session
        self.execution_id = execution_id
        self.tool_name = tool_name
        # When the run times out (aware UTC datetime); the server stops waiting then.
        self.deadline = deadline
        # Set when the server cancels the run (or the stream ends, or a drain hands it back): stop promptly.
        self.cancelled = threading.Event()

    def remaining(self):
        """Seconds until the deadline (negative once past it)."""
        return (self.deadline - datetime.datetime.now(datetime.timezone.utc)).total_seconds()

    def report_progress(self, fraction=None, message=""):
        """Reports progress: `fraction` from 0 to 1 (None: no fraction) and what is being done."""
        pb = self._provider.stubs.provider_pb2
        value = -1.0 if fraction is None else float(fraction)
        if fraction is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"progress fraction {fraction!r} is outside 0..1")
        self._session.send_for(
            self.execution_id,
            pb.ConnectRequest(
                progress=pb.ProviderProgress(
                    execution_id=self.execution_id,
                    fraction=value,
                    message=str(message)[:MAX_PROGRESS_MESSAGE_LENGTH],
                )
            ),
        )

    def log(self, level, message):
        """Writes a log line of the run: level "debug", "info", "warn" or "error"."""
        pb = self._provider.stubs.provider_pb2
        self._session.send_for(
            self.execution_id,
            pb.ConnectRequest(
                log=pb.ProviderLog(
                    execution_id=self.execution_id, level=level, message=str(message)[:MAX_LOG_MESSAGE_LENGTH]
                )
            ),
        )

    def emit_output(self, value):
        """Emits a chunk of partial output: any JSON value (a TypeError for anything else)."""
        stubs = self._provider.stubs
        pb = stubs.provider_pb2
        try:
            chunk = stubs.json_format.ParseDict(value, stubs.struct_pb2.Value())
        except Exception as err:  # noqa: BLE001 - the same TypeError whatever the parser raised
            raise TypeError(f"output chunk is not a JSON value: {err}") from err
        # Within what the server forwards, as JSON and as protobuf: a larger chunk fails the run.
        json_bytes = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
        encoded = chunk.ByteSize()
        if max(json_bytes, encoded) > MAX_OUTPUT_CHUNK_BYTES:
            raise TypeError(
                f"output chunk is larger than the limit of {MAX_OUTPUT_CHUNK_BYTES} bytes "
                f"({json_bytes} bytes of JSON, {encoded} bytes once encoded as protobuf)"
            )
        self._session.send_for(
            self.execution_id,
            pb.ConnectRequest(output=pb.ProviderOutput(execution_id=self.execution_id, chunk=chunk)),
        )


class _Session:
    """One stream to the server: its outgoing queue and the runs it was assigned."""

    def __init__(self):
        self.outgoing = queue.Queue()
        self.runs = {}
        self.lock = threading.Lock()
        # Runs handed back while draining: whatever they produce later is not sent.
        self.handed_back = set()
        self.draining = False
        self.ended = False
        self.call = None

    def send(self, request):
        self.outgoing.put(request)

    def send_for(self, execution_id, request):
        """Sends a message about a run, unless the run was handed back or the stream ended."""
        with self.lock:
            if self.ended or execution_id in self.handed_back:
                return
        self.outgoing.put(request)

    def end(self):
        """Ends the request stream after the messages already queued."""
        self.outgoing.put(_CLOSE)


def reconnect_delay(attempt, initial=0.25, maximum=10.0, random_value=None):
    """Seconds before reconnect attempt `attempt` (0 first): `initial` doubled per earlier attempt,
    capped at `maximum`, jittered to between half and all of it."""
    base = min(max(initial, maximum), initial * (2 ** min(attempt, 30)))
    value = random.random() if random_value is None else random_value
    return base / 2 + value * base / 2


def is_loopback_host(host):
    """Whether `host` names this machine only: localhost, 127.0.0.0/8, ::1 or ::ffff:127.x.y.z."""
    lower = host.lower()
    if lower == "localhost" or lower.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(lower)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _host_of(address):
    if address.startswith("["):
        return address[1 : address.find("]")]
    return address.rsplit(":", 1)[0]


def _read(value):
    """PEM contents from bytes, a str of PEM text, or a path."""
    if value is None or isinstance(value, bytes):
        return value
    if "-----BEGIN" in value:
        return value.encode()
    with open(value, "rb") as handle:
        return handle.read()


class Provider:
    """A provider: one stream to the server at `address` serving `tools` (Tool objects or dicts).

    `max_concurrency` (1 to 10,000) is both what the hello declares and the size of the worker
    pool. `token`, when given, is sent as a bearer token. TLS: `root_certificates` (the CA the
    server's certificate chains to; the system's when None and `tls` is True), and for mutual TLS
    `certificate_chain` and `private_key`, each PEM bytes, PEM text or a file path; any of them
    turns TLS on. A token is never sent over plaintext to a host other than loopback unless
    `allow_insecure_token` is True (ValueError). When the server drops the stream, the provider
    reconnects after `reconnect_initial` seconds (default 0.25), doubling up to `reconnect_max`
    (default 10), each delay jittered to between half and all of it, and announces its tools again;
    `reconnect=False` ends it with the first stream (UNAVAILABLE at once when the server cannot be
    reached or its TLS handshake fails). A refusal (INVALID_ARGUMENT, ALREADY_EXISTS,
    PERMISSION_DENIED, UNAUTHENTICATED...) ends it too. `on_event(kind, detail)`, when given, is
    called (from the stream's threads) with "welcome", "assign", "cancel", "rejected",
    "draining" (the server's reason: it stops, so the provider finishes its runs and connects again),
    "disconnected" ((error, delay in seconds)) and "closed".
    """

    def __init__(
        self,
        address,
        provider_name,
        tools,
        max_concurrency=4,
        stubs_dir=None,
        token=None,
        on_event=None,
        tls=False,
        root_certificates=None,
        certificate_chain=None,
        private_key=None,
        allow_insecure_token=False,
        reconnect=True,
        reconnect_initial=0.25,
        reconnect_max=10.0,
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
        self._root_certificates = _read(root_certificates)
        self._certificate_chain = _read(certificate_chain)
        self._private_key = _read(private_key)
        if (self._certificate_chain is None) != (self._private_key is None):
            raise ValueError("certificate_chain and private_key go together: pass both for mutual TLS")
        self._tls = bool(tls) or any(
            v is not None for v in (self._root_certificates, self._certificate_chain, self._private_key)
        )
        if token and not self._tls and not is_loopback_host(_host_of(address)) and not allow_insecure_token:
            raise ValueError(
                f"refusing to send the token in clear to {address!r}: pass root_certificates (TLS), "
                "or allow_insecure_token=True on a network you trust"
            )
        self._reconnect = reconnect
        self._reconnect_initial = float(reconnect_initial)
        self._reconnect_max = float(reconnect_max)
        self._on_event = on_event or (lambda kind, detail: None)
        self._executor = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="tool")
        self._heartbeat_interval = DEFAULT_HEARTBEAT_INTERVAL
        self._welcomed = threading.Event()
        self._finished = threading.Event()
        self._wake = threading.Event()
        self._closing = False
        self._draining = False
        self._session = None
        self._channel = None
        self._thread = None
        # After the provider stopped: the error that ended it (None when it ended by close or drain).
        self.error = None
        # The connection id of the latest welcome.
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

    def _requests(self, session):
        """The request generator of a stream: hello, then its queue, with heartbeats when idle."""
        pb = self.stubs.provider_pb2
        yield self._hello()
        while True:
            # Half the interval, so that a heartbeat always goes out well within it.
            try:
                request = session.outgoing.get(timeout=self._heartbeat_interval / 2)
            except queue.Empty:
                request = pb.ConnectRequest(heartbeat=pb.ProviderHeartbeat())
            if request is _CLOSE:
                return
            yield request

    def _open_channel(self):
        grpc = self._grpc
        # The channel's own reconnection follows the provider's backoff.
        options = [
            ("grpc.initial_reconnect_backoff_ms", max(1, int(self._reconnect_initial * 1000))),
            ("grpc.min_reconnect_backoff_ms", max(1, int(self._reconnect_initial * 1000))),
            ("grpc.max_reconnect_backoff_ms", max(1, int(self._reconnect_max * 1000))),
        ]
        if not self._tls:
            return grpc.insecure_channel(self.address, options=options)
        credentials = grpc.ssl_channel_credentials(
            root_certificates=self._root_certificates,
            private_key=self._private_key,
            certificate_chain=self._certificate_chain,
        )
        return grpc.secure_channel(self.address, credentials, options=options)

    def _stream_once(self):
        """One stream, from hello to its end. Returns (welcomed, error)."""
        stub = self.stubs.provider_pb2_grpc.ProviderServiceStub(self._channel)
        metadata = (("authorization", f"Bearer {self._token}"),) if self._token else None
        session = _Session()
        self._session = session
        welcomed = False
        try:
            # wait_for_ready: a provider started before its server waits for it instead of failing.
            # Not with reconnect=False: a server it cannot reach (down, or refusing its TLS
            # handshake) then ends it with UNAVAILABLE instead of a wait without end.
            session.call = stub.Connect(self._requests(session), metadata=metadata, wait_for_ready=self._reconnect)
            if self._closing:
                session.call.cancel()
            for response in session.call:
                if response.WhichOneof("message") == "welcome":
                    welcomed = True
                self._handle(session, response)
            return welcomed, None
        except self._grpc.RpcError as err:
            return welcomed, None if self._closing else err
        finally:
            with session.lock:
                session.ended = True
                contexts = list(session.runs.values())
            session.end()
            for context in contexts:
                context.cancelled.set()
            self.connection_id = None

    def _serve(self):
        attempt = 0
        try:
            while True:
                welcomed, error = self._stream_once()
                if self._closing or self._draining:
                    return
                code = error.code() if error is not None and hasattr(error, "code") else None
                if not self._reconnect or code in self._refusals():
                    self.error = error
                    return
                if welcomed:
                    attempt = 0
                delay = reconnect_delay(attempt, self._reconnect_initial, self._reconnect_max)
                attempt += 1
                self._on_event("disconnected", (error, delay))
                if self._wake.wait(delay) and (self._closing or self._draining):
                    return
        except Exception as err:  # a bug in a handler of a server message: end the provider
            self.error = err
            traceback.print_exc()
        finally:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._channel.close()
            self._finished.set()
            self._on_event("closed", self.error)

    def _refusals(self):
        codes = self._grpc.StatusCode
        return {
            codes.INVALID_ARGUMENT,
            codes.ALREADY_EXISTS,
            codes.PERMISSION_DENIED,
            codes.UNAUTHENTICATED,
            codes.UNIMPLEMENTED,
            codes.FAILED_PRECONDITION,
        }

    def _handle(self, session, response):
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
            session.send(pb.ConnectRequest(heartbeat=pb.ProviderHeartbeat()))
        elif kind == "assign":
            self._assign(session, response.assign)
        elif kind == "cancel":
            with session.lock:
                context = session.runs.get(response.cancel.execution_id)
            if context is not None:
                context.cancelled.set()
            self._on_event("cancel", response.cancel.execution_id)
        elif kind == "rejected":
            self._on_event("rejected", (response.rejected.execution_id, response.rejected.reason))
        elif kind == "draining":
            # The server stops: finish the runs held, then end this stream; the provider then
            # connects again (to another replica, behind a load balancer), as after any stream.
            self._on_event("draining", response.draining.reason)
            with session.lock:
                already = session.draining
                session.draining = True
                idle = not session.runs
            if not already and idle:
                session.end()

    def _assign(self, session, assignment):
        pb = self.stubs.provider_pb2
        if session.draining:
            session.send(
                pb.ConnectRequest(
                    hand_back=pb.ProviderHandBack(
                        execution_id=assignment.execution_id, reason="the provider is draining"
                    )
                )
            )
            return
        stamp = assignment.deadline
        if assignment.HasField("deadline"):
            deadline = datetime.datetime.fromtimestamp(stamp.seconds + stamp.nanos / 1e9, datetime.timezone.utc)
        else:
            deadline = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=30)
        context = RunContext(self, session, assignment.execution_id, assignment.tool_name, deadline)
        inputs = self.stubs.json_format.MessageToDict(assignment.inputs)
        with session.lock:
            session.runs[context.execution_id] = context
        self._on_event("assign", (context.execution_id, context.tool_name))
        try:
            self._executor.submit(self._run, context, inputs)
        except RuntimeError:  # the pool is shut down: the provider is stopping
            self._finish(context, None, ("HandlerError", "the provider is shutting down"))

    def _run(self, context, inputs):
        """Runs one assignment in a worker thread and sends its one result."""
        output, error = None, None
        try:
            chosen = self.tools.get(context.tool_name)
            if chosen is None:
                raise LookupError(f"this provider does not serve {context.tool_name!r}")
            output = chosen.handler(inputs, context)
            if output is not None and not isinstance(output, dict):
                error = ("OutputValidationError", f"output is a {type(output).__name__}: it must be a JSON object (a dict)")
        except BaseException as err:  # noqa: BLE001 - every failure becomes the run's result
            error = (_declared_type(err), _describe(err))
        self._finish(context, output, error)

    def _finish(self, context, output, error):
        """Sends a run's result. None output without error: the handler returned nothing, and the
        server fails the run as it fails an in-process handler that returns nothing."""
        stubs = self.stubs
        pb = stubs.provider_pb2
        session = context._session
        result = pb.ProviderResult(execution_id=context.execution_id)
        if error is None and output is not None:
            try:
                result.output.update(output)
                result.output.SetInParent()
            except Exception as err:  # noqa: BLE001 - not JSON: the output is invalid
                result = pb.ProviderResult(execution_id=context.execution_id)
                error = ("OutputValidationError", f"output is not a JSON object: {err}")
        room = MAX_MESSAGE_BYTES - RESULT_RESERVE_BYTES
        if error is None and result.ByteSize() > room:
            size = result.ByteSize()
            result = pb.ProviderResult(execution_id=context.execution_id)
            error = (
                "OutputValidationError",
                f"output is larger than the limit of {room} bytes once encoded as protobuf ({size} bytes)",
            )
        if error is not None:
            result.error.CopyFrom(
                stubs.tool_pb2.ToolError(tool_name=context.tool_name, error_type=error[0], details=error[1])
            )
        session.send_for(context.execution_id, pb.ConnectRequest(result=result))
        with session.lock:
            session.runs.pop(context.execution_id, None)
            idle = session.draining and not session.runs
        if idle:
            session.end()

    # -- the public interface ------------------------------------------------------------------

    def start(self):
        """Opens the stream in a background thread and returns at once."""
        if self._thread is not None:
            raise RuntimeError("the provider was already started")
        self._channel = self._open_channel()
        self._thread = threading.Thread(target=self._serve, name="toolruntime-provider", daemon=True)
        self._thread.start()
        return self

    def wait_connected(self, timeout=None):
        """True once the server welcomed the provider; False when it stopped first or on timeout."""
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
        """Waits until the provider stopped; True when it did within `timeout`."""
        return self._finished.wait(timeout)

    def serve_forever(self):
        """start() and wait until the provider stops (close() or drain() from a signal handler)."""
        if self._thread is None:
            self.start()
        # A wait with a timeout, so that the main thread still runs signal handlers.
        while not self._finished.wait(0.2):
            pass
        return self.error

    def close(self):
        """Ends the stream at once: runs in flight see `cancelled` set, and the server fails them."""
        self._closing = True
        self._wake.set()
        session = self._session
        if session is not None:
            session.end()
            if session.call is not None:
                session.call.cancel()

    def drain(self, grace=10.0):
        """Stops gracefully: tells the server to assign nothing more, lets the runs in flight finish
        for up to `grace` seconds, hands the others back (the server assigns them elsewhere; here
        they see `cancelled` set), then ends the stream. Returns without waiting: see wait_closed."""
        if self._draining or self._closing:
            return
        self._draining = True
        self._wake.set()
        session = self._session
        if session is None:
            self.close()
            return
        pb = self.stubs.provider_pb2
        with session.lock:
            session.draining = True
            idle = not session.runs
        session.send(pb.ConnectRequest(drain=pb.ProviderDrain(reason="the provider is stopping")))
        if idle:
            session.end()
            return

        def hand_back():
            with session.lock:
                contexts = list(session.runs.values())
                session.handed_back.update(c.execution_id for c in contexts)
            for context in contexts:
                session.send(
                    pb.ConnectRequest(
                        hand_back=pb.ProviderHandBack(execution_id=context.execution_id, reason="the provider is stopping")
                    )
                )
                context.cancelled.set()
            session.end()

        timer = threading.Timer(grace, hand_back)
        timer.daemon = True
        timer.start()


def _declared_type(err):
    """The error type a raised exception declares with a string `error_type` attribute, else HandlerError."""
    declared = getattr(err, "error_type", None)
    return declared if isinstance(declared, str) and declared else "HandlerError"


def _describe(err):
    """What the caller reads after "handler of TOOL failed: ": the exception's type and text."""
    text = str(err)
    described = f"{type(err).__name__}: {text}" if text else type(err).__name__
    # Cut as the server cuts it: a longer text could make the result over the stream's limit.
    if len(described) > MAX_ERROR_DETAILS_LENGTH:
        return described[: MAX_ERROR_DETAILS_LENGTH - 3] + "..."
    return described
