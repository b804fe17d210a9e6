"""The Profile overlay's callouts ("#1 11.1 µs (37%)") on the graph: drawn only for boxes the pane shows."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtGui import QColor  # noqa: E402

from test_gui import make_window, settings_dir, window  # noqa: E402,F401
from test_gui_profile import profile_and_wait, ready  # noqa: E402

pytestmark = pytest.mark.gui

CALLOUT = QColor("#7a0c0c")  # the callouts' frame and text


def _callout_pixels(hot) -> int:
    img = hot.grab().toImage()
    return sum(1 for y in range(0, img.height(), 2) for x in range(0, img.width(), 2)
               if img.pixelColor(x, y).rgb() == CALLOUT.rgb())


def test_a_box_below_the_pane_gets_no_callout_on_the_box_above(qtbot, window, samples):
    """cnn profiled from /relu/Relu at 1024x700: the MaxPool box lay just below the graph pane's bottom edge and its
    callout "#3 3.0 µs (10%)", moved up past the legend, sat on the Relu box as if it were Relu's (a new-user try).
    A callout is drawn where its box is at least partly in the pane."""
    view = ready(qtbot, window, samples / "cnn.onnx")
    panel, _ = profile_and_wait(qtbot, window, engine="ort")
    hot, c = panel.hot, view.canvas
    sc = view.scene
    t = view.table
    below = c._leaf_showing(sc, t.index_of("/maxpool/MaxPool"))
    above = c._leaf_showing(sc, t.index_of("/relu/Relu"))
    assert float(sc.y0[below]) > float(sc.y1[above])
    hot._hot, hot._cache_key = [(below, 1.0)], (id(sc), id(view.overlay), len(view._overlay_values))
    c.set_view(1.0, c.width() / 2 - float(sc.x0[below]), c.height() - float(sc.y0[below]))  # its top at the edge
    qtbot.wait(50)
    (_, r, _), = hot.rects()
    assert r.bottom() > 0 and r.top() < c.height()  # placed in view, over the box above it
    assert hot.shown() == [] and _callout_pixels(hot) == 0
    c.set_view(1.0, c.width() / 2 - float(sc.x0[below]), c.height() - 4 - float(sc.y0[below]))  # 4 px of it shown
    qtbot.wait(50)
    assert [lab["leaf"] for lab, _, _ in hot.shown()] == [below] and _callout_pixels(hot) > 0
