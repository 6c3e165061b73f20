"""A Python provider for test/wire/python-provider.test.ts: tools that misbehave as in-process ones do.

Usage: /usr/bin/python3 provider_fixture.py STUBS_DIR HOST:PORT

Serves pyfix.throws (raises ValueError), pyfix.quota (raises an exception with its own error_type),
pyfix.nothing (returns None), pyfix.upper, pyfix.loud (logs, reports progress and emits a chunk
larger than a message may be) and pyfix.big (returns output larger than a message may be). Prints
"connected" on each welcome (so a reconnect prints it again), "draining: REASON" when the server
stops, and, before connecting, "refused: MESSAGE" for a token to a non-loopback address
over plaintext. Stops on SIGTERM.
"""

import os
import signal
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))

from toolruntime_provider import Provider, tool  # noqa: E402


class QuotaExceeded(Exception):
    error_type = "QuotaExceeded"


@tool("pyfix.throws")
def throws(inputs, context):
    raise ValueError("disk full")


@tool("pyfix.quota")
def quota(inputs, context):
    raise QuotaExceeded("over the daily quota")


@tool("pyfix.nothing")
def nothing(inputs, context):
    return None


@tool("pyfix.upper")
def upper(inputs, context):
    return {"text": str(inputs.get("text", "")).upper()}


FIVE_MEGABYTES = "x" * (5 * 1024 * 1024)


@tool("pyfix.loud")
def loud(inputs, context):
    context.log("info", FIVE_MEGABYTES)
    context.report_progress(0.5, FIVE_MEGABYTES)
    try:
        context.emit_output(FIVE_MEGABYTES)
        return {"chunk": "accepted"}
    except TypeError as err:
        return {"chunk": str(err)}


@tool("pyfix.big")
def big(inputs, context):
    return {"text": FIVE_MEGABYTES}


def main():
    stubs_dir, address = sys.argv[1:3]
    try:
        Provider("10.1.2.3:50051", "pyfix", [upper], stubs_dir=stubs_dir, token="secret")
    except ValueError as err:
        print(f"refused: {err}", flush=True)

    def on_event(kind, _detail):
        if kind == "welcome":
            print("connected", flush=True)
        elif kind == "draining":
            print(f"draining: {_detail}", flush=True)

    provider = Provider(
        address,
        "pyfix",
        [throws, quota, nothing, upper, loud, big],
        stubs_dir=stubs_dir,
        on_event=on_event,
        reconnect_initial=0.02,
        reconnect_max=0.2,
    )
    signal.signal(signal.SIGTERM, lambda *_: provider.close())
    provider.serve_forever()


if __name__ == "__main__":
    main()
