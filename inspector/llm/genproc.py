"""The export-folder generate service in a child process, for the window's Text dock:
`python -m mnnscope.inspector.llm.genproc REQUEST` (REQUEST: LlmOptions as JSON). The same JSON-lines contract
as inspector/generate/genproc.py (process/childjob.py: service_child_main)."""
from __future__ import annotations

import sys

from mnnscope.inspector.process.childjob import service_child_main


def main(argv: list[str] | None = None) -> int:
    from mnnscope.inspector.llm.service import LlmOptions, generate_export
    return service_child_main(sys.argv[1:] if argv is None else argv, "generate", LlmOptions, generate_export)


if __name__ == "__main__":
    sys.exit(main())
