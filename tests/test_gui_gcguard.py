"""Cycle collection happens on the GUI thread only once a window exists (gui/gcguard.py): a worker thread that
allocates enough to cross the collector's threshold no longer runs a collection (which would destroy any Qt
widget in the garbage on that thread: the GUI suite deadlocked and crashed that way in QApplication.setPalette)."""
from __future__ import annotations

import gc
import sys
import threading
from pathlib import Path

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_gui import make_window, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui


class _Cycle:
    def __init__(self):
        self.me = self


def _collections_by_thread(work) -> list[str]:
    seen: list[str] = []

    def note(phase, info):
        if phase == "start":
            seen.append(threading.current_thread().name)

    gc.callbacks.append(note)
    try:
        work()
    finally:
        gc.callbacks.remove(note)
    return seen


def test_a_worker_thread_that_makes_garbage_never_collects_it(qtbot, window):
    from mnnscope.gui import gcguard
    assert gcguard.installed() and not gc.isenabled()

    def churn():
        for _ in range(20 * gc.get_threshold()[0]):
            _Cycle()

    def in_worker():
        t = threading.Thread(target=churn, name="worker")
        t.start()
        t.join()

    seen = _collections_by_thread(in_worker)
    assert "worker" not in seen
    # the GUI thread's timer collects what the worker left (generation 0 is due after that much garbage)
    seen = _collections_by_thread(lambda: qtbot.waitUntil(lambda: gc.get_count()[0] < gc.get_threshold()[0],
                                                          timeout=5000))
    assert seen and set(seen) == {threading.main_thread().name}
