"""The Statistics dock: a statistics run read per tensor and per node (histograms with the runner's counts, an
overlay by statistic), the first NaN/Inf producer of a model that makes NaN outlined and stepped to, the
threads x precision x memory sweep, and the headless twin `mnnscope view --stats --overlay stats --json`.
Real runs through the runner, no mocks."""
from __future__ import annotations

import json
import os
import time
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")
from PySide6.QtCore import Qt  # noqa: E402

from test_gui import (docked_at_1024, drag_bottom_separator, make_window, open_and_wait, settings_dir,  # noqa: E402,F401
                      wait_for_emission, window)

from mnnscope.inspector.profile.tensorstats import nonfinite_producers, tensor_rows  # noqa: E402

pytestmark = pytest.mark.gui


def make_nan_model(path: Path) -> Path:
    """x -> Relu -> Sub 0.5 (negatives) -> Log (NaN: its producer) -> Mul -> Add -> y: NaN flows downstream."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    shift = numpy_helper.from_array(np.full([1, 8], 0.5, np.float32), "shift")
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Sub", ["r", "shift"], ["s"], name="sub"),
             helper.make_node("Log", ["s"], ["l"], name="log"),
             helper.make_node("Mul", ["l", "shift"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "r"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "nan_model", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [shift])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def nan_model(tmp_path) -> Path:
    return make_nan_model(tmp_path / "nan_model.onnx")


def make_overflow_model(path: Path) -> Path:
    """x * 1e10 -> Cast int32 (out of range: -2147483648 on x86, the saturated end elsewhere) -> Cast float
    (its producer of float values at the int32 limit) -> Relu -> y."""
    import onnx
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Mul", ["x", "big"], ["scaled"], name="scale"),
             helper.make_node("Cast", ["scaled"], ["as_int"], to=TensorProto.INT32, name="to_int"),
             helper.make_node("Cast", ["as_int"], ["back"], to=TensorProto.FLOAT, name="to_float"),
             helper.make_node("Relu", ["back"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "overflow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor("big", TensorProto.FLOAT, [], [1e10])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def run_stats(qtbot, window):
    panel = window.panels["Statistics"]
    with qtbot.waitSignal(panel.finished, timeout=120000) as blocker:
        assert panel.run()
    return panel, blocker.args[0]


def warm_up(qtbot, window, samples, ui_watchdog):
    """The first paint of a process builds glyph caches (~100 ms), and the dock's first show lays out and paints
    its pyqtgraph plots for the first time (~60 ms of CPU, once per process): not what the tests measure."""
    ui_watchdog.pause()
    open_and_wait(qtbot, window, samples / "control_flow.onnx")
    window.show_dock("Statistics")
    qtbot.wait(200)
    ui_watchdog.resume()


# ----- the Qt-free mapping (inspector.profile.tensorstats) -------------------------------------------------
def test_the_first_nonfinite_producer_is_the_log_not_what_follows(nan_model, runner_client, tmp_path):
    from mnnscope.inspector.formats.loadproc import load_table
    from mnnscope.inspector.profile.service import ProfileOptions, run_profile
    table = load_table(str(nan_model))
    result = run_profile(ProfileOptions(model=str(nan_model), stats=True, runs=1, warmup=1), client=runner_client)
    rows = tensor_rows(result, table)
    by_tensor = {r.tensor: r for r in rows}
    assert {"r", "s", "l", "m", "y"} <= set(by_tensor)
    assert [by_tensor[t].nonfinite > 0 for t in "rslmy"] == [False, False, True, True, True]
    producers = nonfinite_producers(rows, table)
    assert [table.names[i] for i in producers] == ["log"]


def test_float_values_at_the_int32_limit_name_the_op_that_first_writes_them(runner_client, tmp_path):
    """An overflow leaves -2147483648 (or the range's other end) in a float tensor, finite and so not a NaN/Inf
    producer (the romanizer decoder's int8 run read -2.147e9 in a BinaryOp where fp32 gave 59, unflagged)."""
    from mnnscope.inspector.formats.loadproc import load_table
    from mnnscope.inspector.profile.service import ProfileOptions, run_profile
    from mnnscope.inspector.profile.tensorstats import int32_limit_producers
    path = make_overflow_model(tmp_path / "overflow.onnx")
    table = load_table(str(path))
    for engine in ("mnn", "ort"):
        result = run_profile(ProfileOptions(model=str(path), engine=engine, stats=True, runs=1, warmup=1),
                             client=runner_client)
        rows = tensor_rows(result, table)
        by_tensor = {r.tensor: r for r in rows}
        assert abs(abs(by_tensor["back"].at_int32_limit) - 2 ** 31) <= 128, engine
        assert by_tensor["scaled"].at_int32_limit is None   # +-1e10: large, not the limit
        assert by_tensor["as_int"].at_int32_limit is None   # an integer tensor is not judged (int64 bounds as int32)
        assert [table.names[i] for i in int32_limit_producers(rows, table)] == ["to_float"], engine
        assert nonfinite_producers(rows, table) == []


# ----- the dock ------------------------------------------------------------------------------------
def test_statistics_histogram_of_a_known_tensor_has_the_runners_counts(qtbot, window, samples, ui_watchdog):
    warm_up(qtbot, window, samples, ui_watchdog)
    view = open_and_wait(qtbot, window, samples / "cnn.onnx")
    window.show_dock("Statistics")
    window.panels["Profile"].apply_settings({"engine": "ort"})  # the Profile dock's engine (MNN to start with)
    panel, result = run_stats(qtbot, window)
    assert result["backend_used"] == "CPU" and result["run_id"]
    t = view.table
    # every node of the ONNX graph has its output's statistics (ONNX Runtime keeps every node's output)
    assert {r.node for r in panel.rows if r.node >= 0} == set(range(t.node_count))
    assert panel.nonfinite == [] and not panel.next_btn.isEnabled()
    # the model output is a known tensor: saved by the run, its histogram computed here independently
    out = result["outputs"][0]
    values = np.load(out["path"]).astype(np.float64).ravel()
    expected, _ = np.histogram(values, bins=64, range=(values.min(), values.max()))
    producer = int(t.producer[t.tensor_index(out["name"])])
    qtbot.wait(50)   # each user action gets its own turn of the event loop: the watchdog measures each
    view.select(producer)   # selecting the op on the graph shows its output's statistics
    qtbot.waitUntil(lambda: panel.shown_node == producer, timeout=5000)
    x, y = panel.hist_curve.getData()
    assert y.tolist() == expected.tolist() == panel.hist_counts
    assert len(x) == 65 and x[0] == pytest.approx(values.min()) and x[-1] == pytest.approx(values.max())
    assert out["name"] in panel.detail.text()
    # the table row of that tensor is the current one, and choosing another row selects its op on the graph
    assert panel.model.rows[panel.table_view.currentIndex().row()].tensor == out["name"]
    other = next(r for r in panel.rows if r.node >= 0 and r.node != producer)
    qtbot.wait(50)
    panel.table_view.setCurrentIndex(panel.model.index(panel.model.row_of(other), 0))
    qtbot.waitUntil(lambda: view.canvas.selected == other.node, timeout=10000)
    qtbot.wait(50)
    assert panel.hist_counts == other.stats["hist"]["counts"]
    # sorting by max |x| puts the largest first
    panel.table_view.sortByColumn(8, Qt.DescendingOrder)
    qtbot.wait(50)
    assert panel.model.rows[0].max_abs == max(r.max_abs for r in panel.rows if r.max_abs is not None)
    assert panel.model.data(panel.model.index(0, 8)) == f"{panel.model.rows[0].max_abs:.4g}"
    # the overlay by a statistic colours the nodes, with a legend
    ov = panel.set_statistic("max_abs")
    qtbot.wait(50)
    assert view.overlay is ov and ov.values and panel.legend.scale is ov.scale
    assert set(view._overlay_values) == {r.node for r in panel.rows if r.node >= 0 and r.max_abs is not None}
    assert view.canvas.fill_override
    zeros = panel.set_statistic("zero_fraction")
    qtbot.wait(50)
    assert (zeros.scale.vmin, zeros.scale.vmax, zeros.scale.log) == (0.0, 1.0, False)
    panel.set_statistic(None)
    qtbot.wait(50)
    assert view.overlay is None and panel.legend.scale is None
    # another dock's colours replace the statistic's: the box and the ramp stop claiming it is shown
    panel.set_statistic("max_abs")
    from mnnscope.inspector.model.overlay import Overlay
    view.set_overlay(Overlay.from_values("int8: error introduced", {t.ids[0]: 1.0}))
    qtbot.wait(50)
    assert panel.statistic is None and panel.overlay_box.currentData() is None and panel.legend.scale is None
    assert view.overlay is not None and view.overlay.name == "int8: error introduced"  # the other dock's stays
    ui_watchdog.check()   # before teardown closes the window (stopping runners is not the dock's work)


def test_a_row_of_an_op_the_conversion_renamed_selects_its_onnx_node(qtbot, window, samples, ui_watchdog):
    """An .onnx run on MNN: ops whose tensors the .onnx does not have ("/Gemm_output_0__matmul_converted", the
    converted Gemm) selected nothing when their row was clicked (a new-user try). They show the node the
    conversion's node map gives them, as the Profile dock places their times."""
    warm_up(qtbot, window, samples, ui_watchdog)
    view = open_and_wait(qtbot, window, samples / "encoder_block.onnx")
    window.show_dock("Statistics")
    window.panels["Profile"].apply_settings({"engine": "mnn"})
    panel, result = run_stats(qtbot, window)
    assert result.get("converted_from")
    t = view.table
    renamed = [r for r in panel.rows if r.node < 0 and r.op in panel.op_nodes]
    assert renamed, [(r.tensor, r.op) for r in panel.rows if r.node < 0]
    row = next((r for r in renamed if t.op_types[panel.op_nodes[r.op]] == "MatMul"), renamed[0])
    qtbot.wait(50)
    panel.table_view.setCurrentIndex(panel.model.index(panel.model.row_of(row), 0))
    qtbot.waitUntil(lambda: view.canvas.selected == panel.op_nodes[row.op], timeout=10000)
    # and the other way: the node clicked on the graph shows the tensors of the ops converted from it (the key
    # MatMul said "no tensor of this op was read" beside its "…__matmul_converted" row: helper 104's try)
    from mnnscope.inspector.profile.tensorstats import rows_of_node
    unread = next(i for i in range(t.node_count) if not rows_of_node(panel.rows, i, panel.op_nodes))
    view.select(unread)
    assert "no tensor of this op was read" in panel.detail.text()
    assert not panel.table_view.selectionModel().hasSelection()   # no other op's row left marked beside it
    node = panel.op_nodes[row.op]
    view.select(node)
    mine = rows_of_node(panel.rows, node, panel.op_nodes)
    assert mine and all(r.node < 0 for r in mine), mine
    assert any(r.tensor in panel.detail.toolTip() for r in mine), panel.detail.toolTip()   # (named in brief above)
    assert panel.table_view.selectionModel().hasSelection()
    ui_watchdog.check()


def test_a_model_that_makes_nan_has_its_producer_outlined_and_listed(qtbot, window, samples, nan_model,
                                                                     ui_watchdog):
    warm_up(qtbot, window, samples, ui_watchdog)
    view = open_and_wait(qtbot, window, nan_model)
    panel, result = run_stats(qtbot, window)
    t = view.table
    log = t.names.index("log")
    assert panel.nonfinite == [log]                       # Mul and Add carry the NaN on: not producers
    assert view.canvas.marked.tolist() == [log]
    assert panel.nan_list.count() == 1 and "log" in panel.nan_list.item(0).text()
    assert panel.next_btn.isEnabled()
    assert panel.step(1) == log
    qtbot.waitUntil(lambda: view.canvas.selected == log, timeout=10000)
    assert panel.shown_node == log and "NaN" in panel.detail.text()
    qtbot.wait(50)
    view.select(t.names.index("relu"))
    qtbot.wait(50)
    assert panel.step(-1) == log                           # Previous wraps round to the same single producer
    qtbot.waitUntil(lambda: view.canvas.selected == log, timeout=10000)
    # downstream tensors hold NaN too: the table says so, the list does not name them
    nan_rows = {r.tensor for r in panel.rows if r.nonfinite}
    assert nan_rows == {"l", "m", "y"}
    # another model clears it all
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    assert panel.rows == [] and panel.nan_list.count() == 0 and len(view.canvas.marked) == 0
    ui_watchdog.check()


def test_sweep_threads_by_precision_gives_one_row_per_cell(qtbot, window, samples, ui_watchdog):
    warm_up(qtbot, window, samples, ui_watchdog)
    open_and_wait(qtbot, window, samples / "cnn.mnn")
    tab = window.panels["Statistics"].sweep
    tab.threads.setText("1,2")
    for p, box in tab.precision.items():
        box.setChecked(p in ("high", "low"))
    for m, box in tab.memory.items():
        box.setChecked(m == "normal")
    tab.runs.setValue(2)
    # before a sweep: the plot's title alone, no empty 0-1 axes (helper 102's try)
    assert not tab.plot.getAxis("bottom").isVisible()
    assert tab.plot.getPlotItem().titleLabel.text.startswith("Run sweep")
    with qtbot.waitSignal(tab.finished, timeout=180000) as blocker:
        assert tab.run()
    cells = blocker.args[0]["cells"]
    assert tab.plot.getAxis("bottom").isVisible() and tab.plot.getAxis("left").isVisible()
    assert [(c["threads"], c["precision_requested"]) for c in cells] == [(1, "high"), (1, "low"), (2, "high"),
                                                                       (2, "low")]
    assert tab.table.rowCount() == 4
    assert tab.status.text().startswith("4 cells of cnn.mnn \u00b7 saved as run #"), tab.status.text()
    headers = [tab.table.horizontalHeaderItem(i).text() for i in range(tab.table.columnCount())]
    col = {h: i for i, h in enumerate(headers)}
    for r in range(4):
        assert tab.table.item(r, col["backend used"]).text() == "CPU"
        assert float(tab.table.item(r, col["total ms"]).data(0)) > 0
        assert tab.table.item(r, col["precision effective"]).text() in ("high", "low")
    assert set(tab.curves) == {("high", "normal"), ("low", "normal")}
    x, y = tab.curves[("high", "normal")].getData()
    assert x.tolist() == [1.0, 2.0] and all(v > 0 for v in y)
    # ticks at the thread counts swept, nothing in between (tryout 11 read "1.2, 1.4, 1.6" threads)
    assert tab.plot.getAxis("bottom")._tickLevels == [[(1, "1"), (2, "2")]]
    # the cells' notes in full under the table, each once (tryout 67 read "the Interpreter cannot run t…")
    notes = {c.get("error") or w for c in cells for w in (c.get("warnings") or [None]) if c.get("error") or w}
    assert (not tab.notes.isHidden()) == bool(notes)
    for note in notes:
        assert tab.notes.text().count(note) == 1, (note, tab.notes.text())
    # the legend (top right) lies over no point of the curves (it covered the red line: tryout 67)
    from PySide6.QtCore import QPointF
    window.show_dock("Statistics")
    window.panels["Statistics"].tabs.setCurrentWidget(tab)
    qtbot.waitUntil(lambda: tab.plot.isVisible() and tab.plot.height() > 100, timeout=5000)
    qtbot.wait(100)
    box = tab.plot.plotItem.legend.sceneBoundingRect()
    vb = tab.plot.plotItem.vb
    for curve in tab.curves.values():
        for px, py in zip(*curve.getData()):
            assert not box.contains(vb.mapViewToScene(QPointF(px, py))), (px, py)
    # an .onnx is converted first, with the Convert dock's settings: said (a new-user try's sweep timed an fp16
    # conversion, the settings ticked for another model, and nothing in the dock said so)
    from mnnscope.inspector.convert.settings import ConvertSettings
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    window.panels["Convert"].set_settings(ConvertSettings(fp16=True))
    tab.threads.setText("1")
    for p, box in tab.precision.items():
        box.setChecked(p == "high")
    tab.runs.setValue(1)
    with qtbot.waitSignal(tab.finished, timeout=180000):
        assert tab.run()
    assert " of a fresh conversion of cnn.onnx with the Convert dock's settings (fp16 weights)" in tab.status.text(), \
        tab.status.text()
    # that long status wraps: on one line it made the tab wider than a 1024 px window, the plot and the notes out of
    # view (tryout 71)
    assert tab.status.minimumSizeHint().width() < 200 and tab.minimumSizeHint().width() < 1000
    window.panels["Convert"].set_settings(ConvertSettings())
    ui_watchdog.check()


def test_a_sweep_at_1024x700_fits_the_dock(qtbot, window, samples):
    """Helper 82's try at 1024x700: the Sweep tab was 1090 px in a 1024 px dock (its one-line notes and the status
    asked for their own widths): the status read "6 cells of a fresh conversi…", the notes ran off the dock with
    a scroll bar of their own, and the plot's last thread count was out of view. All of it inside the dock now."""
    from PySide6.QtCore import QPoint
    from test_gui import docked_at_1024
    panel = docked_at_1024(qtbot, window, samples / "cnn.mnn", "Statistics")
    tab = panel.sweep
    panel.tabs.setCurrentWidget(tab)
    tab.threads.setText("1,2,4")
    for p, box in tab.precision.items():
        box.setChecked(p in ("high", "low"))
    tab.runs.setValue(1)
    with qtbot.waitSignal(tab.finished, timeout=180000):
        assert tab.run()
    qtbot.wait(200)
    area = window.docks["Statistics"].widget()
    assert area.horizontalScrollBar().maximum() == 0, (panel.minimumSizeHint().width(), area.viewport().width())
    right = area.viewport().width()
    for w in (tab.status, tab.notes, tab.plot):
        if w.isVisible():
            assert w.mapTo(area.viewport(), QPoint(w.width(), 0)).x() <= right, w
    if tab.notes.isVisible():  # wrapped to the dock, not one line past it
        assert tab.notes.wordWrap() and tab.notes.width() <= right
    # the status on a line of its own under the controls, as wide as they are: right of them it wrapped into a
    # column ~140 px wide and five lines tall, and the table showed 2.5 of its 6 rows (a new-user try)
    assert tab.status.mapTo(tab, QPoint(0, 0)).y() >= tab.run_btn.mapTo(tab, QPoint(0, tab.run_btn.height())).y()
    assert tab.status.width() >= tab.cancel_btn.mapTo(tab, QPoint(tab.cancel_btn.width(), 0)).x() - 8
    assert tab.status.height() <= 3 * tab.status.fontMetrics().lineSpacing() + 8, tab.status.text()
    # every thread count swept on the plot's x axis, inside the plot
    vb = tab.plot.getViewBox()
    lo, hi = vb.viewRange()[0]
    assert lo <= 1 and hi >= 4, (lo, hi)
    axis = tab.plot.getAxis("left")   # its title whole on the short plot ("total ms (median" was cut)
    assert axis.label.boundingRect().width() <= axis.boundingRect().height(), axis.label.toPlainText()


def test_sweep_refuses_an_empty_axis_without_running(qtbot, window, samples):
    open_and_wait(qtbot, window, samples / "cnn.mnn", shapes=False)
    tab = window.panels["Statistics"].sweep
    for box in tab.precision.values():
        box.setChecked(False)
    assert not tab.run()
    assert "precision" in tab.status.text() and tab.run_btn.isEnabled()


# ----- the headless twin ------------------------------------------------------------------------------
def test_view_stats_twin_lists_the_nan_producer(nan_model, tmp_path):
    shot = tmp_path / "stats.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(nan_model), "--stats",
                           "--overlay", "stats", "--json", "--screenshot", str(shot)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["nonfinite"] == ["log"]
    assert out["backend_used"] == "CPU"
    assert out["screenshot"] == str(shot) and shot.stat().st_size > 10000
    assert out["int32_limit"] == []
    ov = out["overlay"]
    assert ov["kind"] == "stats" and ov["statistic"] == "max_abs"
    assert set(ov["values"]) == {"relu", "sub", "log", "mul", "add"} and ov["coverage"] == 1.0
    assert ov["top"][0]["value"] == max(ov["values"].values())
    assert {"node", "op_type", "value"} <= set(ov["top"][0])


def test_view_stats_twin_refuses_an_overlay_without_its_run(nan_model):
    proc = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(nan_model), "--overlay", "stats",
                           "--screenshot", "x.png"], capture_output=True, text=True,
                          env=dict(os.environ, QT_QPA_PLATFORM="offscreen"), timeout=120)
    assert proc.returncode == 2 and "--stats" in proc.stderr


def test_a_sweep_cancelled_midway_stops_its_runner_and_frees_the_dock(qtbot, window, samples, ui_watchdog):
    warm_up(qtbot, window, samples, ui_watchdog)
    open_and_wait(qtbot, window, samples / "cnn.mnn")
    tab = window.panels["Statistics"].sweep
    tab.threads.setText("1,2,3,4")
    tab.runs.setValue(1000)
    assert tab.run()
    # (not qtbot.waitSignal: job_event comes from the job's thread; see wait_for_emission)
    wait_for_emission(qtbot, window.runner.job_event, lambda name, kind, payload: name == "sweep"
                      and kind == "progress", timeout=60000)
    assert not tab.run_btn.isEnabled() and tab.cancel_btn.isEnabled()
    with qtbot.waitSignal(tab.failed, timeout=10000) as blocker:
        tab.cancel_btn.click()
    assert blocker.args == ["cancelled"]
    assert tab.run_btn.isEnabled() and not tab.cancel_btn.isEnabled() and tab.status.text() == "cancelled"
    window.runner.job_event.emit("sweep", "progress", {"message": "cell 2 of 4"})   # one still queued: left unsaid
    assert tab.status.text() == "cancelled"
    # the worker thread ends within the cancel protocol's grace period (the runner stops the sweep, or is killed)
    qtbot.waitUntil(lambda: not [t for t in window.live_tasks() if t.name == "sweep"], timeout=10000)
    assert tab.result is None and tab.table.rowCount() == 0
    ui_watchdog.check()


def tick_label_specs(axis) -> list:
    """The tick labels pyqtgraph draws on `axis` (its own drawing specs): [(rect in axis coordinates, flags, text)]."""
    from PySide6.QtGui import QImage, QPainter
    img = QImage(8, 8, QImage.Format_ARGB32)
    p = QPainter(img)
    try:
        specs = axis.generateDrawSpecs(p)
    finally:
        p.end()
    return list(specs[2]) if specs else []


def tick_label_rects(axis) -> list:
    """Where pyqtgraph draws `axis`'s tick labels, in axis coordinates."""
    return [rect for rect, _flags, _text in tick_label_specs(axis)]


def overlapping(rects) -> list:
    """Pairs of label rectangles that overlap by more than a pixel."""
    return [(a, b) for i, a in enumerate(rects) for b in rects[i + 1:] if a.intersected(b).height() > 1]


def test_the_histogram_count_axis_reads_at_the_docks_default_height(qtbot, window, samples):
    """Tryout 8: at the dock's default height the histogram was a strip and its count axis read "0.2 0.4 0.6 0.8"
    on top of each other. The plot keeps a readable height (the dock scrolls) and labels never overlap."""
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Statistics")
    qtbot.waitUntil(lambda: panel.plot.isVisible())
    assert not panel.plot.getAxis("left").isVisible()   # before any tensor: no axes over nothing
    counts = [int(40 * np.exp(-((i - 32) / 12) ** 2)) for i in range(64)]
    panel._set_hist({"lo": -5.0, "hi": 5.0, "counts": counts}, "/conv1/Conv_output_0")
    qtbot.wait(200)
    axis = panel.plot.getAxis("left")
    assert panel.plot.getViewBox().height() >= 60, "the histogram is a strip"
    rects = tick_label_rects(axis)
    assert len(rects) >= 2 and not overlapping(rects), [r.getRect() for r in rects]
    # the title fits at 1024 px: the tensor's name (on the line above) pushed "64 bins over the finit" out of view
    title = panel.plot.getPlotItem().titleLabel
    assert title.text == "64 bins over the finite values" and "/conv1/Conv_output_0" in panel.plot.toolTip()
    assert title.boundingRect().width() <= panel.plot.width()
    # no tensor: no axes (a 0..1 count axis read "0.2 0.4 0.6 0.8" over nothing: helper 101's try)
    panel._set_hist(None, "/conv1/Conv_output_0")
    assert not axis.isVisible() and not panel.plot.getAxis("bottom").isVisible()
    assert panel.plot.getPlotItem().titleLabel.text == "No values to count"
    panel._set_hist({"lo": -5.0, "hi": 5.0, "counts": counts}, "/conv1/Conv_output_0")
    assert axis.isVisible() and panel.plot.getAxis("bottom").isVisible()
    # squeezed below that anyway (a plot without the minimum: the Sweep tab's), the axis labels fewer ticks
    panel.plot.setMinimumHeight(0)
    panel.plot.setFixedHeight(95)
    qtbot.waitUntil(lambda: panel.plot.getViewBox().height() < 50, timeout=5000)
    qtbot.wait(100)
    rects = tick_label_rects(axis)
    assert rects and not overlapping(rects), [r.getRect() for r in rects]


def test_the_dock_shows_whole_at_1024x700_and_lists_producers_only_when_there_are_some(qtbot, window, samples,
                                                                                       nan_model):
    """A new-user try at 1024x700: the dock scrolled (its contents 342 px in a 228 px dock: an empty producers'
    list and a 150 px plot), the table's own scroll bar inside the dock's, the histogram's x axis cut at the
    bottom. It shows whole now; the producers' list comes with producers to list."""
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Statistics")
    area = window.docks["Statistics"].widget()
    qtbot.waitUntil(lambda: panel.run_btn.isVisible(), timeout=10000)
    # before a run: not "none", which read as a finding (helper 102's try)
    assert panel.nan_label.text() == "NaN/Inf producers: found by a run"
    # an op selected before a run: its name and what gives its statistics, not "select an op" (helper 102's try)
    view, t = window.pane.main_view, window.pane.main_view.table
    conv = t.op_types.index("Conv")
    view.select(conv)
    said = panel.detail.text()
    assert t.names[conv] in said and "a run reads its tensors" in said, said
    qtbot.wait(300)
    assert area.verticalScrollBar().maximum() == 0, said   # (on one line: the dock does not scroll for it)
    assert not panel.hist_curve.isVisible()   # nothing drawn in the empty plot (a blue line along its foot)
    view.select(-1)
    assert panel.detail.text().startswith("select an op"), panel.detail.text()
    view.select(conv)
    with qtbot.waitSignal(panel.finished, timeout=120000):
        assert panel.run()
    qtbot.wait(100)
    said = panel.detail.text()
    assert t.names[conv] in said and "a run reads its tensors" not in said, said
    # an op's two lines of statistics over its histogram: the dock grows to show them whole (it scrolled by 20 px,
    # the producers' line out of view)
    view.select(t.op_types.index("Relu"))
    assert "max |x|" in panel.detail.text(), panel.detail.text()
    assert panel.hist_curve.isVisible()
    qtbot.waitUntil(lambda: area.verticalScrollBar().maximum() == 0, timeout=5000)
    view.select(-1)
    qtbot.wait(100)
    assert not panel.nan_list.isVisible() and panel.nan_label.text() == "NaN/Inf producers: none"
    assert area.verticalScrollBar().maximum() == 0, (panel.height(), area.viewport().height())
    axis = panel.plot.getAxis("bottom")   # the histogram's x axis in view, inside the dock
    bottom = axis.mapToScene(axis.boundingRect()).boundingRect().bottom()
    assert panel.plot.mapTo(area.viewport(), panel.plot.rect().topLeft()).y() + bottom <= area.viewport().height()
    open_and_wait(qtbot, window, nan_model, shapes=False)
    with qtbot.waitSignal(panel.finished, timeout=120000):
        assert panel.run()
    qtbot.waitUntil(lambda: panel.nan_list.isVisible(), timeout=5000)
    assert panel.nan_list.count() == 1


def test_running_keeps_the_docks_controls_in_view(qtbot, window, samples):
    """Tryout 11: after "Run statistics" (clicked) at 1024x700 the dock scrolled down to its table: the button
    disabled for the run handed the focus on, and the dock's scroll area scrolled to the widget that got it. The
    buttons and tabs stay in view."""
    from PySide6.QtCore import Qt
    panel = docked_at_1024(qtbot, window, samples / "cnn.onnx", "Statistics")
    area = window.docks["Statistics"].widget()
    qtbot.waitUntil(lambda: panel.run_btn.isVisible(), timeout=10000)
    # a dock dragged shorter than its contents (at its default height at 1024x700 it no longer scrolls)
    # (150 px scrolled it until the histogram lost its empty axes before a run: shorter until it scrolls)
    for h in (150, 120, 100, 80, 60):
        window.resizeDocks([window.docks["Statistics"]], [h], Qt.Vertical)
        qtbot.wait(100)
        if area.verticalScrollBar().maximum() > 0:
            break
    qtbot.waitUntil(lambda: area.verticalScrollBar().maximum() > 0, timeout=10000)
    assert area.verticalScrollBar().value() == 0
    with qtbot.waitSignal(panel.finished, timeout=120000):
        qtbot.mouseClick(panel.run_btn, Qt.LeftButton)
    qtbot.wait(100)
    assert area.verticalScrollBar().value() == 0 and not panel.run_btn.visibleRegion().isEmpty()


def test_a_run_again_keeps_the_tables_sort_and_names_the_conversion_it_ran(qtbot, window, samples):
    """Tryout 67: after running F7 again the header kept its arrow on max |x| over rows in file order; and after a
    comparison set an int8 conversion for the model, the statistics run converted with it while the status said
    only "91 tensors of 28 ops". The new rows are sorted as the header says, and the status names the conversion."""
    from mnnscope.inspector.convert.settings import ConvertSettings
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    window.show_dock("Statistics")
    window.panels["Profile"].apply_settings({"engine": "mnn"})
    panel, result = run_stats(qtbot, window)
    assert "converted with" not in panel.status.text()  # the converter's defaults: nothing to say
    panel.table_view.sortByColumn(8, Qt.DescendingOrder)
    qtbot.wait(50)
    dock = window.panels["Convert"]
    dock.set_settings(ConvertSettings(weight_quant_bits=8))
    panel, result = run_stats(qtbot, window)
    assert result["converted_with"] == ConvertSettings.describe_json(ConvertSettings(weight_quant_bits=8).to_json())
    shown = [r.max_abs for r in panel.model.rows if r.max_abs is not None]
    assert len(shown) > 3 and shown == sorted(shown, reverse=True)
    # named as the Convert dock's form labels it, not by the result's JSON key ("weight_quant_bits=8")
    assert panel.status.text().endswith("\u00b7 converted with Weight quant bits: 8"), panel.status.text()


def test_view_stats_twin_lists_and_selects_the_int32_limit_producer(tmp_path):
    """The dock's list and Previous/Next hold the op that first writes float values at the int32 limit; the twin
    selects it, as it does a NaN producer."""
    path = make_overflow_model(tmp_path / "overflow.onnx")
    shot = tmp_path / "stats.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "view", str(path), "--stats", "--json",
                           "--screenshot", str(shot)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["int32_limit"] == ["to_float"] and out["nonfinite"] == []


def test_the_dock_lists_the_int32_limit_producer_beside_nan(qtbot, window, samples, tmp_path, ui_watchdog):
    warm_up(qtbot, window, samples, ui_watchdog)
    view = open_and_wait(qtbot, window, make_overflow_model(tmp_path / "overflow.onnx"))
    panel, _ = run_stats(qtbot, window)
    t = view.table
    at = t.names.index("to_float")
    assert panel.nonfinite == [] and panel.int32_limit == [at] and panel.suspects == [at]
    assert panel.nan_label.text() == "int32-limit producers: 1"
    assert panel.nan_list.count() == 1 and "to_float" in panel.nan_list.item(0).text()
    assert panel.nan_list.item(0).text().endswith("at the int32 limit (-2.147e+09)")  # the random inputs' negatives
    assert view.canvas.marked.tolist() == [at] and panel.next_btn.isEnabled()
    assert panel.step(1) == at
    qtbot.waitUntil(lambda: view.canvas.selected == at, timeout=10000)
    assert "is the int32 limit" in panel.detail.text()
    ui_watchdog.check()


def test_a_model_opened_again_gets_its_statistics_back(qtbot, window, samples, tmp_path, ui_watchdog):
    """A new user ran Statistics on a model, opened another and reopened the first: "no statistics yet", though the
    Runs dock listed the run. Its last run comes back (the file unchanged); a changed file does not get old rows."""
    warm_up(qtbot, window, samples, ui_watchdog)
    model = make_nan_model(tmp_path / "nan_model.onnx")
    view = open_and_wait(qtbot, window, model)
    panel, result = run_stats(qtbot, window)
    rows = len(panel.rows)
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    assert panel.rows == [] and panel.status.text() == "no statistics yet"
    view = open_and_wait(qtbot, window, model)
    assert len(panel.rows) == rows and panel.result["run_id"] == result["run_id"]
    assert panel.nonfinite == [view.table.names.index("log")] and panel.nan_list.count() == 1
    # the ops its rows fall on, out of the graph's (it read "25 tensors of 8 ops" beside "94 ops": a new-user try)
    assert panel.status.text().startswith(f"{rows:,} tensors on ")
    assert f" of the graph's {view.table.node_count:,} ops" in panel.status.text(), panel.status.text()
    # the file changed since: its old rows would name the wrong nodes
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    make_nan_model(model)
    os.utime(model, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    open_and_wait(qtbot, window, model)
    assert panel.rows == [] and panel.status.text() == "no statistics yet"


def test_the_dock_comes_up_tall_enough_for_a_long_ops_title(qtbot, window, samples):
    """At 1024x700 a bottom dock comes up at a third of the window: with an op of a long scoped name selected its
    title took two lines and the Statistics dock scrolled by 6 px, the producers' line cut. It comes up as tall as
    it needs (within the graph's share), and grows when its contents do."""
    panel = docked_at_1024(qtbot, window, samples / "encoder_block.onnx", "Statistics")
    view = window.pane.main_view
    view.select(view.table.op_types.index("MatMul"))
    area = window.docks["Statistics"].widget()
    qtbot.wait(300)
    assert panel.detail.heightForWidth(panel.detail.width()) > 1.5 * panel.detail.fontMetrics().lineSpacing()
    assert area.verticalScrollBar().maximum() == 0, (panel.height(), area.viewport().height())
    assert window.docks["Statistics"].height() <= window.bottom_dock_cap(window.docks["Statistics"]) + 2


def test_docks_the_user_dragged_shorter_stay_so(qtbot, window, samples):
    """Helper 104's try at 1024x700: the Statistics dock dragged shorter grew back for the next op's longer title and
    after a run; the Convert dock opened as a tab beside it brought the pair back to a third of the window. A height
    the user drags the bottom docks to stays (until the window's height changes)."""
    panel = docked_at_1024(qtbot, window, samples / "encoder_block.onnx", "Statistics")
    d = window.docks["Statistics"]
    qtbot.wait(300)
    drag_bottom_separator(qtbot, window, d, 60)
    dragged, graph = d.height(), window.centralWidget().height()
    assert dragged < 220 and window.bottom_user_sized(), dragged
    view = window.pane.main_view
    view.select(view.table.op_types.index("MatMul"))   # a title of two lines: taller contents
    with qtbot.waitSignal(panel.finished, timeout=120000):
        assert panel.run()
    qtbot.wait(300)
    assert abs(d.height() - dragged) <= 2, (dragged, d.height())
    window.show_dock("Convert")
    qtbot.wait(300)
    assert window.docks["Convert"].isVisible()
    assert abs(window.centralWidget().height() - graph) <= 2, (graph, window.centralWidget().height())  # as dragged
    window.resize(1024, 690)   # another window height: the docks fit it again
    qtbot.waitUntil(lambda: not window.bottom_user_sized(), timeout=5000)


def test_an_op_of_long_scoped_names_reads_whole_at_1024x700(qtbot, window, samples):
    """Helper 106's try: encoder_block on MNN, the query MatMul selected after a run: its tensor's name
    (".../self/query/Add_output_0__matmul_converted_raster_0") took three lines, the dock grew to its cap and still
    scrolled, the producers' line cut. The names are said in brief (the op's by its end, the tensor's without the
    scope it shares with the op), whole in the tooltip."""
    panel = docked_at_1024(qtbot, window, samples / "encoder_block.onnx", "Statistics")
    window.panels["Profile"].apply_settings({"engine": "mnn"})
    run_stats(qtbot, window)
    view = window.pane.main_view
    query = view.table.names.index("/encoder/layer.0/attention/self/query/MatMul")
    view.select(query)
    qtbot.wait(300)
    area = window.docks["Statistics"].widget()
    assert area.verticalScrollBar().maximum() == 0, (panel.height(), area.viewport().height())
    said, tip = panel.detail.text(), panel.detail.toolTip()
    assert "/encoder/layer.0/attention/self/query/MatMul" in tip and "max |x|" in said, (said, tip)
    assert "query/MatMul</b>" in said   # the op's own end kept
    lines = panel.detail.heightForWidth(panel.detail.width()) / panel.detail.fontMetrics().lineSpacing()
    assert lines <= 4, (lines, said)
