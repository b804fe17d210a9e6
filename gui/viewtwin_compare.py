"""The Compare dock's headless twin: `mnnscope view MODEL.onnx --compare MODES [--show-mode M] [tolerance and
input options] [--fix [--fix-out FILE.mnn]] --screenshot OUT.png [--json]`.

It drives the window's own ComparePanel offscreen (run, show a mode, the graph's selection and overlay, the fix
loop) and reports what the window shows: {"mode", "selected", "overlay": {"kind", "values", "top", ...},
"verdict", "cause", "tab" (the mode tab's text, with the tier), "cause_shown" (the cause line under the tabs,
null when hidden), "screenshot"} (+ "fix" with --fix, its "saved" path with --fix-out). `mode` is the mode shown (the
worst one unless --show-mode says), `selected` the ONNX node the window selected: the first divergence that reaches the
outputs in that mode, or null.

With an .mnn MODEL open (side A): `--compare-with B.mnn` (the dock's "Compare with another .mnn") or
`--compare-config PAIR` (its "Compare configurations"), and `--graph-shows time` for the time change per op
(B - A) instead of the error: then "overlay" is {"kind": "time change", "values": {op: delta ms}, "top" (the ops
that grew most), "time"}.
"""
from __future__ import annotations

import os
import json
import math
import sys

from mnnscope.inspector.compare import errormap
from mnnscope.inspector.compare.options import parse_modes
from mnnscope.inspector.compare.tolerance import parse_metric


def _has(p, flag: str) -> bool:
    return any(flag in a.option_strings for a in p._actions)


def add_arguments(p) -> None:
    """The twin's options on `mnnscope view`'s parser (input options and --json only when no one added them)."""
    from mnnscope.inspector.inputs.options import add_input_arguments
    g = p.add_argument_group("compare (the Compare dock, offscreen)")
    g.add_argument("--compare", metavar="MODES", help="run the Compare dock in these modes (e.g. fp32,int8w)")
    g.add_argument("--show-mode", metavar="MODE", help="the mode to show (default: the worst one)")
    g.add_argument("--atol", type=float, help="compare: absolute tolerance")
    g.add_argument("--rtol", type=float, help="compare: tolerance relative to max|reference|")
    g.add_argument("--metric", metavar="NAME:X", help="compare: judge by cosine:X, rel_l2:X, sqnr:X or max_abs:X")
    g.add_argument("--fix", action="store_true", help="compare: then run the fix loop on the shown mode "
                                                      "(keep its top-ranked operators in float and reconvert)")
    g.add_argument("--fix-out", metavar="FILE.mnn", help="with --fix: the dock's 'Save fixed model' to FILE.mnn")
    g.add_argument("--compare-with", metavar="B.mnn", help="with an .mnn MODEL open: the dock's 'Compare with another "
                                                           ".mnn' against this file")
    g.add_argument("--compare-config", metavar="PAIR", help="with an .mnn MODEL open: the dock's 'Compare "
                                                            "configurations' with this pair (e.g. 'precision high vs low')")
    g.add_argument("--compare-beside", metavar="B.mnn", help="with an .onnx MODEL open: B.mnn opened side by side, "
                                                             "then the dock's 'Check B.mnn against ONNX Runtime' (the "
                                                             "file itself, fp32)")
    g.add_argument("--graph-shows", choices=["error", "time"], help="what the graph colours after an .mnn comparison: "
                                                                    "the error each op adds (default) or the time change")
    if not _has(p, "--seed"):
        add_input_arguments(p)
    if not _has(p, "--json"):
        p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def wanted(args) -> bool:
    return bool(getattr(args, "compare", None) or getattr(args, "compare_with", None)
                or getattr(args, "compare_config", None) or getattr(args, "compare_beside", None))


def _mnn_kind(args) -> bool:
    return bool(getattr(args, "compare_with", None) or getattr(args, "compare_config", None))


def check(args) -> str | None:
    """A usage problem of the compare options, or None."""
    if not wanted(args):
        for flag in ("show_mode", "metric", "atol", "rtol", "graph_shows"):
            if getattr(args, flag, None) is not None:
                return f"--{flag.replace('_', '-')} goes with --compare MODES"
        if getattr(args, "fix", False):
            return "--fix goes with --compare MODES"
        if getattr(args, "fix_out", None):
            return "--fix-out goes with --compare MODES --fix"
        return None
    if getattr(args, "fix_out", None) and not args.fix:
        return "--fix-out goes with --fix (it saves the fix's conversion)"
    if _mnn_kind(args):
        from mnnscope.gui.panels.compare import MNN_CONFIG_PAIRS
        if sum(bool(x) for x in (args.compare, args.compare_with, args.compare_config, args.compare_beside)) > 1:
            return "give one of --compare MODES, --compare-with B.mnn, --compare-config PAIR and --compare-beside B.mnn"
        if not args.model.lower().endswith(".mnn"):
            return "--compare-with/--compare-config need an .mnn MODEL (side A)"
        if args.compare_with and not os.path.isfile(args.compare_with):
            return f"--compare-with {args.compare_with}: no such file"
        labels = [label for label, _ in MNN_CONFIG_PAIRS]
        if args.compare_config and args.compare_config not in labels:
            return f"--compare-config: one of {'; '.join(labels)}"
        if args.fix or args.show_mode:
            return "--fix and --show-mode go with --compare MODES"
        return None
    if args.graph_shows:
        return "--graph-shows goes with --compare-with or --compare-config"
    if args.compare_beside:
        if args.compare:
            return "--compare-beside runs the .mnn as it is (fp32): give it without --compare MODES"
        if not args.model.lower().endswith(".onnx"):
            return "--compare-beside needs the ONNX model (the reference) as MODEL"
        if not args.compare_beside.lower().endswith(".mnn") or not os.path.isfile(args.compare_beside):
            return f"--compare-beside {args.compare_beside}: no such .mnn file"
        if args.fix or args.show_mode:
            return "--fix and --show-mode go with --compare MODES"
        return None
    if not args.model.lower().endswith(".onnx"):
        return "--compare needs the ONNX model (the reference)"
    try:
        modes = parse_modes(args.compare)
    except ValueError as e:
        return f"--compare: {e}"
    if args.show_mode and args.show_mode not in modes:
        return f"--show-mode {args.show_mode}: not one of the compared modes ({', '.join(modes)})"
    if args.metric:
        if args.rtol is not None:
            return "--metric replaces --rtol"
        try:
            parse_metric(args.metric)
        except ValueError as e:
            return str(e)
    for flag, v in (("--atol", args.atol), ("--rtol", args.rtol)):
        if v is not None and not v >= 0:
            return f"{flag} must be a number >= 0"
    return None


def _wait(app, done, timeout_ms: int) -> bool:
    from PySide6.QtCore import QDeadlineTimer, QEventLoop
    deadline = QDeadlineTimer(timeout_ms)
    while not done():
        if deadline.hasExpired():
            return False
        app.processEvents(QEventLoop.AllEvents | QEventLoop.WaitForMoreEvents, 50)
    return True


def drive(win, app, args) -> tuple[int, dict | None, str | None]:
    """Run the Compare dock as a user would; (exit code, the twin's JSON without 'screenshot', error)."""
    from mnnscope.inspector.inputs.options import input_spec
    panel = win.panels.get("Compare")
    if panel is None:
        return 1, None, "the Compare dock is not built"
    win.show_dock("Compare")
    from PySide6.QtCore import Qt
    win.resizeDocks([win.docks["Compare"]], [int(win.height() * 0.42)], Qt.Vertical)  # room for the graph too
    if args.compare:
        panel.set_modes(parse_modes(args.compare))
    if args.metric:
        name, threshold = parse_metric(args.metric)
        panel.set_tolerance(atol=args.atol, metric=name, threshold=threshold)
    else:
        panel.set_tolerance(atol=args.atol, rtol=args.rtol)
    state = {"done": False, "error": None}

    def finished(_r):
        state["done"] = True

    def failed(msg):
        state["done"], state["error"] = True, msg

    panel.finished.connect(finished)
    panel.failed.connect(failed)
    if args.compare_with:
        started = panel.compare_with_mnn(os.path.abspath(args.compare_with), inputs=input_spec(args))
    elif args.compare_beside:
        other = os.path.abspath(args.compare_beside)
        win.open_model(other, second=True)
        if not _wait(app, lambda: win.second is not None and win.second.path == other
                     and win.second.main_view.scene is not None, 120_000):
            return 1, None, f"{args.compare_beside}: it did not open beside the model"
        started = panel.compare_beside(inputs=input_spec(args))
    elif args.compare_config:
        from mnnscope.gui.panels.compare import MNN_CONFIG_PAIRS
        labels = [label for label, _ in MNN_CONFIG_PAIRS]
        started = panel.compare_configurations(labels.index(args.compare_config), inputs=input_spec(args))
    else:
        started = panel.run(inputs=input_spec(args))
    if not started:
        return 1, None, panel.status.text()
    if not _wait(app, lambda: state["done"], 3_600_000):
        return 1, None, "the comparison timed out"
    if state["error"]:
        return 1, None, f"compare failed: {state['error']}"
    if args.show_mode:
        panel.show_mode(args.show_mode)
    mode = panel.mode
    timing = args.graph_shows == "time"
    if timing:
        if not errormap.has_time_delta(mode):
            return 1, None, f"{mode['mode']}: no per-op times to show ({(mode.get('time') or {}).get('error') or 'none'})"
        panel.graph_shows.setCurrentIndex(1)
    view = win.pane.main_view
    fd = mode.get("first_divergence")
    want = panel._names.get(fd["onnx_node"]) if fd else None
    kind = errormap.TIME_KIND if timing else errormap.OVERLAY_KIND
    _wait(app, lambda: not view.layout_busy and view.overlay is panel.overlay and panel.overlay is not None
          and panel.overlay.meta["mode"] == mode["mode"] and panel.overlay.meta["kind"] == kind
          and (want is None or view.canvas.selected == want), 60_000)
    out = {"mode": mode["mode"], "selected": panel.selected_node() if fd else None,
           "overlay": errormap.time_overlay_summary(mode) if timing else errormap.overlay_summary(mode),
           "ok": bool(panel.result.get("ok")), "run_id": panel.result.get("run_id"),
           "verdict": mode.get("verdict"), "cause": mode.get("cause"),
           "tab": panel.modes_bar.tabText(panel.modes_bar.currentIndex()),
           "cause_shown": panel.cause.text() if not panel.cause.isHidden() else None}
    if args.fix:
        state.update(done=False, error=None)
        panel.fixed.connect(finished)
        if panel.fix():
            if not _wait(app, lambda: state["done"], 3_600_000) or state["error"]:
                return 1, out, f"the fix failed: {state['error'] or 'timed out'}"
            fix = panel.fix_result or {}
            out["fix"] = {k: v for k, v in fix.items() if k != "result"}
            if getattr(args, "fix_out", None):
                saved = panel.save_fixed(args.fix_out)
                if saved is None:
                    return 1, out, f"could not save the fixed conversion to {args.fix_out}"
                out["fix"]["saved"] = saved
        else:
            out["fix"] = {"note": f"no fix for {mode['mode']}: it is not a failing quantized mode"}
    app.processEvents()
    return 0, out, None


def emit(args, out: dict | None, screenshot: str | None) -> None:
    if out is not None and getattr(args, "json", False):
        sys.stdout.write(json.dumps(_clean(dict(out, screenshot=screenshot)), default=str) + "\n")
        sys.stdout.flush()


def _clean(v):
    """Strict JSON: infinities and NaN as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v
