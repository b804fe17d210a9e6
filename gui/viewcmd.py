"""`mnnscope view MODEL [--screenshot OUT.png|OUT.svg [--whole]] [--size WxH] [--expand all|none|SCOPE] [--timing]`.

With --screenshot or --timing the window opens offscreen, renders the model and exits: the PNG for docs
and CI (a .png without --whole is the whole window; an .svg is the graph's visible area; --whole is the
whole graph, as File > Export Image writes it), and with --timing one JSON object on stdout: {load_s, layout_s, first_paint_s, nodes_drawn,
rss_mb} (first_paint_s counts from the process start). Without them it opens the app on MODEL.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from mnnscope.gui import viewtwin_stats as stats_twin

USAGE, FAIL = 2, 1


def process_age() -> float:
    """Seconds since this process started (Linux /proc; elsewhere since this module was imported)."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED


_IMPORTED = time.perf_counter()


def rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# the headless twin's window: fixed, so its screenshots and figures do not depend on the screen. A window on screen
# gets its last size or one fitted to the screen (a new user at 1024x700 got 1600x1000 from `mnnscope view`, with
# Properties, the docks and the status bar off the screen)
HEADLESS_SIZE = (1600, 1000)


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size wants WIDTHxHEIGHT (e.g. 1600x1000), got '{text}'")
    if not (200 <= w <= 10000 and 200 <= h <= 10000):
        raise argparse.ArgumentTypeError(f"--size {text}: each side must be between 200 and 10000 pixels")
    return w, h


def build_parser() -> argparse.ArgumentParser:
    from mnnscope.inspector.cli.app import Parser
    p = Parser(prog="mnnscope view", description="Show a model's graph, or render it headless.")
    p.add_argument("model", help="an .onnx or .mnn file")
    p.add_argument("--screenshot", metavar="OUT.png|OUT.svg",
                   help="render offscreen, save the window as PNG (or the graph as SVG), exit")
    p.add_argument("--whole", action="store_true",
                   help="with --screenshot: the whole graph at full size, not the window (File > Export Image)")
    p.add_argument("--size", type=parse_size, default=None, metavar="WxH",
                   help="window size (headless: 1600x1000; a window: its last size, else fitted to the screen)")
    p.add_argument("--expand", default=None, metavar="all|none|SCOPE",
                   help="scopes to open: all, none, or a scope path such as /model/layers.0 (default: a "
                        "readable overview)")
    p.add_argument("--timing", action="store_true", help="print {load_s, layout_s, first_paint_s, nodes_drawn, "
                                                         "rss_mb} as JSON on stdout")
    p.add_argument("--theme", choices=("light", "dark"), default="light")
    p.add_argument("--convert", action="store_true", help="convert the .onnx in the Convert dock (its last settings) "
                                                          "before the screenshot; exit 1 if it fails")
    p.add_argument("--no-shapes", action="store_true", help="do not wait for the runner's shapes before the "
                                                            "screenshot")
    from mnnscope.gui.panels.runs import add_view_options as runs_options
    runs_options(p)
    from mnnscope.inspector.inputs.options import add_input_arguments
    # --seed, --shape, --input, --text/--tokenizer, --image/--mean/--std: set in the Inputs dock before the model
    # opens (gui/panels/inputs.py apply_view_arguments), so an .mnn model's shapes follow --shape
    add_input_arguments(p)
    from mnnscope.gui import viewtwin  # --profile and its options: the Profile dock's twin
    viewtwin.add_arguments(p)
    stats_twin.add_arguments(p)  # --stats, --stat, --overlay stats, --json (gui/viewtwin_stats.py)
    viewtwin.OVERLAY_HOOKS["stats"] = stats_twin.overlay_hook  # --profile --overlay stats: the Statistics dock
    from mnnscope.gui import viewtwin_compare
    viewtwin_compare.add_arguments(p)  # --compare MODES ... (the Compare dock's twin)
    from mnnscope.gui import viewtwin_text
    viewtwin_text.add_arguments(p)  # --generate / --llm-sweep (the Text dock's twin)
    return p


def run_view(argv: list[str]) -> int:
    """`mnnscope view`: its refusals before a window exists say so as JSON too with --json (stdout was empty)."""
    from mnnscope.inspector.cli.app import ArgError, say_arg_error
    try:
        args = build_parser().parse_args(argv)
    except ArgError as e:
        return say_arg_error(e, argv)
    code = _run_view(args)
    if isinstance(code, tuple):  # (exit code, message): refused before anything ran
        code, message = code
        _refuse(args, code, message)
    return code


def _refuse(args, code: int, message: str) -> None:
    """A refusal on stderr, and as the JSON error on stdout with --json."""
    print(f"mnnscope view: {message}", file=sys.stderr)
    if args is not None and getattr(args, "json", False):
        sys.stdout.write(json.dumps({"error": {"kind": "usage" if code == USAGE else "bad_model",
                                               "message": message}}) + "\n")
        sys.stdout.flush()


def _run_view(args):
    from mnnscope.inspector.errors import ModelError
    from mnnscope.inspector.formats.registry import detect
    try:
        detect(args.model)
    except ModelError as e:
        return FAIL, str(e)
    if args.screenshot and not args.screenshot.lower().endswith((".png", ".svg")):
        return USAGE, f"--screenshot wants a .png or .svg path, got '{args.screenshot}'"
    from mnnscope.inspector.cli.outpaths import check_output
    from mnnscope.inspector.errors import UsageError
    try:
        check_output("--screenshot", args.screenshot)
    except UsageError as e:
        return USAGE, str(e)
    if args.whole and not args.screenshot:
        return USAGE, "--whole goes with --screenshot OUT.png|OUT.svg"
    if args.convert and not args.screenshot:
        return USAGE, "--convert goes with --screenshot OUT.png"
    from mnnscope.gui import viewtwin
    problem = viewtwin.check(args)
    if problem:
        return USAGE, problem
    problem = stats_twin.usage_error(args)
    if problem:
        return USAGE, problem
    from mnnscope.gui import viewtwin_compare, viewtwin_text
    problem = viewtwin_compare.check(args) or viewtwin_text.check(args)
    if problem:
        return USAGE, problem
    if not (args.screenshot or args.timing or args.json or viewtwin.wanted(args) or stats_twin.wanted(args)
            or viewtwin_compare.wanted(args) or viewtwin_text.wanted(args)):
        from mnnscope.gui.app import open_window
        return open_window(args.model, theme=args.theme, expand=args.expand, size=args.size)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    args.size = args.size or HEADLESS_SIZE
    return _headless(args)


def _headless(args) -> int:
    from PySide6.QtCore import QEventLoop, QTimer

    from mnnscope.gui import viewtwin_compare
    from mnnscope.gui.app import _prefetch, make_app
    job = _prefetch(args.model)
    from mnnscope.gui.window import MainWindow
    app = make_app()
    win = MainWindow(theme=args.theme, persist=False)
    win.resize(*args.size)
    win.show()
    result: dict = {}
    loop = QEventLoop()
    state = {"error": None, "painted": False, "shapes": args.no_shapes}

    def failed(msg):
        state["error"] = msg
        loop.quit()

    def painted():
        state["painted"] = True
        result["first_paint_s"] = process_age()
        result["nodes_drawn"] = int(win.pane.main_view.canvas.last_drawn)
        if state["shapes"]:
            loop.quit()

    def shapes_done(*_):
        state["shapes"] = True
        if state["painted"]:
            loop.quit()

    win.load_failed.connect(failed)
    win.pane.main_view.first_painted.connect(painted)
    win.shapes_loaded.connect(shapes_done)
    win.shapes_failed.connect(shapes_done)
    win.expand_failed.connect(failed)
    from mnnscope.gui.panels.inputs import apply_view_arguments
    from mnnscope.inspector.errors import UsageError
    try:
        apply_view_arguments(win, args)
    except UsageError as e:
        print(f"mnnscope view: {e}", file=sys.stderr)
        win.shutdown()
        win.close()
        return USAGE
    if not win.open_model(args.model, expanded=args.expand, job=job):
        return _fail(win, state["error"] or "cannot open", args)
    QTimer.singleShot(600_000, loop.quit)
    loop.exec()
    if state["error"]:
        return _fail(win, state["error"], args)
    if not state["painted"]:
        return _fail(win, "timed out before the first paint", args)
    app.processEvents()
    # the summary pane as the window shows it counted, at the dim sizes the runner works out for the Inputs dock's
    stats_twin._wait(app, lambda: win.dims_settled() and win.properties.summary_settled(), 20.0)
    view = win.pane.main_view
    result["load_s"] = win.timings.get("load_s")
    result["layout_s"] = view.timings.get("layout_s")
    result["rss_mb"] = round(rss_mb(), 1)
    from mnnscope.gui import viewtwin
    if args.profile:  # the Profile dock's twin runs, screenshots and prints its JSON itself
        code = viewtwin.finish(win, app, args)
        win.shutdown()
        win.close()
        return code
    code = 0
    if getattr(args, "runs_diff", None):  # the Runs dock's workflow (gui/panels/runs.py)
        from mnnscope.gui.panels.runs import show_runs_diff
        problem = show_runs_diff(win, args.runs_diff)
        if problem:
            return _fail(win, problem, args)
    if args.convert:  # the Convert dock's workflow (gui/panels/convertview.py)
        from mnnscope.gui.panels.convertview import run_convert_view
        code, result["convert"] = run_convert_view(win)
    stats = stats_twin.run(win, args, app) if stats_twin.wanted(args) else None
    if isinstance(stats, str):
        return _fail(win, stats, args)
    twin = text_twin = None
    if viewtwin_compare.wanted(args):
        code, twin, problem = viewtwin_compare.drive(win, app, args)
        if problem:
            print(f"mnnscope view: {problem}", file=sys.stderr)
    from mnnscope.gui import viewtwin_text
    if viewtwin_text.wanted(args):
        code, text_twin, problem = viewtwin_text.drive(win, app, args)
        if problem:
            print(f"mnnscope view: {problem}", file=sys.stderr)
    shot = None  # what was written: {path, format, area, width, height, ...}
    if args.screenshot:
        win.repaint()
        if args.whole or args.screenshot.lower().endswith(".svg"):
            from mnnscope.gui.export import ExportError, export_image
            try:
                shot = export_image(view, args.screenshot, whole=args.whole)
            except (ExportError, OSError) as e:
                print(f"mnnscope view: {e}", file=sys.stderr)
                code = FAIL
        else:
            pix = win.grab()
            if pix.save(args.screenshot):
                shot = {"path": os.path.abspath(args.screenshot), "format": "png", "area": "window",
                        "width": pix.width(), "height": pix.height()}
            else:
                print(f"mnnscope view: cannot write {args.screenshot}", file=sys.stderr)
                code = FAIL
    from mnnscope.gui.noticelist import notices_json
    notices = notices_json(win)  # (the window's, before it closes)
    win.shutdown()
    win.close()
    if twin is not None:
        viewtwin_compare.emit(args, twin, os.path.abspath(args.screenshot) if args.screenshot and code == 0 else None)
    if text_twin is not None:
        viewtwin_text.emit(args, text_twin, os.path.abspath(args.screenshot) if args.screenshot and code == 0 else None)
    if args.timing:
        out = {k: (round(result[k], 3) if isinstance(result.get(k), float) else result.get(k))
               for k in ("load_s", "layout_s", "first_paint_s", "nodes_drawn", "rss_mb")}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    stats_twin.print_json(args, stats)
    if not (twin is not None or text_twin is not None or args.timing or (stats is not None and args.json)):
        # a plain screenshot (or --json alone): say what was drawn and written, as JSON with --json
        if args.json:
            out = {"model": os.path.abspath(args.model), "screenshot": shot, "size": list(args.size),
                   "nodes_drawn": result.get("nodes_drawn"), "notices": notices,
                   **({"convert": result["convert"]} if "convert" in result else {}),
                   **{k: round(result[k], 3) for k in ("load_s", "layout_s", "first_paint_s")
                      if isinstance(result.get(k), float)}}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
        elif shot is not None:
            print(f"wrote {shot['path']} ({shot['width']}x{shot['height']}, {shot['area']})")
    return code


def _fail(win, message: str, args=None) -> int:
    _refuse(args, FAIL, message)
    win.shutdown()
    win.close()
    return FAIL
