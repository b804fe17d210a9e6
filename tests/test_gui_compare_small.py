"""The Compare dock's right column at 1024x700 (a new-user try, decoder model, five modes): the plot's title, wider
than the plot, made pyqtgraph's plot item wider than its widget, so the title read "...first divergence, an", the x
axis ended near depth 100 of 127 with the points beyond cut at the dock's edge; the colour legend line ran past its
widget ("0.1 ■ nc"); the log axis read "10⁻⁶" beside "0.0001". Everything in the column stays inside the dock, the
plot shows every point, and the axis says its ticks in one format. Real MNN and ONNX Runtime runs."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtCore import QPoint, QPointF  # noqa: E402

from test_gui import docked_at_1024, make_window, settings_dir, window  # noqa: E402,F401
from test_gui_compare import _run  # noqa: E402
from test_gui_stats import tick_label_specs  # noqa: E402
from test_real_models import real_model  # noqa: E402

pytestmark = pytest.mark.gui
MODES = ["fp32", "low", "fp16w", "int8w", "int8"]


def _drawn_tick_strings(axis) -> list[str]:
    """The tick labels pyqtgraph draws on `axis` (its own drawing specs)."""
    return [text for _rect, _flags, text in tick_label_specs(axis)]


def _is_power(s: str) -> bool:
    return "10" in s and any(c in s for c in "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _ink_at_right_edge(widget, columns: int = 3) -> bool:
    """Whether anything is drawn in `widget`'s rightmost `columns` pixel columns (text cut at its edge), from a
    grab of what it paints: its plain background is one colour."""
    img = widget.grab().toImage()
    dpr = img.devicePixelRatio()
    xs = range(img.width() - int(columns * dpr), img.width())
    return len({img.pixel(x, y) for x in xs for y in range(img.height())}) > 1


def test_the_right_column_fits_the_dock_at_1024(qtbot, window):
    """Every problem is listed at once (a failure names each part of the column that does not fit)."""
    path = real_model("arabic_name_romanizer", "resources/decoder.onnx")
    panel = docked_at_1024(qtbot, window, path, "Compare")
    result = _run(qtbot, panel, MODES)
    assert [m["mode"] for m in result["modes"]] == MODES
    plot, legend = panel.plot, panel.legend
    qtbot.waitUntil(lambda: plot.isVisibleTo(panel) and plot.width() > 0, timeout=5000)
    qtbot.wait(300)  # the plot's layout and autorange settle on the next paints
    area = panel.scroll_area()
    right = area.viewport().width()
    problems = []
    # (the dock scrolls only vertically: its contents are as wide as its viewport)
    assert panel.width() <= right
    for w in (legend, plot):
        assert w.mapTo(area.viewport(), QPoint(w.width(), 0)).x() <= right, type(w).__name__

    # the plot item (title, axes, view box) no wider than the plot widget: pyqtgraph gives a title its text's width
    item = plot.getPlotItem()
    shown = plot.viewport().width()
    if item.sceneBoundingRect().right() > shown + 1:
        problems.append(f"plot item {item.sceneBoundingRect().width():.0f} px wide in a {shown} px plot")
    title = item.titleLabel
    if not title.isVisible() or title.sceneBoundingRect().right() > shown + 1:
        problems.append(f"title ends at {title.sceneBoundingRect().right():.0f} px of {shown}: {title.text!r}")
    assert title.text.startswith(f"{panel.mode['mode']}: error against depth")
    # the whole key, on hover; blue and amber are colours, not dots (an amber triangle is harmless and over)
    if not ("blue: first divergence" in plot.toolTip() and "amber: harmless" in plot.toolTip()):
        problems.append(f"the tooltip lacks the title's key: {plot.toolTip()!r}")

    # every plotted point within the x range and within the visible part of the view box
    box = plot.getViewBox()
    (x0, x1), (y0, _y1) = box.viewRange()
    depths = [p["depth"] for p in panel._points]
    assert max(depths) > 100 and x0 <= min(depths) and max(depths) <= x1, ((x0, x1), max(depths))
    for d in (min(depths), max(depths)):
        at = box.mapViewToScene(QPointF(d, y0)).x()
        if not 0 <= at <= shown:
            problems.append(f"the point at depth {d} is drawn at x {at:.0f} of a {shown} px plot")

    # the legend: nothing cut at its right edge, its pieces within its width (wrapped onto more lines)
    if _ink_at_right_edge(legend):
        problems.append(f"the legend's line is cut at its right edge ({legend.width()} px)")
    if hasattr(legend, "laid_out"):
        fm = legend.fontMetrics()
        pieces, height = legend.laid_out(legend.width())
        assert [k for k, *_ in pieces].count("scale") == 1 and any(k == "swatch" for k, *_ in pieces)
        for kind, what, x, _line in pieces:
            wide = {"text": lambda: fm.horizontalAdvance(what),
                    "swatch": lambda: 20 + fm.horizontalAdvance(what),
                    "scale": lambda: fm.horizontalAdvance(what[0]) + 8 + legend.RAMP + fm.horizontalAdvance(what[1])}
            if x + wide[kind]() > legend.width():
                problems.append(f"the legend's {what!r} ends past its width {legend.width()}")
        assert legend.height() >= height

    # one tick format on the log axis: all powers of ten, or all written out
    ticks = _drawn_tick_strings(plot.getAxis("left"))
    assert len(ticks) >= 2, ticks
    if not (all(_is_power(t) for t in ticks) or not any(_is_power(t) for t in ticks)):
        problems.append(f"the log axis mixes formats: {ticks}")
    assert not problems, problems
