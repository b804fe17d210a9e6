"""The generate service in a child process, for the window: `python -m mnnscope.inspector.generate.genproc REQUEST`.

Why a process: as for profile (inspector/profile/profproc.py), the service imports onnx, whose initialisation
holds the GIL for seconds; here it costs the window nothing. REQUEST is GenerateOptions as JSON. Stdout
carries JSON lines only: {"runner_pid"} once its runner runs, {"event": kind, "payload"} per runner event,
then {"result": ...} or {"error": {"kind", "message"}}. A line "cancel" on stdin, or stdin closing, kills the
runner and ends this process with exit code 3.
"""
from __future__ import annotations

import json
import os
import sys
import threading

from mnnscope.inspector.profile.profproc import CANCELLED_EXIT, _writer


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    write = _writer()
    from mnnscope.inspector.errors import USER_ERRORS, UsageError
    from mnnscope.inspector.generate.service import GenerateOptions, run_generate
    from mnnscope.inspector.process.client import RunnerClient
    from mnnscope.runner.protocol import RunnerError
    try:
        opts = GenerateOptions(**json.loads(argv[0]))
    except (IndexError, TypeError, ValueError) as e:
        write({"error": {"kind": "bad_request", "message": f"bad generate request: {e}"}})
        return 2
    client = RunnerClient()

    def watch_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "cancel":
                break
        client.kill()
        os._exit(CANCELLED_EXIT)

    threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        client.start()
        write({"runner_pid": client.pid})
        result = run_generate(opts, client=client, on_event=lambda kind, payload: write(
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
