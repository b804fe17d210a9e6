"""Reconvert and re-run after "Check X.mnn against ONNX Runtime", and a Compare run that leaves out the mode the
Convert dock's precision is (a new-user try at 1024x700, 2026-12-04).

The user converted encoder_block with fp16 weights (encoder_block.fp16.mnn, opened beside), checked that file, then
set 8-bit weights and pressed Reconvert and re-run: the conversion wrote encoder_block.int8w.mnn, but the repeat
checked encoder_block.fp16.mnn again ("running encoder_block.fp16.mnn as it is") and the report read "fp32: worst
output rel_l2 0.000875 -> 0.000875", as if 8-bit weights changed nothing (checked by hand: 0.00738). Then Run with
fp32, low and int8 ticked after converting with fp16 weights gave the same numbers as before, with no word that the
dock's fp16 weights are what the fp16w mode runs."""
from __future__ import annotations

import os

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI

from PySide6.QtCore import Qt  # noqa: E402

from test_gui import make_window, open_and_wait, settings_dir, window  # noqa: E402,F401

pytestmark = pytest.mark.gui
RUN_TIMEOUT = int(os.environ.get("MNNSCOPE_TEST_COMPARE_MS", 600_000))


def _convert(qtbot, window, settings) -> str:
    dock = window.panels["Convert"]
    window.show_dock("Convert")
    dock.set_settings(settings)
    with qtbot.waitSignal(dock.conversion_done, timeout=RUN_TIMEOUT) as done:
        assert dock.start()
    assert done.args[0] == "ok", dock.last_result
    return dock.last_result.output


def test_rerun_after_checking_the_mnn_beside_checks_the_new_conversion(qtbot, window, tmp_path, samples):
    from mnnscope.inspector.convert.settings import ConvertSettings
    model = tmp_path / "cnn.onnx"
    model.write_bytes((samples / "cnn.onnx").read_bytes())
    open_and_wait(qtbot, window, model)
    fp16 = _convert(qtbot, window, ConvertSettings(fp16=True))
    assert os.path.basename(fp16) == "cnn.fp16.mnn"
    qtbot.waitUntil(lambda: window.second is not None and window.second.path
                    and os.path.abspath(window.second.path) == os.path.abspath(fp16), timeout=60000)
    compare = window.panels["Compare"]
    window.show_dock("Compare")
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT) as checked:
        assert compare.compare_beside()
    before = checked.args[0]["modes"][0]
    assert before["mnn_model"] == os.path.abspath(fp16)
    label_before = _tab_label(compare, 0)
    assert label_before.startswith("cnn.fp16.mnn") and "fp16w" in label_before, label_before

    dock = window.panels["Convert"]
    dock.set_settings(ConvertSettings(weight_quant_bits=8))
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT) as repeated, \
            qtbot.waitSignal(dock.rerun_done, timeout=RUN_TIMEOUT) as done:
        assert dock.reconvert_and_rerun()
    new = dock.last_result.output
    assert os.path.basename(new) == "cnn.int8w.mnn" and os.path.isfile(fp16)  # written beside, not over it
    after = repeated.args[0]["modes"][0]
    # the repeat checked the file the reconversion wrote (it checked cnn.fp16.mnn again)
    assert after["mnn_model"] == os.path.abspath(new), after["mnn_model"]
    assert after["conversion"]["size_bytes"] == os.path.getsize(new) != os.path.getsize(fp16)
    assert f"running {os.path.basename(new)} as it is" in compare.status.text(), compare.status.text()
    d = done.args[0]
    assert [os.path.basename(f) for f in d["given_files"]] == ["cnn.fp16.mnn", "cnn.int8w.mnn"]
    lines = dock.deltas.text()
    assert "checked cnn.fp16.mnn \u2192 cnn.int8w.mnn" in lines, lines
    # the checked files' row by the dock's labels of them, not "fp32:" (a fresh fp32 conversion, to a user)
    label_after = _tab_label(compare, 0)
    assert label_after.startswith("cnn.int8w.mnn") and "int8w" in label_after, label_after
    rows = [line for line in lines.split("\n")
            if ": worst output rel_l2 " in line and not line.startswith("your conversion")]
    assert len(rows) == 1, lines
    assert not rows[0].startswith("fp32"), rows[0]
    assert rows[0].startswith(f"{label_before} \u2192 {label_after}: worst output rel_l2 "), (rows[0], label_after)
    # and the numbers are the new file's: 8-bit weights err more than fp16 ones on this model
    assert after["outputs"][0]["rel_l2"] > before["outputs"][0]["rel_l2"]
    dock.set_settings(ConvertSettings())


def _tab_label(panel, i: int) -> str:
    """Mode tab `i`'s text less its verdict's mark and figure (" \u2713 0.0021", " \u2717 failed"): the label the dock
    gives that row."""
    text, mark, _what = panel.modes_bar.tabText(i).rsplit(" ", 2)
    assert mark in ("\u2713", "\u2248", "\u2717")
    return text.removesuffix(" (emulated)")


def test_run_says_which_mode_runs_the_convert_docks_precision(qtbot, window, samples):
    from mnnscope.inspector.convert.settings import ConvertSettings
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    dock = window.panels["Convert"]
    window.show_dock("Convert")
    dock.set_settings(ConvertSettings(fp16=True))
    compare = window.panels["Compare"]
    window.show_dock("Compare")
    compare.set_modes(["fp32"])
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT):
        assert compare.run()
        assert "the Convert dock's fp16 weights are what fp16w runs: tick fp16w" in compare.status.text(), \
            compare.status.text()
    # said again when it is done (the start's line is overwritten by progress)
    assert "tick fp16w to compare them" in compare.status.text(), compare.status.text()
    # the plot's points name their node when hovered (pyqtgraph's own tip read "x: 19 y: -1.26 data=16")
    qtbot.waitUntil(lambda: bool(compare._points), timeout=10000)  # (plotted once the tables are filled)
    tip = compare.scatter.opts["tip"](x=0.0, y=0.0, data=len(compare._points) - 1)
    assert compare._points[-1]["onnx_node"] in tip and "rel L2" in tip and "data=" not in tip, tip
    # ticked, nothing to say
    compare.set_modes(["fp32", "fp16w"])
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT):
        assert compare.run()
        assert "tick fp16w" not in compare.status.text()
    dock.set_settings(ConvertSettings())


def test_the_toolbar_names_the_runs(qtbot, window, samples):
    """A new user found nothing on the toolbar that runs the model (icons only: open, find, zoom, side by side) and
    guessed that Run > Profile (F5) was the run: Profile and Compare are on it, by name, with their shortcuts."""
    from PySide6.QtWidgets import QToolBar
    bar = window.findChild(QToolBar, "toolbar_main")
    shown = {a.iconText(): bar.widgetForAction(a) for a in bar.actions() if bar.widgetForAction(a) is not None}
    for label, action, keys in (("Profile", "Profile", "F5"), ("Compare", "Compare with ONNX Runtime", "Ctrl+F5")):
        button = shown[label]
        assert button.defaultAction() is window.actions_by_name[action]
        assert button.toolButtonStyle() == Qt.ToolButtonTextBesideIcon and button.text() == label
        assert button.toolTip().endswith(f"({keys})") and not button.icon().isNull()
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    profile = window.panels["Profile"]
    profile.apply_settings({"runs": 1, "warmup": 0})
    with qtbot.waitSignal(profile.finished, timeout=RUN_TIMEOUT) as done:
        shown["Profile"].click()
    assert done.args[0]["ops"]
    # Compare first shows its dock, to choose the modes (Profile runs at once), and says that the same button runs them
    compare = window.panels["Compare"]
    shown["Compare"].click()
    qtbot.waitUntil(lambda: window.docks["Compare"].isVisible())
    assert compare.status.text() == "Choose the modes, then Run (or Compare on the toolbar again, Ctrl+F5)."
    for name, box in compare.mode_boxes.items():
        box.setChecked(name == "fp32")
    with qtbot.waitSignal(compare.finished, timeout=RUN_TIMEOUT) as done:
        shown["Compare"].click()
    assert [m["mode"] for m in done.args[0]["modes"]] == ["fp32"]
    assert compare.headline.text().startswith("fp32")
    # another model opened, the dock hidden: its toolbar button says whose the results below are (it said "Choose
    # the modes, then Run" over cnn's verdicts and its probs output, with moe_llm.onnx open: a new-user try), and
    # the headline says it too
    window.docks["Compare"].hide()
    open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    shown["Compare"].click()
    qtbot.waitUntil(lambda: window.docks["Compare"].isVisible())
    assert compare.status.text() == ("The results below are of cnn.onnx (another model): choose the modes, then Run "
                                     "to compare moe_llm.onnx (or Compare on the toolbar again, Ctrl+F5).")
    assert compare.headline.text().startswith("cnn.onnx (not the open model): fp32")
    open_and_wait(qtbot, window, samples / "cnn.onnx")   # its own model again: its own headline
    assert compare.headline.text().startswith("fp32")


def test_the_profile_chart_fits_its_title_and_bar_names_at_1024(qtbot, window, samples):
    """A new-user try at 1024x700: "Top 3 nodes by time on the graph" was wider than the ~400 px chart, and a pyqtgraph
    title is never narrower than its text: the plot widened past the dock, its bars and axis cut ("...on the gra");
    on the Ops tab the bar names lost their first characters at the chart's left edge."""
    from PySide6.QtGui import QFontMetrics
    from test_gui import docked_at_1024
    panel = docked_at_1024(qtbot, window, samples / "moe_llm.onnx", "Profile")
    panel.apply_settings({"engine": "mnn", "runs": 1, "warmup": 0})
    with qtbot.waitSignal(panel.finished, timeout=RUN_TIMEOUT):
        window.actions_by_name["Profile"].trigger()
    for tab in (panel.nodes_view, panel.tabs.widget(0)):
        panel.tabs.setCurrentWidget(tab)
        qtbot.wait(100)
        chart, item = panel.chart, panel.chart.plotItem
        assert chart.width() < 560, chart.width()   # (narrow, as the user had it)
        # the plot inside its widget: nothing past the right edge
        assert item.vb.sceneBoundingRect().right() <= chart.viewport().width(), \
            (item.vb.sceneBoundingRect(), chart.viewport().width())
        assert chart.toolTip().startswith("Top ") and item.titleLabel.text.startswith("Top ")
        axis = chart.getAxis("left")
        fm = QFontMetrics(chart.font())
        labels = [t for _v, t in axis._tickLevels[0]]
        assert labels and axis.width() >= max(fm.horizontalAdvance(t) for t in labels), (axis.width(), labels)
