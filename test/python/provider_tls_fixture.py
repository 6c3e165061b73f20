"""A Python provider for test/wire/python-provider-tls.test.ts: the library over TLS, mutual TLS, and a drain.

Usage: /usr/bin/python3 provider_tls_fixture.py STUBS_DIR HOST:PORT OPTIONS_JSON

OPTIONS_JSON holds the Provider's keyword arguments "token", "root_certificates",
"certificate_chain", "private_key" (paths) and "reconnect", and "grace": the drain's grace period
in seconds on SIGTERM. Serves pytls.echo (returns {"echoed": inputs}) and pytls.hold (reports
progress, prints "holding EXECUTION_ID", and waits until its run is cancelled or handed back, then
prints "released EXECUTION_ID"). Prints "connected" on each welcome and, when it stops,
"stopped" (exit status 0) or "ended: CODE: DETAILS" for the error that ended it (exit status 1).
"""

import json
import os
import signal
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))

from toolruntime_provider import Provider, tool  # noqa: E402


def say(text):
    print(text, flush=True)


@tool("pytls.echo")
def echo(inputs, context):
    return {"echoed": inputs}


@tool("pytls.hold")
def hold(inputs, context):
    context.report_progress(0.0, "holding")
    say(f"holding {context.execution_id}")
    context.cancelled.wait()
    say(f"released {context.execution_id}")
    raise RuntimeError("released")


def main():
    stubs_dir, address, options_json = sys.argv[1:4]
    options = json.loads(options_json)
    grace = float(options.pop("grace", 10))

    def on_event(kind, _detail):
        if kind == "welcome":
            say("connected")

    provider = Provider(
        address, "pytls", [echo, hold], stubs_dir=stubs_dir, on_event=on_event, **options
    )
    signal.signal(signal.SIGTERM, lambda *_: provider.drain(grace=grace))
    error = provider.serve_forever()
    if error is not None:
        code = error.code().name if hasattr(error, "code") else type(error).__name__
        details = error.details() if hasattr(error, "details") else str(error)
        say(f"ended: {code}: {details}")
        sys.exit(1)
    say("stopped")


if __name__ == "__main__":
    main()
