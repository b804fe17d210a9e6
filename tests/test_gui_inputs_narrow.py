"""The Inputs dock docked narrow at the window's right (a tab beside Properties, ~300 px wide), as a new user tried it:
at 1024x700 "Defaults" read "D" and "Restore from run…" was off-screen, the source and range columns were out of view,
and a horizontal scroll bar of the rows sat above the dock's own (two nested areas scrolling sideways; even with the
dock's bar fully right the range's max field needed the inner one). At 1500x950 the romanizer decoder's rows showed
"batch = 1" only, their tgt_len and src_len boxes out of view. Narrow, each input is a block of lines; wide (the
bottom dock) a row per input as before."""
from __future__ import annotations

import pytest

from conftest import SAMPLES, require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtCore import QPoint, QRect, Qt  # noqa: E402
from PySide6.QtWidgets import QAbstractScrollArea, QLabel, QScrollBar  # noqa: E402

import test_gui  # noqa: E402
from test_gui import open_and_wait  # noqa: E402

# the window fixtures of test_gui (assigned, not imported by name: pyflakes knows no noqa)
make_window, settings_dir, window = test_gui.make_window, test_gui.settings_dir, test_gui.window

pytestmark = pytest.mark.gui


def _decoder():
    from test_real_models import real_model
    return real_model("arabic_name_romanizer", "resources/decoder.onnx")


def _docked_right(qtbot, window, size, path):
    """The window at `size` with `path` open and the Inputs dock dragged to the right, a tab beside Properties; its
    panel."""
    window.resize(*size)
    qtbot.waitUntil(lambda: window.width() == size[0] and window.height() == size[1])
    open_and_wait(qtbot, window, path, shapes=False)
    window.show_dock("Inputs")
    dock = window.docks["Inputs"]
    window.addDockWidget(Qt.RightDockWidgetArea, dock)
    window.tabifyDockWidget(window.docks["Properties"], dock)
    dock.show()
    dock.raise_()
    qtbot.waitUntil(lambda: dock.isVisible() and not dock.visibleRegion().isEmpty())
    qtbot.waitUntil(lambda: dock.width() < 420, timeout=5000)   # narrow: as the user met it (~305 / ~380 px)
    qtbot.wait(100)   # laid out
    return window.panels["Inputs"]


def _rect_in(w, ancestor) -> QRect:
    return QRect(w.mapTo(ancestor, QPoint(0, 0)), w.size())


def _within_width(w, viewport) -> bool:
    r = _rect_in(w, viewport)
    return r.left() >= 0 and r.right() < viewport.width()


def _parts(row) -> list:
    """What a user reaches in a row: its dim boxes, its source, its range fields (or its rule)."""
    fields = [row.low, row.high] if row.range_default is not None else [row.rule_label]
    return [b for b in row.dims if b is not None] + [row.source] + fields


def _check_usable(window, panel):
    dock = window.docks["Inputs"]
    outer = dock.widget()
    assert isinstance(outer, QAbstractScrollArea) and outer.widget() is panel
    # one scroll bar at most sideways: no area inside the dock's scroll area scrolls that way too
    sideways = [b for b in dock.findChildren(QScrollBar) if b.orientation() == Qt.Horizontal and b.isVisible()]
    assert len(sideways) <= 1, [type(b.parent().parent()).__name__ for b in sideways]
    inner = [a for a in panel.findChildren(QAbstractScrollArea) if a.horizontalScrollBar().isVisible()]
    assert not inner, inner
    # and the dock's own is not needed: the panel fits the dock's width
    assert panel.width() <= outer.viewport().width(), (panel.width(), outer.viewport().width())
    # the buttons at their whole width (not cut to "D") and in view
    for btn in (panel.reset_btn, panel.restore_btn):
        assert btn.isVisible()
        assert btn.width() >= btn.sizeHint().width(), (btn.text(), btn.width(), btn.sizeHint().width())
        assert _within_width(btn, outer.viewport()), (btn.text(), _rect_in(btn, outer.viewport()))
    # the rows: in the one area that scrolls them (up and down), none clipped sideways by its viewport
    area = panel.scroll
    body, view = area.widget(), area.viewport()
    assert body.width() <= view.width(), (body.width(), view.width())
    for row in panel.rows:
        for w in _parts(row):
            assert w.isVisibleTo(panel), (row.name, w.objectName() or type(w).__name__)
            r = _rect_in(w, body)
            assert r.top() >= 0 and r.bottom() < body.height(), (row.name, r, body.height())  # reached by scrolling
            assert _within_width(w, view), (row.name, type(w).__name__, _rect_in(w, view), view.width())
            assert _within_width(w, outer.viewport()), (row.name, type(w).__name__)


def test_docked_right_at_1024_every_part_of_every_row_is_in_reach(qtbot, window):
    panel = _docked_right(qtbot, window, (1024, 700), _decoder())
    assert window.docks["Inputs"].width() < 340
    _check_usable(window, panel)


def test_docked_right_at_1500_the_decoders_dim_boxes_are_all_in_view(qtbot, window):
    """Each decoder input's free dims (batch, tgt_len / src_len): every box in view, not "batch = 1" alone."""
    panel = _docked_right(qtbot, window, (1500, 950), _decoder())
    assert [len([b for b in r.dims if b is not None]) for r in panel.rows] == [2, 2, 2, 1]
    _check_usable(window, panel)
    view = panel.scroll.viewport()
    for row in panel.rows:
        for box in row.dims:
            if box is not None:
                assert box.width() >= min(box.minimumSizeHint().width(), box.maximumWidth())   # not squeezed
                assert _within_width(box, view), (row.name, box.text())


def test_docked_right_with_many_inputs_the_rows_scroll_one_way(qtbot, window):
    """moe_llm_kv's five inputs at 1024x700: more than the dock shows; they scroll up and down in one area."""
    panel = _docked_right(qtbot, window, (1024, 700), SAMPLES / "moe_llm_kv.onnx")
    _check_usable(window, panel)
    outer = window.docks["Inputs"].widget()
    assert outer.verticalScrollBar().maximum() == 0   # (not a second vertical bar around the rows' own)


def test_docked_right_image_and_text_pages_fit(qtbot, window):
    """An image input's Image page (path, mean, std, BGR, layout) and Text page in the narrow dock: in view."""
    from test_real_models import real_model
    panel = _docked_right(qtbot, window, (1024, 700), real_model("rapidocr", "models/PP-OCRv6_det_small.onnx"))
    row = panel.rows[0]
    outer = window.docks["Inputs"].widget()
    for kind, parts in (("Image", [row.image_path, row.mean, row.std, row.norm_btn, row.bgr, row.layout_label]),
                        ("Text", [row.text, row.tokenizer])):
        row.source.setCurrentText(kind)
        qtbot.wait(100)
        assert panel.width() <= outer.viewport().width()
        for w in parts + [b for b in row.dims if b is not None]:
            assert w.isVisibleTo(panel) and _within_width(w, panel.scroll.viewport()), (kind, type(w).__name__)
            assert w.width() >= min(w.minimumSizeHint().width(), w.maximumWidth())   # not squeezed


def _one_line_per_input(panel) -> bool:
    for row in panel.rows:
        centre = [w.mapTo(panel, QPoint(0, w.height() // 2)).y() for w in (row.name_label, row.shape_box, row.source)]
        if max(centre) - min(centre) > row.source.height() // 2:
            return False
    return True


def test_the_bottom_dock_keeps_a_row_per_input_and_a_wide_dock_gets_it_back(qtbot, window):
    """The bottom dock at 1024 px: a row per input (name, dtype, shape, source, range on one line) under the heads,
    as before. Docked right and made wide again, the rows go back to one line each."""
    window.resize(1024, 700)
    qtbot.waitUntil(lambda: window.width() == 1024)
    open_and_wait(qtbot, window, _decoder(), shapes=False)
    window.show_dock("Inputs")
    panel = window.panels["Inputs"]
    qtbot.waitUntil(lambda: panel.isVisible() and panel.width() > 900)
    qtbot.wait(100)
    assert _one_line_per_input(panel)
    heads = [lbl for lbl in panel.body.findChildren(QLabel) if lbl.text() == "<i>source</i>"]
    assert any(h.isVisibleTo(panel) for h in heads)   # the columns' heads
    top = [w.mapTo(panel, QPoint(0, w.height() // 2)).y() for w in (panel.model_label, panel.reset_btn,
                                                                     panel.restore_btn)]
    assert max(top) - min(top) <= 2   # the model, the seed and the buttons on one line
    assert not panel.scroll.horizontalScrollBar().isVisible()

    dock = window.docks["Inputs"]
    window.resize(1500, 950)
    qtbot.waitUntil(lambda: window.width() == 1500)
    window.addDockWidget(Qt.RightDockWidgetArea, dock)
    window.tabifyDockWidget(window.docks["Properties"], dock)
    dock.raise_()
    qtbot.waitUntil(lambda: dock.width() < 420, timeout=5000)
    qtbot.wait(100)
    assert not _one_line_per_input(panel)
    window.resizeDocks([dock], [1150], Qt.Horizontal)
    qtbot.waitUntil(lambda: dock.width() > 1050, timeout=5000)
    qtbot.waitUntil(lambda: _one_line_per_input(panel), timeout=5000)
    assert panel.width() <= dock.widget().viewport().width()


def test_the_wheel_over_a_size_box_scrolls_the_rows_and_leaves_the_size(qtbot, window):
    """Helper 82's try at 1024x700, the dock at the right: scrolling the rows with the wheel, "src_len = 8" came under
    the pointer and took the remaining steps (6; the next run used it). A box takes the wheel only once clicked."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication
    panel = _docked_right(qtbot, window, (1024, 700), _decoder())
    box = next(b for r in panel.rows if r.name == "memory" for b in r.dims if b is not None and b.value() == 8)
    assert not box.hasFocus()
    bar = panel.scroll.verticalScrollBar()
    before = bar.value()
    centre = QPointF(box.rect().center())
    for _ in range(3):
        QApplication.sendEvent(box, QWheelEvent(centre, QPointF(box.mapToGlobal(centre.toPoint())), QPoint(0, 0),
                                                QPoint(0, -120), Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False))
    assert box.value() == 8 and (window.input_spec().get("shapes") or {}).get("memory", [1, 8])[1] == 8
    assert bar.maximum() == 0 or bar.value() > before   # the rows scrolled instead (where there is more to see)
    assert box.focusPolicy() == Qt.StrongFocus   # (not WheelFocus: the wheel does not focus it either)
