"""Find (Ctrl+F), as a first-time user meets it (issue 19 item 7): the default searches op types and node
names only (tensor names are an explicit choice), every match is outlined on the canvas at once, "Select
all" selects them visibly (opening their scopes) and fits them in view, and counts read "1 match"."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_gui import drawn_items, make_window, open_and_wait, relaid, settings_dir, window  # noqa: E402,F401

from PySide6.QtWidgets import QStyle  # noqa: E402

from mnnscope.gui.search import MODES, find_ops  # noqa: E402

pytestmark = pytest.mark.gui


def _combo_option(box):
    from PySide6.QtWidgets import QStyleOptionComboBox
    opt = QStyleOptionComboBox()
    box.initStyleOption(opt)
    return opt


def test_default_search_is_op_type_or_node_name_not_tensor_names(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    window.actions_by_name["Find"].trigger()
    bar = view.search_bar
    assert MODES[bar.mode.currentIndex()] == "node" and bar.mode.currentText() == "Op type or name"
    # its whole label shows (it read "Op type or r" at 1500 and 1024 px wide: tryout 2026-12-04)
    qtbot.waitUntil(lambda: bar.isVisible() and bar.mode.isVisible())
    qtbot.wait(300)  # the bar's layout settled
    room = bar.mode.style().subControlRect(QStyle.CC_ComboBox, _combo_option(bar.mode), QStyle.SC_ComboBoxEditField,
                                           bar.mode).width()
    assert room >= bar.mode.fontMetrics().horizontalAdvance("Op type or name"), room
    qtbot.keyClicks(bar.edit, "MatMul")
    t = view.table
    expected = {i for i in range(t.node_count)
                if t.op_types[i].lower() == "matmul" or "matmul" in (t.names[i] or t.ids[i]).lower()}
    assert set(bar.matches.tolist()) == expected
    assert all(t.op_types[i] == "MatMul" or "matmul" in t.names[i].lower() for i in bar.matches)
    readers = {i for i in range(t.node_count) if t.op_types[i] != "MatMul" and "matmul" not in t.names[i].lower()
               and any("matmul" in t.tensor_names[k].lower() for k in t.node_inputs(i) if k >= 0)}
    assert readers, "the sample must have ops that only read a MatMul's output"
    assert not readers & set(bar.matches.tolist())  # the Reshape reading /MatMul_output_0 is not a match
    # tensor names stay one choice away
    bar.mode.setCurrentIndex(MODES.index("all"))
    assert readers <= set(bar.matches.tolist())
    assert set(find_ops(t, view.tree.hidden, "MatMul", "tensor").tolist()) >= readers


def test_every_match_is_outlined_and_counts_are_singular_or_plural(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    view.show_search()
    bar = view.search_bar
    bar.set_query("Softmax", "type")
    assert len(bar.matches) > 1
    assert view.canvas.marked.tolist() == sorted(bar.matches.tolist())  # outlined before any Enter
    assert bar.count.text() == f"{len(bar.matches)} matches"
    t = view.table
    one = next(i for i in range(t.node_count) if t.names[i] and
               sum(t.names[i].lower() in (n or "").lower() for n in t.names) == 1)
    bar.set_query(t.names[one], "name")  # the one match is shown at once, its scopes opened
    assert bar.matches.tolist() == [one] and bar.count.text() == "1 of 1"
    qtbot.waitUntil(lambda: view.canvas.selected == one and not view.layout_busy, timeout=20000)
    bar.select_all()
    assert bar.count.text() == "1 match selected"
    bar.close_bar()
    assert len(view.canvas.marked) == 0


def test_select_all_opens_and_fits_the_matches(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    relaid(qtbot, view, view.collapse_all)
    view.show_search()
    bar = view.search_bar
    bar.set_query("Softmax", "type")
    hidden_before = [i for i in bar.matches.tolist() if view.scene.leaf_of_item[i] < 0]
    assert hidden_before, "collapsed: the matches sit inside boxes"
    # tall enough for the matches (2,600 units apart) at a readable zoom; when they are not: the test of a tall graph
    view.window().resize(1400, 2000)
    qtbot.wait(100)
    relaid(qtbot, view, bar.select_all)
    qtbot.waitUntil(lambda: all(i in drawn_items(view) for i in bar.matches.tolist()), timeout=10000)
    sc = view.scene
    assert all(sc.leaf_of_item[i] >= 0 for i in bar.matches.tolist())  # drawn as themselves now
    assert view.canvas.marked.tolist() == sorted(bar.matches.tolist())
    assert bar.count.text() == f"{len(bar.matches)} matches selected"
    # the fit is tight: the matches fill a good part of the view
    leaves = sc.leaf_of_item[bar.matches]
    x0, x1 = sc.x0[leaves].min(), sc.x1[leaves].max()
    y0, y1 = sc.y0[leaves].min(), sc.y1[leaves].max()
    vx0, vy0, vx1, vy1 = view.canvas.view_rect()
    assert max((x1 - x0) / (vx1 - vx0), (y1 - y0) / (vy1 - vy0)) > 0.5 or view.canvas.scale == 1.0
    bar.set_query("MatMul")
    window.actions_by_name["Select All Matches"].trigger()
    assert view.canvas.marked.tolist() == sorted(bar.matches.tolist())
    assert view.selected_many and "ops selected" in window.properties.title.text()
    # closing the bar takes the outlines and the selection they stood for (Properties said "39 ops selected" with
    # nothing outlined: tryout 2026-12-04)
    bar.close_bar()
    assert not view.selected_many and "ops selected" not in window.properties.title.text()
    window.actions_by_name["Find"].trigger()
    bar.set_query("no-such-thing")
    bar.select_all()
    assert bar.count.text() == "no matches" and len(view.canvas.marked) == 0
    assert np.array_equal(bar.matches, np.zeros(0, np.int64))


def test_a_name_no_op_holds_finds_the_op_that_makes_a_tensor_so_named(qtbot, window, samples):
    """Helper 113 searched the model's output (fetch_name_0) and the Profile's slowest MNN op (Add.151, which MNN
    names after the tensor it makes) and read "no matches" until switching to Tensor name: where no op type or node
    name holds the text, the default search finds the ops making a tensor so named, and says so."""
    view = open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    view.show_search()
    bar = view.search_bar
    t = view.table
    (maker,) = [i for i in range(t.node_count) if any(t.tensor_names[k] == "probs" for k in t.node_outputs(i))]
    assert "probs" not in (t.names[maker] or t.ids[maker]).lower()
    bar.set_query("probs")
    assert bar.matches.tolist() == [maker] and bar.by_tensor
    qtbot.waitUntil(lambda: view.canvas.selected == maker, timeout=20000)  # one match: shown at once
    assert bar.count.text() == "1 of 1 by tensor"
    assert "a tensor so named" in " ".join(bar.count.toolTip().split())
    bar.set_query("Softmax")  # an op type matches: no fallback, no note
    assert not bar.by_tensor and not bar.count.toolTip() and len(bar.matches) >= 1
    bar.set_query("no-such-thing")
    assert bar.count.text() == "no matches" and not bar.by_tensor


def test_reopening_find_outlines_the_matches_again(qtbot, window, samples):
    view = open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    view.show_search()
    bar = view.search_bar
    bar.set_query("Conv")
    assert len(view.canvas.marked) == len(bar.matches) > 1
    bar.close_bar()
    assert len(view.canvas.marked) == 0
    window.actions_by_name["Find"].trigger()
    assert view.canvas.marked.tolist() == sorted(bar.matches.tolist())


def test_escape_and_shift_return_act_on_the_find_bar_that_has_the_focus(qtbot, window, samples):
    """The Find bar's Esc and Shift+Return shortcuts were window-wide (PySide6 drops QShortcut's context= with a
    callable): with Find open in both side-by-side panes, each key was ambiguous and did nothing. They act on the
    bar that has the focus, in either pane."""
    from PySide6.QtCore import Qt

    left = open_and_wait(qtbot, window, samples / "cnn.onnx")
    right = open_and_wait(qtbot, window, samples / "cnn.mnn", second=True)
    for view in (left, right):
        view.show_search()
        view.search_bar.edit.setText("Conv")
    qtbot.waitUntil(lambda: bool(left.search_bar.count.text() and right.search_bar.count.text()))
    for view, other in ((left, right), (right, left)):
        bar = view.search_bar
        bar.edit.setFocus()
        qtbot.waitUntil(bar.edit.hasFocus)
        qtbot.keyClick(bar.edit, Qt.Key_Return)
        first = bar.count.text()
        qtbot.keyClick(bar.edit, Qt.Key_Return)
        qtbot.keyClick(bar.edit, Qt.Key_Return, Qt.ShiftModifier)
        assert bar.count.text() == first  # back to the match before
        qtbot.keyClick(bar.edit, Qt.Key_Escape)
        assert not bar.isVisible() and other.search_bar.isVisible()
        view.show_search()  # open again for the other round
    # with the graph focused (a match clicked there), Esc closes that pane's bar too (tryout 9)
    left.canvas.setFocus()
    qtbot.waitUntil(left.canvas.hasFocus)
    qtbot.keyClick(left.canvas, Qt.Key_Escape)
    assert not left.search_bar.isVisible() and right.search_bar.isVisible()


def test_another_model_gets_a_find_bar_of_its_own(qtbot, window, samples):
    """Tryout 8: "Erf" stayed in the Find bar after another model was opened. A closed bar forgets its text; an
    open one searches the new model for it (its count and outlines are the new model's)."""
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    view.show_search()
    bar = view.search_bar
    bar.set_query("Softmax")
    assert len(bar.matches) and len(view.canvas.marked)
    bar.close_bar()
    view = open_and_wait(qtbot, window, samples / "encoder_block.onnx", shapes=False)
    assert view.search_bar is bar and bar.edit.text() == "" and len(bar.matches) == 0
    assert len(view.canvas.marked) == 0 and bar.count.text() == ""
    window.actions_by_name["Find"].trigger()  # reopened: empty, nothing outlined
    assert bar.edit.text() == "" and len(view.canvas.marked) == 0
    bar.set_query("MatMul")
    assert len(bar.matches)
    bar.next()
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)  # the bar open: searched again
    expected = find_ops(view.table, view.tree.hidden, "MatMul", "node", view.titles)
    assert bar.edit.text() == "MatMul" and np.array_equal(bar.matches, expected) and bar.current == -1
    assert view.canvas.marked.tolist() == sorted(expected.tolist())
    assert bar.count.text() == f"{len(expected)} matches"


def test_select_all_over_a_tall_graph_stays_readable(qtbot, window, samples):
    """Tryout 8: Select all on 13 matches spread over a 28,000 px tall graph zoomed out to a thin unreadable line.
    The zoom stays readable, the current match is in view, and the count says they span the graph."""
    from mnnscope.gui.canvas import FIT_MIN_SCALE
    view = open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    relaid(qtbot, view, view.expand_all)
    view.show_search()
    bar = view.search_bar
    bar.set_query("MatMul", "type")
    sc = view.scene
    leaves = sc.leaf_of_item[bar.matches]
    span = sc.y1[leaves].max() - sc.y0[leaves].min()
    assert span * FIT_MIN_SCALE > view.canvas.height(), "the matches must not fit at a readable zoom"
    bar.select_all()
    qtbot.waitUntil(lambda: not view.layout_busy, timeout=10000)
    assert view.canvas.scale >= FIT_MIN_SCALE
    assert view.canvas.marked.tolist() == sorted(bar.matches.tolist())
    assert bar.current == 0 and int(bar.matches[0]) in drawn_items(view)  # the match shown: the arrows go on
    n = len(bar.matches)
    assert bar.count.text() == f"{n} selected across the graph" and "span" in bar.count.toolTip()
    assert f"{n} matches selected" in window.statusBar().currentMessage()
    bar.next()
    qtbot.waitUntil(lambda: int(bar.matches[1]) in drawn_items(view), timeout=10000)
    assert bar.count.text() == f"2 of {n}"
