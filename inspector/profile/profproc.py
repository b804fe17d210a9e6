"""The profile service in a child process, for the window: `python -m mnnscope.inspector.profile.profproc REQUEST`.

Why a process: the service imports onnx, whose ml_dtypes extension spends seconds initialising with the GIL
held (2-4 s on the shared CI machine): on a worker thread of the window that froze the UI thread just as
long. Here it costs the window nothing. REQUEST is ProfileOptions as JSON. Stdout carries JSON lines only:
{"runner_pid"} once its runner runs, {"event": kind, "payload"} for each runner event (op_begin, log,
progress...), then {"result": ...} or
{"error": {"kind", "message"}}. A line "cancel" on stdin, or stdin closing, stops the runner (killed, gone
at once) and ends this process with exit code 3.
"""
from __future__ import annotations

import json
import os
import sys
import threading

CANCELLED_EXIT = 3


def _writer():
    """A private copy of stdout for the JSON lines; fd 1 then points at stderr, so nothing else lands there."""
    fd = os.dup(1)
    os.dup2(2, 1)
    out = os.fdopen(fd, "w", buffering=1)
    lock = threading.Lock()

    def write(obj) -> None:
        line = json.dumps(obj, default=str)
        with lock:
            out.write(line + "\n")
            out.flush()
    return write


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    write = _writer()
    from mnnscope.inspector.errors import USER_ERRORS, UsageError
    from mnnscope.inspector.process.client import RunnerClient
    from mnnscope.inspector.profile.service import ProfileOptions, run_profile
    from mnnscope.runner.protocol import RunnerError
    try:
        opts = ProfileOptions(**json.loads(argv[0]))
    except (IndexError, TypeError, ValueError) as e:
        write({"error": {"kind": "bad_request", "message": f"bad profile request: {e}"}})
        return 2
    client = RunnerClient()

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "cancel":
                break
        client.kill()          # the runner goes at once, mid-run
        os._exit(CANCELLED_EXIT)

    threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        client.start()
        write({"runner_pid": client.pid})
        result = run_profile(opts, client=client, on_event=lambda kind, payload: write(
            {"event": kind, "payload": payload}))
        write({"result": result})
        return 0
    except RunnerError as e:
        write({"error": {"kind": e.kind, "message": e.message}})
    except (*USER_ERRORS, UsageError) as e:
        write({"error": {"kind": type(e).__name__, "message": str(e)}})
    finally:
        client.stop()
    return 1


if __name__ == "__main__":
    sys.exit(main())
