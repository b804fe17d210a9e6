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

import sys

from mnnscope.inspector.process.childjob import service_child_main


def main(argv: list[str] | None = None) -> int:
    from mnnscope.inspector.profile.service import ProfileOptions, run_profile
    return service_child_main(sys.argv[1:] if argv is None else argv, "profile", ProfileOptions, run_profile)


if __name__ == "__main__":
    sys.exit(main())
