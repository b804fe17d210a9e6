"""The generate service in a child process, for the window: `python -m mnnscope.inspector.generate.genproc REQUEST`.

Why a process: as for profile (inspector/profile/profproc.py), the service imports onnx, whose initialisation
holds the GIL for seconds; here it costs the window nothing. REQUEST is GenerateOptions as JSON. Stdout
carries JSON lines only: {"runner_pid"} once its runner runs, {"event": kind, "payload"} per runner event,
then {"result": ...} or {"error": {"kind", "message"}}. A line "cancel" on stdin, or stdin closing, kills the
runner and ends this process with exit code 3.
"""
from __future__ import annotations

import sys

from mnnscope.inspector.process.childjob import service_child_main


def main(argv: list[str] | None = None) -> int:
    from mnnscope.inspector.generate.service import GenerateOptions, run_generate
    return service_child_main(sys.argv[1:] if argv is None else argv, "generate", GenerateOptions, run_generate)


if __name__ == "__main__":
    sys.exit(main())
