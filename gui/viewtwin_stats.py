"""The headless twin of the Statistics dock: `mnnscope view MODEL --stats [--overlay stats [--stat S]]
[--screenshot OUT.png] [--json]`.

It drives the window's own StatsPanel offscreen (the same run, mapping, overlay and NaN/Inf stepping a user
gets): the statistics run, the overlay by a statistic, the first NaN/Inf (or int32-limit) producer selected (else
the op with the largest value) so that the dock shows its histogram, then the screenshot. With --json, stdout holds
{"overlay": {kind, statistic, values: {node: value}, top: [{node, op_type, value}], coverage} or null,
"backend_used", "nonfinite": [node, ...], "int32_limit": [node, ...] (float values at +-2^31: an overflow),
"tensors", "run_id", "screenshot"}. viewcmd.py calls the four hooks
below; everything else lives here.
"""
from __future__ import annotations

import json
import math
import sys
import time

from mnnscope.inspector.profile.tensorstats import STATISTICS

TOP = 10


def add_arguments(p) -> None:
    """--stats, --stat, and `stats` among --overlay's choices (another twin may define --overlay and --json)."""
    p.add_argument("--stats", action="store_true",
                   help="run the statistics pass (Statistics dock) before the screenshot; with --json: its summary")
    p.add_argument("--stat", choices=list(STATISTICS), default="max_abs",
                   help="the statistic --overlay stats colours by (default max_abs)")
    known = p._option_string_actions
    if "--overlay" in known:
        action = known["--overlay"]
        if action.choices is not None and "stats" not in action.choices:
            action.choices = [*action.choices, "stats"]
    else:
        p.add_argument("--overlay", choices=["stats"], default=None,
                       help="colour the graph: stats (by --stat, needs --stats)")
    if "--json" not in known:
        p.add_argument("--json", action="store_true", help="print what the twin did as one JSON object")


def usage_error(args) -> str | None:
    if getattr(args, "overlay", None) == "stats" and not args.stats:
        return "--overlay stats needs --stats (the statistics run that gives the values)"
    return None


def wanted(args) -> bool:
    """Whether this twin runs (and so the view is headless)."""
    return bool(getattr(args, "stats", False))


def _wait(app, cond, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > end:
            return False
        app.processEvents()
        time.sleep(0.01)
    return True


def run(win, args, app, timeout_s: float = 600.0) -> dict | str:
    """Run the Statistics dock on the window's model; the twin's JSON object, or an error message."""
    panel = win.panels.get("Statistics")
    if panel is None:
        return "the Statistics dock is not available"
    win.show_dock("Statistics")
    from PySide6.QtCore import Qt
    win.resizeDocks([win.docks["Statistics"]], [int(win.height() * 0.42)], Qt.Vertical)
    state: dict = {}
    panel.finished.connect(lambda result: state.setdefault("result", result))
    panel.failed.connect(lambda msg: state.setdefault("error", msg))
    if not panel.run():
        return state.get("error") or "the statistics run did not start"
    if not _wait(app, lambda: state, timeout_s):
        panel.cancel()
        return "timed out waiting for the statistics run"
    if "error" in state:
        return f"statistics run failed: {state['error']}"
    view, table = panel.view, panel._table
    overlay = panel.set_statistic(args.stat) if getattr(args, "overlay", None) == "stats" else None
    values = {}
    if overlay is not None:
        values = {i: v for i, v in view._overlay_values.items() if math.isfinite(v)}
    target = panel.suspects[0] if panel.suspects else (max(values, key=values.get) if values else -1)
    if panel.suspects:
        panel.step(1)
    elif target >= 0:
        view.reveal(target)
    _wait(app, lambda: target < 0 or (view.canvas.selected == target and not view.layout_busy), 30.0)
    app.processEvents()

    def name(i: int) -> str:
        return table.names[i] or table.ids[i]

    out = {"overlay": None, "backend_used": panel.result.get("backend_used"),
           "nonfinite": [name(i) for i in panel.nonfinite],
           "int32_limit": [name(i) for i in panel.int32_limit], "tensors": len(panel.rows),
           "run_id": panel.result.get("run_id"), "screenshot": getattr(args, "screenshot", None)}
    if overlay is not None:
        ranked = sorted(values, key=lambda i: -values[i])
        out["overlay"] = {"kind": "stats", "statistic": args.stat, "log": overlay.scale.log,
                          "values": {name(i): values[i] for i in sorted(values)},
                          "top": [{"node": name(i), "op_type": table.op_types[i], "value": values[i]}
                                  for i in ranked[:TOP]],
                          "coverage": round(len(values) / table.node_count, 4) if table.node_count else 0.0}
    return out


def overlay_hook(win, args) -> dict | str:
    """`--profile --stats --overlay stats`: the Profile dock's twin shows the Statistics dock's overlay (its own
    statistics run, as in the window), as the "overlay" object of the profile twin's JSON."""
    from PySide6.QtWidgets import QApplication
    got = run(win, args, QApplication.instance())
    return got if isinstance(got, str) else got["overlay"]


def print_json(args, twin: dict | None) -> None:
    if twin is not None and getattr(args, "json", False):
        sys.stdout.write(json.dumps(twin, allow_nan=False, default=str) + "\n")
        sys.stdout.flush()
