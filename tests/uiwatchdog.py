"""The UI-thread watchdog of the workflow tests: no action may hold the UI thread for long (the app's aim: 100 ms;
the suite's margin: 250 ms, see below).

A zero-interval timer... would measure the event loop's own wait; instead a 10 ms repeating QTimer records the
longest gap between its ticks while the test drives the window. A gap is the time the UI thread spent on one
piece of work without returning to the event loop (plus the timer's period). Use the `ui_watchdog` fixture:

    def test_x(window, ui_watchdog):
        ...drive the window...
        ui_watchdog.check()          # fails with the longest stall and when it happened

A gap counts as a stall when the UI thread itself computed for more than the limit in it (`MNNSCOPE_UI_STALL_MS`,
default 250 ms; its CPU time, time.thread_time), or when the gap is over four times the limit whatever the
thread did (blocked on a pipe, a lock, a sleep). The default is a margin over the 100 ms the app aims at: in
full-suite runs on the shared 2-core machine, work that takes 60-90 ms of UI-thread CPU on a quiet machine
(a batch of 20,000 log lines, a dock's first layout) measured 105-135 ms and failed tests at random; what the
watchdog is for (an import of onnx on the UI thread: 1.8-4 s; a synchronous conversion or run: seconds) is far
over it. `MNNSCOPE_UI_STALL_MS=100` runs the suite at the app's own aim on a quiet machine. On a shared 2-core CI machine the UI thread
is sometimes simply not scheduled while the runner and loader children work: that is not the app blocking,
and a test must never be flaky. Stalls while a test itself blocks the loop (qtbot.wait* return the loop to
Qt, so they do not count; a plain time.sleep in the test would) are the test's fault, not the app's.
"""
from __future__ import annotations

import os
import time

from PySide6.QtCore import QTimer

PERIOD_MS = 10


class UiWatchdog:
    def __init__(self, limit_ms: float | None = None):
        self.limit_ms = float(limit_ms if limit_ms is not None else os.environ.get("MNNSCOPE_UI_STALL_MS", 250))
        # the wall-clock criterion (a gap whatever the thread did): four times the limit, or MNNSCOPE_UI_GAP_MS
        # (dev.py test sets 3000 ms: the suite's other half runs beside the GUI tests, and a UI thread that is
        # not scheduled for a second is then not the app blocking; the CPU criterion is unchanged)
        gap_env = os.environ.get("MNNSCOPE_UI_GAP_MS") if limit_ms is None else None
        self.gap_ms = float(gap_env) if gap_env else 4 * self.limit_ms
        self.worst_ms = 0.0
        self.worst_at = 0.0
        self.stalls: list[tuple[float, float]] = []  # (seconds since start, gap ms) over the limit
        self._t0 = time.perf_counter()
        self._last = None
        self._cpu = 0.0
        self._timer = QTimer()
        self._timer.setInterval(PERIOD_MS)
        self._timer.timeout.connect(self._tick)

    def start(self) -> "UiWatchdog":
        self._last = time.perf_counter()
        self._cpu = time.thread_time()
        self._timer.start()
        return self

    def pause(self) -> None:
        """Stop measuring (a test step that blocks the loop on purpose)."""
        self._timer.stop()
        self._last = None

    def resume(self) -> None:
        self.start()

    def _tick(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        if self._last is not None:
            gap = (now - self._last) * 1000.0 - PERIOD_MS
            busy = (cpu - self._cpu) * 1000.0
            if gap > self.worst_ms:
                self.worst_ms, self.worst_at = gap, now - self._t0
            # the UI thread's own work over the limit, or a wait far over it: a task that a loaded CPU merely
            # stretched (60 ms of work at half a core reads as a 120 ms gap) is not the app blocking
            if (gap > self.limit_ms and busy > self.limit_ms) or gap > self.gap_ms:
                self.stalls.append((round(now - self._t0, 2), round(gap, 1), round(busy, 1)))
        self._last, self._cpu = now, cpu

    def stop(self) -> None:
        self._timer.stop()

    def check(self) -> None:
        self.stop()
        assert not self.stalls, (f"the UI thread stalled over {self.limit_ms:.0f} ms: "
                                 f"{self.stalls[:5]} (seconds into the test, gap ms, UI-thread CPU ms)")
