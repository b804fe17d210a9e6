"""Python's cyclic garbage collection runs on the GUI thread only.

Python collects reference cycles on whichever thread happens to allocate when a generation's threshold is
crossed; in this app that is often a worker thread (a task reading the run store, loading a model). When the
garbage holds a Qt widget owned by Python (a panel's menu, a dialog kept alive by a lambda that captures it),
its C++ destructor then runs on that worker thread while the GUI thread lays out or repaints widgets: Qt's
widgets are not thread-safe and the process deadlocks or crashes. Seen here: the Runs dock's store reader
collected a QWidget with a QMenu child while the GUI thread was in QApplication.setPalette; the GUI thread
waited on a Qt mutex, the worker on the GIL, forever (a segfault on another run of the same suite).

The remedy pyqtgraph documents (pyqtgraph.util.garbage_collector): switch automatic collection off and collect
from a timer on the GUI thread, with the same per-generation thresholds, so cycles are still collected about as
often as before but never on a worker thread. Installed once per QApplication (MainWindow does it).

A full collection walks every object the process holds (~110,000 once Qt, onnx and numpy are imported: 65-80 ms
of CPU measured here), now always on the GUI thread; the start-up state (modules, classes, the first window) is
long-lived, so install() collects once and freezes it (gc.freeze): later full collections walk only what was
made since (measured: 0.003 ms right after).
"""
from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500
_state: dict = {}


def collect_due() -> int:
    """Collect the generations whose thresholds are crossed, as the automatic collector would (GUI thread)."""
    threshold = _state.get("threshold") or gc.get_threshold()
    l0, l1, l2 = gc.get_count()
    found = 0
    if l0 > threshold[0]:
        found += gc.collect(0)
        if l1 > threshold[1]:
            found += gc.collect(1)
            if l2 > threshold[2]:
                found += gc.collect(2)
    return found


def install(app: QObject) -> bool:
    """Collect on `app`'s thread from now on; True when installed by this call."""
    timer = _state.get("timer")
    if timer is not None and _state.get("app") is app:
        return False
    _state.update(threshold=gc.get_threshold(), app=app)
    gc.disable()
    settle()
    timer = QTimer(app)  # dies with the application
    timer.setInterval(INTERVAL_MS)
    timer.timeout.connect(collect_due)
    timer.start()
    _state["timer"] = timer
    return True


def settle() -> None:
    """Collect everything now and freeze what survives (long-lived state, not walked by later collections)."""
    gc.collect()
    gc.freeze()


def installed() -> bool:
    return _state.get("timer") is not None and not gc.isenabled()
