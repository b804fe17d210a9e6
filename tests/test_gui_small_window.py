"""A new user at 1024x700 (tryout 72): the Profile dock's tables showed one row after the first profile and their
headers were cut ("ns on the grap…", "T…"), the chart named the table's "Add.217" "Conv.82", the Statistics dock
was wider than the window (its legend's maximum and its side text out of view), and "Select all" took the Find
bar's search field and mode box. Offscreen, with real runs; what is asserted is what the user sees (rows in sight,
geometry inside the window, whole titles), with margins."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from PySide6.QtCore import QPoint, QRect, Qt  # noqa: E402

from test_gui import (docked_at_1024, make_window, open_and_wait, relaid, settings_dir,  # noqa: E402,F401
                      window)
from test_gui_profile import profile_and_wait  # noqa: E402
from test_gui_stats import overlapping, run_stats, tick_label_rects  # noqa: E402

pytestmark = pytest.mark.gui


def in_dock(widget, area) -> QRect:
    """`widget`'s rectangle in the dock's scroll area's viewport (what of it the dock shows: intersect with
    area.viewport().rect())."""
    return QRect(widget.mapTo(area.viewport(), QPoint(0, 0)), widget.size())


def rows_in_sight(view, area) -> int:
    """Rows of a table the user sees at least three quarters of: inside the table's own viewport and inside the
    part of the dock its scroll area shows."""
    seen = in_dock(view.viewport(), area).intersected(area.viewport().rect())
    at = view.viewport().mapTo(area.viewport(), QPoint(0, 0))
    model = view.model()
    n = 0
    for r in range(model.rowCount()):
        rect = view.visualRect(model.index(r, 0)).translated(at)
        if rect.height() > 0 and rect.intersected(seen).height() >= 0.75 * rect.height():
            n += 1
    return n


def profiled_at_1024(qtbot, window, samples):
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Profile")
    qtbot.waitUntil(lambda: panel.ops_view.isVisible())
    panel, result = profile_and_wait(qtbot, window, engine="mnn")
    assert panel.ops_model.rowCount() >= 8, "cnn.onnx on MNN times more ops than the dock shows"
    return panel, result


def test_after_the_first_profile_the_tables_show_several_rows(qtbot, window, samples):
    """Tryout 72, 1024x700: after the first profile the Ops table showed one row ("Add.217") under the settings, the
    status and the notice until the user dragged the dock taller. At least four rows are in sight without
    dragging or scrolling, in each table, and the graph keeps about half the height."""
    panel, _ = profiled_at_1024(qtbot, window, samples)
    area = window.docks["Profile"].widget()
    view = panel.ops_view
    qtbot.waitUntil(lambda: rows_in_sight(view, area) >= 4, timeout=5000)  # the dock grows once laid out
    assert area.verticalScrollBar().value() == 0  # not by scrolling
    assert not panel.notice.visibleRegion().isEmpty()  # the notice (which conversion was timed) stays in view
    for other in (panel.nodes_view, panel.types_view):
        panel.tabs.setCurrentWidget(other)
        qtbot.waitUntil(lambda: rows_in_sight(other, area) >= min(4, other.model().rowCount()), timeout=5000)
    central, dock = window.centralWidget().height(), window.docks["Profile"].height()
    assert central >= 0.4 * (central + dock), (central, dock)  # the heat map on the graph stays in view too


def test_the_profile_tables_headers_read_whole(qtbot, window, samples):
    """Tryout 72 (c31.png), 1024 px: the By node table's "ms on the graph" read "ns on the grap…" and its last
    column "T…" at the view's edge. Every title whose column starts in view is drawn whole inside its column
    and inside the view."""
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Profile")
    qtbot.waitUntil(lambda: panel.ops_view.isVisible())
    panel.nodes_model.set_rows([{"node": "/layer1/conv1/Conv", "type": "Conv", "ms": 0.1365, "share": 0.055,
                                 "ops": "/layer1/conv1/Conv_output_0, /layer1/relu/Relu_output_0"}])
    panel.nodes_view.sortByColumn(2, Qt.DescendingOrder)
    for view in (panel.ops_view, panel.nodes_view, panel.types_view):
        panel.tabs.setCurrentWidget(view)
        qtbot.waitUntil(view.isVisible)
        qtbot.wait(50)
        header = view.horizontalHeader()
        width = view.viewport().width()
        for col in range(header.count()):
            left, size = header.sectionViewportPosition(col), header.sectionSize(col)
            title = view.model().headerData(col, Qt.Horizontal)
            align = view.model().headerData(col, Qt.Horizontal, Qt.TextAlignmentRole)
            names = view.model().sourceModel().columns[col][2] is None  # a column of names, not of numbers
            at_start = align is not None and bool(Qt.AlignmentFlag(align) & Qt.AlignLeft)
            text = header.fontMetrics().horizontalAdvance(title) + 8
            if left + size <= width:  # the whole column in view: its title fits in it (bold, the sort arrow beside)
                assert size >= header.sectionSizeHint(col) - 1, (title, size, header.sectionSizeHint(col))
            elif names and left + text <= width:  # a wide name column cut by the view's edge: its title at its
                assert at_start, (title, left, size, width)  # start, in view (centred, it was past the edge)


def test_the_charts_bars_name_ops_as_the_table_does(qtbot, window, samples):
    """Tryout 72 (shot29): the Ops table listed "Add.217 … Convolution" and the bar chart beside it "Conv.82" for
    the same op. The chart's labels name the rows as the first column of the table beside it does (the op in the
    Ops tab, the node in the By node tab), and as many bars as its height holds, their labels apart."""
    panel, _ = profiled_at_1024(qtbot, window, samples)
    qtbot.wait(200)

    def labels():
        levels = panel.chart.getAxis("left")._tickLevels
        return [text for _, text in levels[0]] if levels else []

    def same_name(label: str, name: str) -> bool:  # a long name's middle is elided ("fc/…matmul_converted")
        head, _, tail = label.rpartition("\u2026")
        return name.endswith(tail) and head.rstrip("/") in name

    ops = sorted(panel.ops_model.rows, key=lambda r: -r["ms"])
    shown = labels()
    assert len(shown) >= 3, shown
    assert all(same_name(label, str(row["op"])) for label, row in zip(shown, ops)), (shown, [r["op"] for r in ops])
    assert any(str(r["op"]) != str(r["node"]).split(" +")[0] for r in ops[:len(shown)])  # MNN names ops its own way
    rects = tick_label_rects(panel.chart.getAxis("left"))
    assert len(rects) == len(shown) and not overlapping(rects), [r.getRect() for r in rects]
    panel.tabs.setCurrentWidget(panel.nodes_view)  # the By node table: the chart ranks and names nodes
    qtbot.waitUntil(lambda: labels() != shown, timeout=5000)
    nodes = sorted(panel.nodes_model.rows, key=lambda r: -r["ms"])
    assert all(same_name(label, str(row["node"])) for label, row in zip(labels(), nodes)), labels()
    rects = tick_label_rects(panel.chart.getAxis("left"))
    assert rects and not overlapping(rects), [r.getRect() for r in rects]


def test_the_statistics_dock_fits_the_window_width(qtbot, window, samples):
    """Tryout 72 (shot32, shot36), 1024x700: after a statistics run of a conversion ("… converted with
    weight_quant_bits=8") the dock's contents were wider than the window: a scroll bar, the legend's maximum out
    of view, and "no tensor of this op was read (fused or re…" cut. The contents fit the dock's width, the legend
    whole, the side text wrapped inside it."""
    from mnnscope.inspector.convert.settings import ConvertSettings
    from mnnscope.inspector.profile.tensorstats import rows_of_node
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Statistics")
    window.panels["Profile"].apply_settings({"engine": "mnn"})
    window.panels["Convert"].set_settings(ConvertSettings(weight_quant_bits=8))
    panel, _ = run_stats(qtbot, window)
    assert "converted with" in panel.status.text()
    panel.set_statistic("max_abs")
    table = window.pane.main_view.table
    unread = [i for i in range(table.node_count) if not rows_of_node(panel.rows, i, panel.op_nodes)]
    panel.show_node(unread[0] if unread else 0)
    qtbot.wait(200)
    area = window.docks["Statistics"].widget()
    seen = area.viewport().rect()
    assert panel.width() <= seen.width() and not area.horizontalScrollBar().isVisible(), (panel.width(), seen)
    for widget in (panel.legend, panel.overlay_box, panel.status, panel.detail, panel.plot):
        rect = in_dock(widget, area)
        assert rect.left() >= 0 and rect.right() <= seen.right(), (widget, rect, seen)
    assert panel.detail.height() >= panel.detail.heightForWidth(panel.detail.width()) - 1  # wrapped, not cut
    window.panels["Convert"].set_settings(ConvertSettings())


def bar_state(bar) -> dict:
    return {"edit": bar.edit.width(), "mode": bar.mode.isVisible(),
            "right": max(w.geometry().right() for w in (bar.edit, bar.mode, bar.count, bar.prev_btn, bar.next_btn,
                                                          bar.all_btn, bar.close_btn) if w.isVisible())}


def select_all_and_wait(qtbot, bar, view):
    bar.select_all()
    qtbot.waitUntil(lambda: not view.layout_busy, timeout=30000)
    qtbot.wait(100)


def test_select_all_leaves_the_find_bars_controls_usable(qtbot, make_window, samples):
    """Tryout 72 (shot07, shot12), 1024x700: after "Select all" the count ("85 selected across the graph") took the
    search field's room and, side by side, left it ~70 px. The field and the mode box keep their room; the count's
    whole text stays its own (text, tooltip)."""
    w = make_window()
    w.resize(1024, 700)
    qtbot.waitUntil(lambda: w.width() == 1024)
    view = open_and_wait(qtbot, w, samples / "moe_llm.onnx", shapes=False)
    relaid(qtbot, view, view.expand_all)  # matches spread over a tall graph: the long count
    view.show_search()
    bar = view.search_bar
    bar.set_query("MatMul", "type")
    qtbot.wait(100)
    before = bar_state(bar)
    assert before["mode"] and before["edit"] >= 150, before
    select_all_and_wait(qtbot, bar, view)
    assert bar.count.text().endswith("selected across the graph")
    after = bar_state(bar)
    assert after["mode"] and after["edit"] >= before["edit"] - 4 and after["right"] <= bar.width(), (before, after)
    shown = bar.count.shown_text()
    assert shown.rstrip("\u2026") and bar.count.text().startswith(shown.rstrip("\u2026")), shown
    assert bar.count.fontMetrics().horizontalAdvance(shown) <= bar.count.contentsRect().width()
    bar.close_bar()
    # side by side, each pane about half the window: the bar goes compact and the field keeps room to type
    open_and_wait(qtbot, w, samples / "moe_llm.mnn", second=True, shapes=False)
    qtbot.waitUntil(lambda: view.width() < 520, timeout=10000)
    view.show_search()
    bar.set_query("MatMul", "type")
    qtbot.wait(200)
    before = bar_state(bar)
    select_all_and_wait(qtbot, bar, view)
    after = bar_state(bar)
    assert after["edit"] >= max(100, before["edit"] - 4) and after["mode"] == before["mode"], (before, after)
    assert after["right"] <= bar.width() <= view.width(), (after, bar.width(), view.width())

