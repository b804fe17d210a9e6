"""The UI watchdog (tests/uiwatchdog.py) catches a stall, and opening, expanding and searching the samples
stays under its limit."""
from __future__ import annotations

import time

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtCore import QTimer  # noqa: E402

from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401
from uiwatchdog import UiWatchdog  # noqa: E402

pytestmark = pytest.mark.gui


def _spin(seconds: float) -> None:
    """Compute for `seconds` of this thread's CPU time (on a loaded machine that takes longer on the clock)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_watchdog_catches_a_busy_ui_thread(qtbot):
    dog = UiWatchdog(limit_ms=100).start()
    QTimer.singleShot(50, lambda: _spin(0.3))  # 300 ms of computing on the UI thread
    qtbot.waitUntil(lambda: dog.worst_ms > 250, timeout=10000)
    qtbot.wait(50)
    with pytest.raises(AssertionError, match="stalled"):
        dog.check()


def test_watchdog_catches_a_ui_thread_blocked_waiting(qtbot):
    dog = UiWatchdog(limit_ms=100).start()
    QTimer.singleShot(50, lambda: time.sleep(0.6))  # waiting on something for 600 ms (a pipe, a lock)
    qtbot.wait(800)
    with pytest.raises(AssertionError, match="stalled"):
        dog.check()


def test_watchdog_passes_short_work(qtbot):
    dog = UiWatchdog(limit_ms=100).start()
    for ms in (20, 300, 600):
        QTimer.singleShot(ms, lambda: _spin(0.03))
    qtbot.wait(800)
    dog.check()


def test_opening_and_browsing_the_samples_never_stalls(qtbot, window, samples):
    # The very first paint of a graph builds Qt's glyph caches (~100 ms once per process, at startup in the
    # app): warm up on one model, then measure every step of opening and browsing two others.
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    dog = UiWatchdog().start()
    for name in ("encoder_block.onnx", "moe_llm.mnn"):
        view = open_and_wait(qtbot, window, samples / name)
        view.expand_all()
        qtbot.waitUntil(lambda: not view.layout_busy, timeout=30000)
        view.collapse_all()
        qtbot.waitUntil(lambda: not view.layout_busy, timeout=30000)
    dog.check()
