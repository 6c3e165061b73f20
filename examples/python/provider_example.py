"""A runnable Python tool provider: serves pyexample.word_count and pyexample.wait to a toolruntime server.

Usage: /usr/bin/python3 examples/python/provider_example.py [STUBS_DIR] HOST:PORT

HOST:PORT is the server's gRPC port. STUBS_DIR, when given, holds modules generated from
proto/toolruntime/v1/*.proto to use instead of those shipped beside the library (see README.md next
to this file). The script prints "connected" on
stdout once the server welcomed it, a line per run it starts, and "cancelled EXECUTION_ID" when a
run of pyexample.wait is cancelled. On SIGTERM or SIGINT it drains (takes no new runs, lets those it
holds finish for up to 10 s, hands back the rest) and exits with 0; it exits with 1 when the server
refuses it. When the server drops the stream, it reconnects with backoff and prints "connected" again.
"""

import os
import signal
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from toolruntime_provider import Provider, tool  # noqa: E402

# How many words pyexample.word_count counts between two progress reports, unless told otherwise.
DEFAULT_CHUNK = 5
# How long pyexample.wait sleeps between two looks at its cancellation, in seconds.
WAIT_STEP = 0.05


def say(line):
    """Prints a line on stdout at once (the test and the README read it)."""
    print(line, flush=True)


@tool(
    "pyexample.word_count",
    description="Counts the words of inputs.text, reporting progress and partial counts per chunk of words.",
    capabilities={"read_only": True, "idempotent": True},
    input_schema={
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "chunk_size": {"type": "integer", "minimum": 1},
        },
        "required": ["text"],
    },
    output_schema={
        "type": "object",
        "properties": {"words": {"type": "integer"}, "chunks": {"type": "integer"}},
        "required": ["words", "chunks"],
    },
)
def word_count(inputs, context):
    words = str(inputs.get("text", "")).split()
    size = max(1, int(inputs.get("chunk_size", DEFAULT_CHUNK)))
    chunks = [words[i : i + size] for i in range(0, len(words), size)]
    counted = 0
    for index, chunk in enumerate(chunks, start=1):
        if context.cancelled.is_set():
            raise RuntimeError("cancelled")
        counted += len(chunk)
        context.report_progress(index / len(chunks), f"counted {counted} of {len(words)} words")
        context.emit_output({"chunk": index, "words_so_far": counted})
    context.log("info", f"counted {counted} words in {len(chunks)} chunks")
    return {"words": counted, "chunks": len(chunks)}


@tool(
    "pyexample.wait",
    description="Waits inputs.seconds, in small steps, stopping promptly when cancelled.",
    capabilities={"read_only": True},
    input_schema={
        "type": "object",
        "properties": {"seconds": {"type": "number", "minimum": 0}},
        "required": ["seconds"],
    },
    default_timeout_ms=120_000,
    max_timeout_ms=600_000,
)
def wait(inputs, context):
    seconds = float(inputs.get("seconds", 0))
    say(f"waiting {context.execution_id} {seconds}")
    context.report_progress(0.0, f"waiting {seconds} s")
    # The run ends at the deadline anyway: waiting longer would be wasted.
    left = min(seconds, max(0.0, context.remaining()))
    steps = 0
    while left > 0:
        # Event.wait returns True as soon as the cancellation arrives.
        if context.cancelled.wait(min(WAIT_STEP, left)):
            context.log("warn", "cancelled by the server")
            say(f"cancelled {context.execution_id}")
            raise RuntimeError("cancelled")
        left -= WAIT_STEP
        steps += 1
        if steps % 20 == 0:
            context.report_progress(min(1.0, steps * WAIT_STEP / seconds), "still waiting")
    return {"waited_seconds": seconds}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: provider_example.py [STUBS_DIR] HOST:PORT")
    stubs_dir, address = (None, *sys.argv[1:]) if len(sys.argv) == 2 else sys.argv[1:3]
    welcomes = []

    def on_event(kind, _detail):
        # The first welcome is announced below; every later one is a reconnection.
        if kind == "welcome":
            welcomes.append(kind)
            if len(welcomes) > 1:
                say("connected")

    provider = Provider(
        address, "pyexample", [word_count, wait], max_concurrency=8, stubs_dir=stubs_dir, on_event=on_event
    )

    def stop(signum, _frame):
        say(f"stopping on signal {signum}")
        provider.drain(grace=10)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    provider.start()
    if not provider.wait_connected(timeout=30):
        provider.close()
        provider.wait_closed(5)
        sys.stderr.write(f"the server did not welcome the provider: {provider.error}\n")
        sys.exit(1)
    say("connected")
    error = provider.serve_forever()
    if error is not None:
        sys.stderr.write(f"the provider stream ended: {error}\n")
        sys.exit(1)
    say("stopped")


if __name__ == "__main__":
    main()
