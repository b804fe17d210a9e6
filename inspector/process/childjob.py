"""A short-lived child process that sends JSON lines (the load process): polled, cancellable, its death
reported, never hidden. Supervised by child.py like the runner."""
from __future__ import annotations

import json
import sys
import tempfile
import threading
import time

from mnnscope.inspector.errors import LoadCancelled, ModelError
from mnnscope.inspector.process.child import ChildProcess


class ChildJob:
    """A `python -m mnnscope.inspector.formats.loadproc ...` child: polled, cancellable, its death reported.

    It runs under our own Python (it imports inspector), never the runner's."""

    def __init__(self, args: list[str], python: str | None = None):
        self.child = ChildProcess(python or sys.executable, "mnnscope.inspector.formats.loadproc", args,
                                  cwd=tempfile.gettempdir(), tail=50)
        self.proc = self.child.popen
        self.started = time.perf_counter()
        self._cancel = threading.Event()

    def cancel(self) -> None:
        self._cancel.set()
        if self.child.alive:
            self.child.popen.kill()

    def messages(self):
        """Yield the child's JSON sections; raise ModelError for its error or its death."""
        try:
            for line in self.proc.stdout:
                if self._cancel.is_set():
                    raise LoadCancelled()
                msg = json.loads(line)
                if msg.get("section") == "error":
                    raise ModelError(msg.get("message", "unknown error"))
                yield msg
                time.sleep(0)  # let the UI thread take the GIL between sections
            if self._cancel.is_set():
                raise LoadCancelled()
            if self.proc.wait(10) != 0:
                raise ModelError(self.child.death("the loader process"))
        finally:
            self.close()

    def close(self) -> None:
        self.child.kill()
        self.child.close()
