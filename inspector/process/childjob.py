"""A short-lived child process that sends JSON lines (the load process): polled, cancellable, its death
reported, never hidden."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time

from mnnscope.inspector.errors import LoadCancelled, ModelError
from mnnscope.inspector.process.client import signal_name


class ChildJob:
    """A `python -m inspector.loadproc ...` child: polled, cancellable, its death reported, never hidden."""

    def __init__(self, args: list[str], python: str | None = None):
        self.proc = subprocess.Popen([python or sys.executable, "-m", "mnnscope.inspector.formats.loadproc", *args],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=tempfile.gettempdir())
        self.started = time.perf_counter()
        self._cancel = threading.Event()
        self._stderr: list[str] = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        for raw in self.proc.stderr:
            self._stderr.append(raw.decode("utf-8", "replace").rstrip())
            del self._stderr[:-50]

    def cancel(self) -> None:
        self._cancel.set()
        if self.proc.poll() is None:
            self.proc.kill()

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
            code = self.proc.wait(10)
            if code != 0:
                how = signal_name(code) or f"exit code {code}"
                tail = f": {self._stderr[-1]}" if self._stderr else ""
                raise ModelError(f"the loader process died ({how}){tail}")
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        for s in (self.proc.stdout, self.proc.stderr):
            try:
                s.close()
            except Exception:
                pass
