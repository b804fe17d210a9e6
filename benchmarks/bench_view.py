"""Graph viewer benchmarks: open-to-first-paint, frame times while panning/zooming, memory.

    .venv/bin/python benchmarks/bench_view.py [--nodes 20000 100000] [--runs 3] [--out benchmarks/out]

1. Open to first paint: `mnnscope view MODEL --timing` in a fresh process (offscreen), median of --runs:
   first_paint_s counts from the process start (Python start-up, imports and window included), load_s is
   the child-process parse, layout_s the first layout; rss_mb is the app's memory with the model open and
   the runner's shapes merged.
2. Frame times: the 20k-node model in the app (offscreen raster painting, as a desktop without GPU
   compositing): a scripted sequence of pans and zooms in the default (collapsed) view, and again fully
   expanded; each frame is a synchronous repaint of the graph view (canvas + minimap), timed by the wall
   clock. Targets (issue 6): first paint <= 1.5 s (20k) and <= 5 s (100k); median frame <= 16 ms collapsed
   and <= 50 ms expanded; RSS <= 500 MB with 100k nodes.
Writes bench_view.json to --out and prints a table.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"first_paint_s": {20000: 1.5, 100000: 5.0}, "frame_collapsed_ms": 16.0, "frame_expanded_ms": 50.0,
           "rss_mb_100k": 500.0}


def make_model(n: int, out: Path) -> Path:
    path = out / f"decoder_{n // 1000}k.onnx"
    if not path.exists():
        spec = importlib.util.spec_from_file_location("gen_large", ROOT / "benchmarks" / "gen_large.py")
        gen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gen)
        import onnx
        onnx.save(gen.make_decoder(n), path)
    return path


def view_timings(path: Path, runs: int) -> list[dict]:
    """`mnnscope view MODEL --timing` in fresh processes: one {load_s, layout_s, first_paint_s, ...} per run."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    rows = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(path), "--timing"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise SystemExit(f"view failed on {path}: {r.stderr.strip()}")
        rows.append(json.loads(r.stdout))
    return rows


def first_paint(path: Path, runs: int) -> dict:
    rows = view_timings(path, runs)
    med = {k: statistics.median(row[k] for row in rows) for k in rows[0]}
    med["runs"] = rows
    return med


def _pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def frame_times(path: Path) -> dict:
    """Runs in this process: the app offscreen, scripted pans and zooms, wall-clock per repaint."""
    sys.path.insert(0, str(ROOT))
    from PySide6.QtCore import QEventLoop, QTimer

    from mnnscope.gui import settings as cfg
    from mnnscope.gui.app import make_app
    from mnnscope.gui.window import MainWindow
    import tempfile
    cfg.use_folder(tempfile.mkdtemp(prefix="mnnscope-bench-"))
    app = make_app()
    win = MainWindow(theme="light", persist=False)
    win.resize(1600, 1000)
    win.show()
    view = win.pane.main_view

    def wait(signal, timeout=600_000):
        loop = QEventLoop()
        signal.connect(loop.quit)
        QTimer.singleShot(timeout, loop.quit)
        loop.exec()
        signal.disconnect(loop.quit)

    win.open_model(str(path))
    wait(view.layout_ready)
    app.processEvents()
    c = view.canvas

    def frame(times):
        t0 = time.perf_counter()
        view.repaint()
        times.append((time.perf_counter() - t0) * 1000.0)

    def script(times):
        """Pans at three zoom levels, then a zoom in and out around the centre."""
        base = c.scale
        for scale in (base, base * 2.5, max(base / 4, 0.02)):
            c.set_view(scale, c.tx, c.ty)
            for k in range(40):
                dx = 23.0 if (k // 10) % 2 == 0 else -23.0
                c.set_view(c.scale, c.tx + dx, c.ty - 31.0)
                frame(times)
        c.set_view(base, c.tx, c.ty)
        for _ in range(25):
            c.zoom(1.12)
            frame(times)
        for _ in range(50):
            c.zoom(1 / 1.12)
            frame(times)

    out = {}
    collapsed: list[float] = []
    c.fit()
    frame([])  # warm caches once, as a user's first frame would
    script(collapsed)
    out["collapsed"] = {"frames": len(collapsed), "median_ms": statistics.median(collapsed),
                        "p90_ms": _pct(collapsed, 0.9), "max_ms": max(collapsed), "leaves": int(view.scene.n_leaves)}
    t0 = time.perf_counter()
    view.expand_all()
    wait(view.layout_ready)
    out["expand_all_s"] = time.perf_counter() - t0
    expanded: list[float] = []
    c.fit()  # the top of the tall graph, readable
    frame([])
    script(expanded)
    c.fit_all()  # then the whole graph at once
    for _ in range(20):
        c.set_view(c.scale, c.tx + 15.0, c.ty)
        frame(expanded)
    out["expanded"] = {"frames": len(expanded), "median_ms": statistics.median(expanded),
                       "p90_ms": _pct(expanded, 0.9), "max_ms": max(expanded), "leaves": int(view.scene.n_leaves)}
    win.shutdown()
    win.close()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[20000, 100000])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    p.add_argument("--skip-frames", action="store_true")
    p.add_argument("--skip-open", action="store_true")
    p.add_argument("--platform", default="offscreen",
                   help="Qt platform for the frame-time run: offscreen, or xcb to paint on a real X display")
    args = p.parse_args(argv)
    os.environ["QT_QPA_PLATFORM"] = args.platform
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}, "open": {}, "targets": TARGETS}
    for n in [] if args.skip_open else args.nodes:
        path = make_model(n, args.out)
        report["open"][str(n)] = first_paint(path, args.runs)
        r = report["open"][str(n)]
        print(f"{n:>7} nodes: first paint {r['first_paint_s']:.2f} s (load {r['load_s']:.2f} s, layout "
              f"{r['layout_s']:.3f} s), {r['nodes_drawn']} items drawn, RSS {r['rss_mb']:.0f} MB", flush=True)
    if not args.skip_frames:
        n = min(args.nodes)
        report["frames"] = frame_times(make_model(n, args.out))
        report["frames"]["nodes"] = n
        report["frames"]["platform"] = args.platform
        for k in ("collapsed", "expanded"):
            f = report["frames"][k]
            print(f"{n:>7} nodes {k:>9}: {f['frames']} frames, median {f['median_ms']:.1f} ms, p90 "
                  f"{f['p90_ms']:.1f} ms, max {f['max_ms']:.1f} ms ({f['leaves']} items)", flush=True)
        print(f"        expand all: {report['frames']['expand_all_s']:.2f} s", flush=True)
    name = "bench_view.json" if args.platform == "offscreen" and not args.skip_open else \
        f"bench_view_{args.platform}{'_frames' if args.skip_open else ''}.json"
    (args.out / name).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
