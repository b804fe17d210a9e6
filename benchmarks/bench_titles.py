"""Frame titles and collapse glyphs crossed by an edge, on the layout benchmark's models with every scope open.

An edge entering a frame runs down through its title bar; where the title (or the glyph) is drawn over it, the
edge vanishes under the title's fill just where one looks to see where it goes. This counts, per model, the
frames whose title as the window draws it (gui/canvas.py `frame_title`) or whose glyph meets an edge in the
title's line, from the edges' polylines (not from the scene's own record of them).

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_titles.py
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from PySide6.QtGui import QFontMetricsF  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

import bench_layout as B  # noqa: E402
from mnnscope.gui.canvas import GraphCanvas  # noqa: E402
from mnnscope.gui.scene import GLYPH, build_scene  # noqa: E402
from mnnscope.inspector.model.layout import estimate_sizes, layout_visible  # noqa: E402
from mnnscope.inspector.model.scopes import visible_graph  # noqa: E402


def crossings_at(pts_ptr, pts, box, y) -> list[float]:
    x0, _, x1, _ = box
    out = []
    for e in range(len(pts_ptr) - 1):
        p = pts[pts_ptr[e]:pts_ptr[e + 1]]
        a, b = p[:-1], p[1:]
        hit = (np.minimum(a[:, 1], b[:, 1]) <= y) & (y < np.maximum(a[:, 1], b[:, 1]))
        for (ax, ay), (bx, by) in zip(a[hit], b[hit]):
            x = ax + (bx - ax) * (y - ay) / (by - ay)
            if x0 <= x <= x1:
                out.append(float(x))
    return out


def main() -> int:
    app = QApplication.instance() or QApplication([])  # noqa: F841
    canvas = GraphCanvas()
    fm = QFontMetricsF(canvas.font_frame)
    total = crossed = 0
    for m in [B.ROOT / "resources" / "samples" / s for s in B.SAMPLES] + B.real_models():
        tree = B.load_tree(m)
        vg = visible_graph(tree, B.expansion(tree, "all"))
        w, h = estimate_sizes(vg)
        lay = layout_visible(vg, w, h)
        canvas.set_scene(build_scene(vg, lay))
        n = 0
        for f in range(len(vg.frames)):
            text, tx, gx = canvas.frame_title(f)
            xs = crossings_at(lay.edge_ptr, lay.edge_pts, lay.frame_box[f], lay.frame_box[f][1] + 14)
            tw = fm.horizontalAdvance(text)
            n += any(tx - 1 <= x <= tx + tw + 5 or gx - 1 <= x <= gx + GLYPH + 1 for x in xs)
        print(f"{m.name:28s} frames {len(vg.frames):4d}  title or glyph crossed by an edge {n:4d}")
        total += len(vg.frames)
        crossed += n
    print(f"{'all':28s} frames {total:4d}  title or glyph crossed by an edge {crossed:4d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
