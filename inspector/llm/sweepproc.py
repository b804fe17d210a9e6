"""The export sweep service in a child process, for the window's Text dock: `python -m
mnnscope.inspector.llm.sweepproc REQUEST` (REQUEST: SweepOptions as JSON). The same JSON-lines contract as
genproc.py (process/childjob.py: service_child_main)."""
from __future__ import annotations

import sys

from mnnscope.inspector.process.childjob import service_child_main


def main(argv: list[str] | None = None) -> int:
    from mnnscope.inspector.llm.service import SweepOptions, run_sweep
    return service_child_main(sys.argv[1:] if argv is None else argv, "sweep", SweepOptions, run_sweep)


if __name__ == "__main__":
    sys.exit(main())
