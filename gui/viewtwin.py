"""The Profile dock's headless twin: `mnnscope view MODEL --profile [profile options] --overlay time|share
--screenshot OUT.png [--json]`.

It drives the window's own ProfilePanel offscreen (panel.run(), wait for its `finished`, the overlay on the
graph, then the screenshot), never a second implementation. With --json, stdout holds
{"overlay": {"kind", "values": {node: value}, "top": [{"node", "op_type", "value"}], "coverage"},
 "backend_used", "nonfinite": [node, ...], "screenshot"}.

Other overlays plug in through OVERLAY_HOOKS: kind -> fn(window, args) -> the same "overlay" object or an
error string (the Statistics dock's twin registers "stats" there, with its own --stats handling); nonfinite
lists nodes whose outputs hold NaN/Inf when the profile ran with statistics (args.stats, where defined).
"""
from __future__ import annotations

import json
import math
import sys

from mnnscope.runner import protocol

OVERLAY_KINDS = ("time", "share")
OVERLAY_HOOKS: dict = {}   # kind -> fn(window, args) -> dict | str (see the module docstring)
TOP = 10


def add_arguments(p) -> None:
    """The --profile options on `mnnscope view`'s parser."""
    g = p.add_argument_group("profile (the Profile dock, headless)")
    g.add_argument("--profile", action="store_true", help="profile the model as Run > Profile (F5) does, show "
                                                          "the time overlay, then screenshot")
    g.add_argument("--engine", choices=protocol.ENGINES, default=None, help="mnn or ort (default: the file's)")
    g.add_argument("--backend", default=protocol.DEFAULT_BACKEND, help="MNN backend or ORT provider (CPU)")
    g.add_argument("--precision", choices=protocol.PRECISIONS, default=protocol.PRECISION_HIGH)
    g.add_argument("--memory", choices=protocol.MEMORY_MODES, default=protocol.MEMORY_NORMAL)
    g.add_argument("--threads", type=int, default=1)
    g.add_argument("--runs", type=int, default=10)
    g.add_argument("--warmup", type=int, default=2)
    g.add_argument("--from", dest="from_node", metavar="NODE", help="with --profile: profile from this node on, as "
                                                                     "right-click > Profile from Here does")
    if "--overlay" not in p._option_string_actions:
        g.add_argument("--overlay", default=None, metavar="time|share|stats",
                       help="what the graph shows after the run: time (ms per node), share of the measured time, "
                            "or stats (with --stats: the Statistics dock's per-tensor figure)")
    if "--json" not in p._option_string_actions:
        g.add_argument("--json", action="store_true", help="print the overlay, backend used and coverage as JSON")


def check(args) -> str | None:
    """A usage error in the profile options, or None."""
    kind = getattr(args, "overlay", None)
    if kind is not None and kind not in OVERLAY_KINDS and kind not in OVERLAY_HOOKS:
        return f"--overlay must be {' or '.join(OVERLAY_KINDS + tuple(OVERLAY_HOOKS))}, not '{kind}'"
    if kind in OVERLAY_KINDS and not args.profile:
        return f"--overlay {kind} needs --profile"
    if args.profile and not (args.screenshot or getattr(args, "json", False)):
        return "--profile goes with --screenshot OUT.png and/or --json"
    if getattr(args, "from_node", None) and not args.profile:
        return "--from goes with --profile"
    if args.threads < 1 or args.runs < 1 or args.warmup < 0:
        return "--threads and --runs must be at least 1, --warmup at least 0"
    return None


def wanted(args) -> bool:
    """Whether this twin has work in this command (then the view runs headless)."""
    return bool(getattr(args, "profile", False)) or getattr(args, "overlay", None) in OVERLAY_HOOKS


def _settings(args) -> dict:
    s = {"backend": args.backend.upper(), "precision": args.precision, "memory": args.memory,
         "threads": args.threads, "runs": args.runs, "warmup": args.warmup}
    if args.engine:
        s["engine"] = args.engine
    return s


def run_profile(win, app, args) -> tuple[dict | None, str | None]:
    """Profile through the window's Profile dock; (result, None) or (None, error message)."""
    from PySide6.QtCore import QEventLoop, QTimer
    panel = win.panels.get("Profile")
    if panel is None:
        return None, "the Profile dock is not available"
    if panel.hello is None:   # the backend list comes from the runner's hello: wait for it
        wait = QEventLoop()
        panel.backends_known.connect(wait.quit)
        panel._ask_hello()
        if panel.hello is None:
            QTimer.singleShot(120_000, wait.quit)
            wait.exec()
    panel.apply_settings(_settings(args))
    if args.engine and panel.engine.currentData() != args.engine:
        return None, f"--engine {args.engine} cannot run {win.pane.path}"
    if panel.backend.currentData() != args.backend.upper():
        i = panel.backend.findData(args.backend.upper())
        why = panel.backend.model().item(i).toolTip() if i >= 0 else "unknown backend"
        return None, f"--backend {args.backend}: {why or 'not available'}"
    opts = panel.request()
    if getattr(args, "stats", False):
        opts["stats"] = True
    loop = QEventLoop()
    state: dict = {}

    def done(result):
        state["result"] = result
        loop.quit()

    def finished(name, ok, msg):
        if name == "profile" and not ok:
            state["error"] = msg
            loop.quit()

    panel.finished.connect(done)
    win.runner.job_finished.connect(finished)
    node = getattr(args, "from_node", None)
    if node:  # the context menu's way: the window's profile_from on the node of the main view
        view = win.pane.main_view
        item = view.table.index_of(node) if view.table is not None else None
        if item is None:
            item = (view.table.names_index() if view.table is not None else {}).get(node)
        if item is None:
            return None, f"--from {node}: no node of that id or name in {win.pane.path}"
        why = win.profile_from_why(win.pane, view, item)
        if why or not win.profile_from(win.pane, view, item):
            return None, f"--from {node}: {why or 'the profile did not start'}"
    elif not panel.run(opts=opts):
        return None, "the profile did not start"
    QTimer.singleShot(600_000, loop.quit)
    loop.exec()
    app.processEvents()
    if "result" not in state:
        return None, state.get("error") or "timed out"
    return state["result"], None


def overlay_json(win, kind: str) -> dict:
    """The "overlay" object of the JSON from the dock's overlay of `kind` on the viewed graph."""
    panel = win.panels["Profile"]
    ov = panel.overlay(kind)
    table = win.pane.table
    pl = panel.placement
    # the nodes measured time landed on (the dock also draws the others, at 0, as cold)
    placed = set(pl.values) if (pl is not None and kind in ("time", "share")) else None
    values = {k: v for k, v in ov.values.items() if math.isfinite(v) and (placed is None or k in placed)} \
        if ov is not None else {}
    top = sorted(((k, v) for k, v in values.items() if math.isfinite(v)), key=lambda kv: -kv[1])[:TOP]
    rows = []
    for node, v in top:
        i = table.index_of(node) if table is not None else None
        rows.append({"node": node, "op_type": table.op_types[i] if i is not None else None, "value": v})
    return {"kind": kind, "values": values, "top": rows, "coverage": pl.coverage if pl is not None else None}


def nonfinite_nodes(win, result: dict) -> list[str]:
    """Nodes of the viewed graph whose outputs held NaN/Inf in the profile's statistics run."""
    panel = win.panels["Profile"]
    pl = panel.placement
    out: list[str] = []
    for op in result.get("ops") or []:
        bad = any((o.get("nan") or 0) > 0 or (o.get("inf") or 0) > 0 for o in op.get("outputs") or [])
        if bad and pl is not None:
            for n in pl.op_nodes.get(str(op.get("name")), []):
                if n not in out:
                    out.append(n)
    return out


def finish(win, app, args) -> int:
    """After the model is on screen: profile, overlay, screenshot, JSON. Returns the exit code."""
    kind = getattr(args, "overlay", None) or "time"
    out: dict = {"overlay": None, "backend_used": None, "nonfinite": [], "screenshot": None}
    result = None
    if args.profile:
        result, err = run_profile(win, app, args)
        if err:
            return _error(args, "run_failed", err)
        out["backend_used"] = result.get("backend_used")
        out["nonfinite"] = nonfinite_nodes(win, result) if getattr(args, "stats", False) else []
    if kind in OVERLAY_HOOKS:
        got = OVERLAY_HOOKS[kind](win, args)
        if isinstance(got, str):
            return _error(args, "run_failed", got)
        out["overlay"] = got
    else:
        panel = win.panels["Profile"]
        panel.set_overlay_kind(kind)
        out["overlay"] = overlay_json(win, kind)
    app.processEvents()
    # the notices about the model, newest first, as the status bar's Notices list gives them
    from mnnscope.gui.noticelist import notices_json
    out["notices"] = notices_json(win)
    code = 0
    if args.screenshot:
        win.repaint()
        app.processEvents()
        if win.grab().save(args.screenshot):
            out["screenshot"] = args.screenshot
        else:
            print(f"mnnscope view: cannot write {args.screenshot}", file=sys.stderr)
            code = 1
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(out, default=_plain) + "\n")
        sys.stdout.flush()
    return code


def _error(args, kind: str, message: str) -> int:
    print(f"mnnscope view: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps({"error": {"kind": kind, "message": message}}) + "\n")
        sys.stdout.flush()
    return 1


def _plain(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return str(v)
