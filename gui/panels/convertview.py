"""`mnnscope view MODEL.onnx --convert --screenshot OUT.png`: the Convert dock's workflow, headless. The window's
own path: Model > Convert to MNN shows the dock, its Convert runs the conversion (the last settings used), a
failure selects its node, a success opens the .mnn side by side; the screenshot is taken when all of that is
on screen. Exit status 0 when the conversion succeeded, 1 when it failed."""
from __future__ import annotations

import os
import sys

from PySide6.QtCore import QEventLoop, Qt, QTimer

DOCK_HEIGHT = 0.45  # of the window: the dock's settings, log and diagnostics readable in the screenshot


def convert_in_window(win, timeout_s: float = 900.0) -> tuple[bool, str]:
    """Convert the window's model through its Convert dock; (ok, message)."""
    panel = win.panels.get("Convert")
    if panel is None:
        return False, "no Convert dock"
    win.ask_convert()
    if panel.src is None:
        return False, "only an .onnx model can be converted"
    dock = win.docks["Convert"]
    win.resizeDocks([dock], [int(win.height() * DOCK_HEIGHT)], Qt.Vertical)
    loop = QEventLoop()
    outcome = {}
    panel.conversion_done.connect(lambda how: (outcome.setdefault("how", how), loop.quit()))
    if not panel.convert():
        return False, "; ".join(panel.problems_now())
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()
    how = outcome.get("how", "timed out")
    r = panel.last_result
    if how == "ok" and r is not None and r.output:
        # the .mnn opened beside, laid out, with its shapes (the load starts after conversion_done: waiting only
        # where a pane beside was there already took the screenshot at "loading model.mnn")
        from mnnscope.gui.tasks import live_tasks  # (its node map too: "checking that this is the conversion")
        out, failed = os.path.abspath(r.output), []
        win.load_failed.connect(failed.append)
        _wait(lambda: bool(failed) or (win.second is not None and win.second.path == out
                                       and win.second.main_view.scene is not None
                                       and not win.second.main_view.layout_busy
                                       and not win.runner.state.startswith("busy") and not live_tasks()), timeout_s)
    _wait(lambda: not win.pane.main_view.layout_busy, timeout_s)  # a failure's node revealed
    return how == "ok", how


def _wait(done, timeout_s: float) -> None:
    loop = QEventLoop()
    timer = QTimer()
    timer.setInterval(50)
    timer.timeout.connect(lambda: done() and loop.quit())
    timer.start()
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    if not done():
        loop.exec()
    timer.stop()


def run_convert_view(win) -> tuple[int, dict]:
    """(exit code, the "convert" object of view's JSON: ok, how it ended, output, the errors as convert --json gives
    them); a failure's first error is said on stderr naming its node (it said only "conversion failed", tryout 17)."""
    ok, how = convert_in_window(win)
    r = getattr(win.panels.get("Convert"), "last_result", None)
    errors = list(getattr(r, "errors", None) or [])
    out = {"ok": ok, "how": how, "output": getattr(r, "output", None) if ok else None, "errors": errors,
           # the pane beside when the screenshot is taken: the .mnn, and whether its node map linked it
           "beside": win.second.path if win.second is not None else None, "linked": win.linker is not None}
    if not ok:
        first = errors[0] if errors else None
        detail = f": {first['message']}" if first else ""
        print(f"mnnscope view: conversion {how}{detail}", file=sys.stderr)
    return (0 if ok else 1), out
