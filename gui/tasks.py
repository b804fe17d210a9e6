"""Work off the UI thread: one QThread per task, one task per concern (STYLE.md rule 4).

A new request in a TaskSlot cancels the running one and disconnects it, so a stale result never reaches
the widgets; results arrive through queued signals on the UI thread.
"""
from __future__ import annotations

import threading
import traceback
import weakref

from PySide6.QtCore import QObject, QThread, Signal

from mnnscope.gui import qtguard  # noqa: F401  (before anything is drawn: see qtguard)
from mnnscope.inspector.errors import USER_ERRORS

_LIVE: "weakref.WeakSet[Task]" = weakref.WeakSet()


def live_tasks() -> list["Task"]:
    """Tasks whose thread still runs (the test suite fails a test that leaves any behind)."""
    return [t for t in list(_LIVE) if t.isRunning()]


class CancelToken:
    """Callable: true once cancelled. `set_hook(fn)` runs fn on cancel (at once if already cancelled),
    for work that blocks outside Python, such as reading from a child process."""

    def __init__(self):
        self._event = threading.Event()
        self._hook = None
        self._lock = threading.Lock()

    def __call__(self) -> bool:
        return self._event.is_set()

    def set_hook(self, fn) -> None:
        with self._lock:
            self._hook = fn
            fire = self._event.is_set()
        if fire:
            fn()

    def cancel(self) -> None:
        with self._lock:
            self._event.set()
            hook = self._hook
        if hook is not None:
            try:
                hook()
            except Exception:
                pass


class Task(QThread):
    """Runs fn(*args, cancelled=<CancelToken>) on its own thread; emits succeeded(result) or failed(message)."""

    succeeded = Signal(object)
    failed = Signal(str)

    def __init__(self, fn, *args, name: str = "task", parent=None):
        super().__init__(parent)
        self.fn, self.args, self.name = fn, args, name
        self._cancel = CancelToken()
        self.error_detail = ""
        self.done = False  # set before the result is emitted, so receivers see the task as finished
        _LIVE.add(self)

    def cancel(self) -> None:
        self._cancel.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel()

    def run(self) -> None:
        try:
            result = self.fn(*self.args, cancelled=self._cancel)
        except Exception as e:  # shown to the user by whoever listens; never lost
            self.done = True
            if not self._cancel():
                # Errors meant for the user read as they are; anything else is a bug: its type says which.
                msg = str(e) if isinstance(e, USER_ERRORS) else f"{type(e).__name__}: {e}"
                self.error_detail = traceback.format_exc()
                self.failed.emit(msg or type(e).__name__)
            return
        self.done = True
        if not self._cancel():
            self.succeeded.emit(result)


class TaskSlot(QObject):
    """Holds at most one live task for one concern; starting another cancels and disowns the first."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.task: Task | None = None
        self._old: list[Task] = []

    def start(self, fn, *args, on_done=None, on_fail=None, name: str = "task") -> Task:
        self.cancel()
        task = Task(fn, *args, name=name)
        if on_done is not None:
            task.succeeded.connect(on_done)
        if on_fail is not None:
            task.failed.connect(on_fail)
        task.finished.connect(lambda t=task: self._finished(t))
        self.task = task
        task.start()
        return task

    def _finished(self, task: Task) -> None:
        # `finished` comes from the worker thread as it ends, before the thread has quite exited; the last reference
        # to the task may go below, and a QThread deleted while its thread still runs takes the process down (Qt
        # aborts). Waiting here lasts the few microseconds the thread has left. (A safeguard: the GUI tests' rare
        # segfault it was first suspected of was the tests' own waitSignal on a cross-thread signal: see
        # tests/test_gui.py wait_for_emission.)
        task.wait(2000)
        if task in self._old:
            self._old.remove(task)
        if self.task is task:
            self.task = None

    def cancel(self) -> None:
        t = self.task
        if t is not None:
            t.cancel()
            for sig in (t.succeeded, t.failed):
                try:
                    sig.disconnect()
                except (RuntimeError, TypeError):
                    pass
            if t.isRunning():
                self._old.append(t)  # keep it alive until its thread ends
            self.task = None

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done and self.task.isRunning()

    def shutdown(self, timeout_ms: int = 5000) -> None:
        """Cancel everything and wait for the threads (window close, test teardown)."""
        self.cancel()
        for t in list(self._old):
            t.wait(timeout_ms)
        self._old.clear()
