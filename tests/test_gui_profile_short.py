"""The Profile dock in a short window (a new user at 1024x700, where a bottom dock gets ~260 px): after a run the
settings fold into one line and the notices take one, so the results table shows rows, not one or two; the
"Precision 'low' had no effect" notice pops over the graph once per model and settings, not after every run; the
timed conversion's settings are named as the Convert dock's form names them; the chart's bar names are whole where
they fit and never drawn over each other. Offscreen, with real MNN runs on resources/samples/encoder_block.onnx."""
from __future__ import annotations

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")  # skips here, fails under CI
from pytestqt.exceptions import TimeoutError as WaitTimeout  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from test_gui import docked_at_1024, make_window, open_and_wait, settings_dir, window  # noqa: E402,F401
from test_gui_profile import profile_and_wait  # noqa: E402
from test_gui_small_window import rows_in_sight  # noqa: E402
from test_gui_stats import overlapping, tick_label_specs  # noqa: E402

pytestmark = pytest.mark.gui

FAST = {"engine": "mnn", "runs": 2, "warmup": 1}


def encoder_at_1024(qtbot, window, samples):
    panel = docked_at_1024(qtbot, window, samples / "encoder_block.onnx", "Profile")
    qtbot.waitUntil(lambda: panel.ops_view.isVisible())
    return panel


def low_precision_ignored(result) -> None:
    if result["precision_effective"] == "low":  # a CPU with fp16 arithmetic: there is no notice to test
        pytest.skip("precision low had an effect on this CPU")


def test_after_a_run_the_settings_and_notices_fold_and_the_table_shows_five_rows(qtbot, window, samples):
    """1024x700: the settings' two rows, a two-line status and the precision and conversion notices left the Ops
    table 1-2 rows. After a run the settings are one line that says them (Change… shows the rows again) and the
    notices one line, the whole in its tooltip: five rows are in sight without dragging or scrolling."""
    panel = encoder_at_1024(qtbot, window, samples)
    assert panel.engine.isVisible() and panel.threads.isVisible()  # before a first run: the settings to set
    panel, result = profile_and_wait(qtbot, window, precision="low", **FAST)
    low_precision_ignored(result)
    area = window.docks["Profile"].widget()
    view = panel.ops_view
    assert view.model().rowCount() >= 8
    try:
        qtbot.waitUntil(lambda: rows_in_sight(view, area) >= 5, timeout=3000)  # the dock grows once laid out
    except WaitTimeout:
        pass  # said by the assertion below
    assert rows_in_sight(view, area) >= 5, (rows_in_sight(view, area), window.docks["Profile"].height())
    assert area.verticalScrollBar().value() == 0  # not by scrolling
    # the settings in one line, the run buttons beside it
    assert not panel.engine.isVisible() and not panel.threads.isVisible()
    assert panel.summary.isVisible() and panel.run_button.isVisible()
    assert "precision low" in panel.summary.text() and "2 runs after 1 warm-up" in panel.summary.text()
    line = panel.status.fontMetrics().lineSpacing()
    assert panel.status.height() < 2 * line, panel.status.height()
    # the notices in one line, the whole of each in the tooltip (and from text())
    notice = panel.notice
    assert notice.isVisible() and notice.height() < 2 * line + 8, notice.height()
    assert "had no effect on this CPU" in notice.text() and "\u2139 profiled a fresh conversion" in notice.text()
    # a run under a millisecond says its time is noise (helper 107 read 0.068 ms at low beside 0.031 ms at high as
    # fp16 twice as slow); in the dock, not popped over the graph
    from mnnscope.gui.panels.profile import SHORT_RUN
    assert panel.result["total_ms"] < 1 and f"\u2139 {SHORT_RUN}" in notice.text()
    assert not any(SHORT_RUN in card.n.text() for card in window.notes.cards)
    tip = " ".join(notice.toolTip().split())   # (in lines that fit a screen: wraplabel.wrap_tip)
    assert "had no effect on this CPU" in tip and "(kept at " in tip
    qtbot.mouseClick(notice, Qt.LeftButton)  # a click unfolds them
    qtbot.waitUntil(lambda: notice.height() >= 2 * line, timeout=3000)
    qtbot.mouseClick(notice, Qt.LeftButton)
    qtbot.waitUntil(lambda: notice.height() < 2 * line + 8, timeout=3000)
    # Change… shows the settings (and then says it folds them: it kept saying "Change…"); a change is said in the
    # folded line
    assert panel.change_button.text() == "Change\u2026"
    panel.change_button.click()
    qtbot.waitUntil(lambda: panel.engine.isVisible() and panel.threads.isVisible(), timeout=3000)
    assert panel.change_button.text() == "Fold"
    panel.threads.setValue(2)
    panel.change_button.click()
    qtbot.waitUntil(lambda: not panel.engine.isVisible() and panel.summary.isVisible(), timeout=3000)
    assert "2 threads" in panel.summary.text(), panel.summary.text()
    assert panel.change_button.text() == "Change\u2026"


def test_precision_without_effect_pops_once_per_model_and_settings(qtbot, window, samples):
    """A new user's every run at precision low popped "Precision 'low' had no effect on this CPU" over the graph.
    Said over the graph once for the model and its settings; the dock says it after every run."""
    encoder_at_1024(qtbot, window, samples)
    seen = []
    window.sink.subscribe(lambda n: seen.append(n.message))

    def popped() -> int:
        return sum("had no effect" in m for m in seen)

    panel, result = profile_and_wait(qtbot, window, precision="low", **FAST)
    low_precision_ignored(result)
    assert popped() == 1
    profile_and_wait(qtbot, window, precision="low", **FAST)
    assert popped() == 1, seen  # the same settings again: not over the graph a second time
    assert "had no effect on this CPU" in panel.notice.text()  # still in the dock
    profile_and_wait(qtbot, window, precision="low", **dict(FAST, threads=2))
    assert popped() == 2, seen  # other settings: said for them


def test_the_conversion_notice_names_the_settings_as_the_convert_dock_does(qtbot, window, samples):
    """The notice read "profiled a fresh conversion of encoder_block.onnx with the given settings (fp16=True)", the
    inspector's words: the Convert dock's form says "fp16 weights"."""
    from mnnscope.inspector.convert.settings import ConvertSettings
    encoder_at_1024(qtbot, window, samples)
    window.panels["Convert"].set_settings(ConvertSettings(fp16=True))
    try:
        panel, result = profile_and_wait(qtbot, window, **FAST)
    finally:
        window.panels["Convert"].set_settings(ConvertSettings())  # this model keeps no settings after the test
    assert any("with the given settings (fp16=True)" in w for w in result["warnings"])  # the CLI's words stay
    text = panel.notice.text()
    said = "profiled a fresh conversion of encoder_block.onnx with the Convert dock's settings (fp16 weights)"
    assert said in text, text
    assert "fp16=True" not in text and "fp16=True" not in panel.notice.toolTip()


def test_the_folded_settings_name_the_convert_docks_settings(qtbot, window, samples):
    """A new user's "Reconvert with settings…" left fp16 weights ticked in the Convert dock; the next Profile timed
    that conversion while the folded line said only "MNN on CPU · precision high · ...". The line names the
    conversion's settings as the Convert dock's form does, follows that dock, and says nothing for ONNX Runtime."""
    from mnnscope.inspector.convert.settings import ConvertSettings
    encoder_at_1024(qtbot, window, samples)
    panel, _ = profile_and_wait(qtbot, window, **FAST)
    assert panel.summary.isVisible() and "converted with" not in panel.summary.text()
    assert panel.summary.text().startswith("Next run: MNN on CPU")  # not the result's own (helper 113 read it so)
    convert = window.panels["Convert"]
    try:
        convert.set_settings(ConvertSettings(fp16=True))
        qtbot.waitUntil(lambda: panel.summary.text().endswith(" \u00b7 converted with fp16 weights"), timeout=3000)
        panel.engine.setCurrentIndex(panel.engine.findData("ort"))   # (ONNX Runtime converts nothing)
        assert "converted with" not in panel.summary.text(), panel.summary.text()
        panel.engine.setCurrentIndex(panel.engine.findData("mnn"))
        assert panel.summary.text().endswith("converted with fp16 weights")
    finally:
        convert.set_settings(ConvertSettings())  # this model keeps no settings after the test
    qtbot.waitUntil(lambda: "converted with" not in panel.summary.text(), timeout=3000)


def labels_drawn(panel) -> list:
    return [(rect, text) for rect, _flags, text in tick_label_specs(panel.chart.getAxis("left"))]


def test_the_charts_bar_names_are_whole_where_they_fit(qtbot, window, samples):
    """The chart cut every name over 26 characters ("output/…__matmul_converted") with room for it. A name is
    whole where it fits beside the bars, elided in the middle only where it does not."""
    from PySide6.QtGui import QFontMetrics
    panel = encoder_at_1024(qtbot, window, samples)
    panel, _ = profile_and_wait(qtbot, window, **FAST)
    window.resize(1900, 1000)  # room: the chart is ~700 px wide
    qtbot.waitUntil(lambda: panel.chart.width() > 600, timeout=5000)
    qtbot.wait(100)
    axis = panel.chart.getAxis("left")
    fm = QFontMetrics(axis.style.get("tickFont") or panel.chart.font())
    rows = sorted(panel.ops_model.rows, key=lambda r: -r["ms"])
    shown = [text for _, text in labels_drawn(panel)]
    assert len(shown) >= 3 and len(shown) == len(axis._tickLevels[0]), shown
    long = 0
    for label, row in zip(shown, rows):
        name = str(row["op"])
        tail = "/".join([p for p in name.split("/") if p][-4:])  # the most a label of these names keeps
        if fm.horizontalAdvance(tail) <= 0.5 * panel.chart.width():  # room: the name whole
            assert "\u2026" not in label and name.endswith(label), (label, name, panel.chart.width())
            long += len(label) > 26
    assert long, shown  # (a long name with room: what the test is about)


def test_the_charts_bar_names_never_overlap_in_a_short_dock(qtbot, window, samples):
    """In a short dock the chart's names (a fixed 16 px a bar, at least 3 bars) were printed over each other. As
    many bars as their names' height allows, each named, none over another."""
    panel = encoder_at_1024(qtbot, window, samples)
    panel, _ = profile_and_wait(qtbot, window, **FAST)
    dock = window.docks["Profile"]
    qtbot.wait(200)  # (the dock grows to show the table's rows after a run: first that, then the user's drag)
    window.resizeDocks([dock], [180], Qt.Vertical)
    qtbot.waitUntil(lambda: dock.height() < 200, timeout=5000)
    qtbot.wait(200)
    height = panel.chart.getViewBox().height()
    assert 0 < height < 50, height  # (a chart three 16 px bars did not fit)
    drawn = labels_drawn(panel)
    assert drawn, height
    rects = [rect for rect, _ in drawn]
    assert not overlapping(rects), (height, [(r.getRect(), t) for r, t in drawn])
    assert len(drawn) == len(panel.chart.getAxis("left")._tickLevels[0])  # every bar's name is drawn


def test_a_bar_name_is_elided_only_where_it_does_not_fit():
    """bar_labels with the chart's room: a name that fits is whole, however long; one that does not keeps the part
    that tells it apart and as much of its end as fits."""
    from mnnscope.gui.panels.profile import bar_labels
    rows = [{"op": "/encoder/layer.0/ffn/output/dense/MatMul_output_0__matmul_converted"},
            {"op": "/encoder/layer.0/ffn/intermediate/dense/MatMul_output_0__matmul_converted"}]
    assert bar_labels(rows, "op", fits=lambda t: len(t) <= 60) == [
        "output/dense/MatMul_output_0__matmul_converted", "intermediate/dense/MatMul_output_0__matmul_converted"]
    short = bar_labels(rows, "op", fits=lambda t: len(t) <= 30)
    assert short == ["output/\u2026ut_0__matmul_converted", "intermediate/\u2026matmul_converted"], short
    assert bar_labels([{"op": "x" * 40}], "op", fits=lambda t: len(t) <= 11) == ["xxxx\u2026xxxxxx"]


def test_a_failed_profile_is_said_whole_and_names_whose_results_stay_below(qtbot, window, samples):
    """A new user profiled cnn.onnx, opened another model and profiled it; the run failed and the dock said "Profile
    failed: ...without …" in one cut line over cnn.onnx's table, which then read as the failed model's. The failure
    now names its model and whose results the tables hold, word-wrapped whole; the next run folds it again."""
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Profile")
    profile_and_wait(qtbot, window, **FAST)
    rows = panel.ops_view.model().rowCount()
    open_and_wait(qtbot, window, samples / "unsupported_op.onnx", shapes=False)
    with qtbot.waitSignal(window.runner.job_finished, timeout=120000):
        window.actions_by_name["Profile"].trigger()
    qtbot.waitUntil(lambda: not panel.busy and "failed" in panel.status.text(), timeout=30000)
    text = panel.status.text()
    # the model named once (the converter's message names the file)
    assert text.startswith("Profile failed: ") and text.count("unsupported_op.onnx") == 1, text
    assert text.endswith("The results below are of cnn.onnx (another model)."), text
    assert "next: replace Hardmax with ops MNN supports" in text, text  # what to do, as the Convert dock says
    assert panel.ops_view.model().rowCount() == rows  # cnn.onnx's, as said
    line = panel.status.fontMetrics().lineSpacing()
    qtbot.waitUntil(lambda: panel.status.height() >= 2 * line, timeout=3000)  # wrapped, not cut
    assert not panel.status.elided
    # cnn.onnx again: its own result's line, folded to one line
    open_and_wait(qtbot, window, samples / "cnn.onnx", shapes=False)
    qtbot.waitUntil(lambda: panel.status.text().startswith("cnn.onnx"), timeout=5000)
    qtbot.waitUntil(lambda: panel.status.height() < 2 * line, timeout=3000)


def test_a_run_the_inputs_refuse_still_says_whose_results_stay_below(qtbot, window, samples):
    """F5 refused by the Inputs dock after another model's profile: the dock said only why, over cnn.onnx's table
    (before F5 it said "Profile of cnn.onnx (another model)": helper 96's try). It says both now."""
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Profile")
    profile_and_wait(qtbot, window, **FAST)
    open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    (row,) = window.panels["Inputs"].rows
    row.high.setText("200")
    row.high.textEdited.emit("200")   # past the embedding's 96 rows: refused
    window.actions_by_name["Profile"].trigger()
    text = panel.status.text()
    assert text.startswith("Profile did not start: the Inputs dock refuses its inputs"), text
    assert text.endswith("The results below are of cnn.onnx (another model)."), text


def test_the_chart_before_a_run_is_its_title_alone(qtbot, window, samples):
    """Before any run the chart drew an empty 0-1 frame with ticks 0.2 ... 1.0 over "median ms" (helper 96's try):
    it says what will be there, no axes; a run brings the axes with its bars."""
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Profile")
    chart = panel.chart
    assert chart.plotItem.titleLabel.text.startswith("Run \u25b8 Profile (F5)"), chart.plotItem.titleLabel.text
    assert not chart.getAxis("bottom").isVisible() and not chart.getAxis("left").isVisible()
    profile_and_wait(qtbot, window, **FAST)
    assert chart.getAxis("bottom").isVisible() and chart.getAxis("left").isVisible()
    assert chart.plotItem.titleLabel.text.startswith("Top "), chart.plotItem.titleLabel.text


def test_a_chart_title_too_long_for_the_chart_takes_its_short_form_before_a_cut(qtbot, window, samples):
    """Helper 110 read "Top 15 nodes by time on the gra..." over the By node chart at 1024x700: where the whole title
    does not fit and its form without "on the graph" does, that form is shown (whole in the tooltip)."""
    from PySide6.QtGui import QFont, QFontMetrics
    from mnnscope.gui.panels.profile import CHART_TITLE_PT
    from mnnscope.gui.plotaxis import title_room
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Profile")
    profile_and_wait(qtbot, window, **FAST)
    chart = panel.chart
    font = QFont(chart.font())
    font.setPointSizeF(CHART_TITLE_PT)
    fm, room = QFontMetrics(font), title_room(chart, margin=28)
    k = 0
    while fm.horizontalAdvance(f"Top 15 nodes {'x' * k} by time on the graph") <= room:
        k += 1
    text = f"Top 15 nodes {'x' * k} by time on the graph"
    short = text.replace(" on the graph", "")
    assert fm.horizontalAdvance(short) <= room
    panel._chart_title(text)
    assert chart.plotItem.titleLabel.text == short and chart.toolTip() == text


def test_the_key_focus_goes_from_run_to_cancel_and_back(qtbot, window, samples):
    """A click on a dock's Run left the key focus where Qt puts it when the button is disabled: the next widget in
    the tab chain (in the Compare dock the .mnn row's configuration box, scrolled out of view by the run, where the
    arrow keys changed it unseen: helper 98's try). It goes to Cancel while the job runs, and back to Run."""
    from PySide6.QtWidgets import QApplication
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Profile")
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    panel.engine.setCurrentIndex(panel.engine.findData("mnn"))
    panel.run_button.setFocus()
    qtbot.waitUntil(panel.run_button.hasFocus, timeout=3000)
    with qtbot.waitSignal(window.runner.job_finished, timeout=120000):
        qtbot.mouseClick(panel.run_button, Qt.LeftButton)
        assert panel.busy and QApplication.focusWidget() is panel.cancel_button, QApplication.focusWidget()
    qtbot.waitUntil(lambda: not panel.busy, timeout=30000)
    assert QApplication.focusWidget() is panel.run_button, QApplication.focusWidget()


def test_another_models_failure_is_not_left_over_the_next_model(qtbot, window, samples):
    """A first profile failed on unsupported_op.onnx; the user opened moe_llm.onnx and the dock still said "Profile
    failed: .../unsupported_op.onnx: conversion to MNN failed ..." (helper 101's try). The next model gets the dock's
    first words; the failing model itself keeps its failure."""
    from mnnscope.gui.panels.profile import IDLE_TEXT
    panel = docked_at_1024(qtbot, window, samples / "unsupported_op.onnx", "Profile")
    with qtbot.waitSignal(window.runner.job_finished, timeout=120000):
        window.actions_by_name["Profile"].trigger()
    qtbot.waitUntil(lambda: not panel.busy and "failed" in panel.status.text(), timeout=30000)
    failure = panel.status.text()
    open_and_wait(qtbot, window, samples / "unsupported_op.onnx", shapes=False)   # the same model again: kept
    assert panel.status.text() == failure
    open_and_wait(qtbot, window, samples / "moe_llm.onnx", shapes=False)
    qtbot.waitUntil(lambda: panel.status.text() == IDLE_TEXT, timeout=5000)
