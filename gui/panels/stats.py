"""The Statistics dock: one statistics run (the profile service with stats) read per tensor and per graph node.

A sortable table of every tensor (min, max, mean, std, max |x|, share of zeros, NaN, Inf); the op selected on
the graph shows its outputs' statistics and the runner's histogram; the graph can be coloured by a statistic
(max |x| finds overflow, std and the share of zeros find dead layers); the nodes where NaN/Inf first appear are
outlined on the graph and listed, with Previous/Next to step through them. A second tab sweeps threads x
precision x memory (gui/panels/sweep.py). The run and the per-tensor bookkeeping happen on a worker thread
(window.runner.run_job); the mapping is inspector.profile.tensorstats, which the headless twin uses too.
"""
from __future__ import annotations

import dataclasses
import html
import math
import os

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import (QAbstractTableModel, QEvent, QItemSelectionModel, QModelIndex, QSize, Qt, QTimer,
                            Signal)
from PySide6.QtGui import QColor, QFontMetrics, QLinearGradient, QPainter
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QListWidget,
                               QPushButton, QSplitter, QTableView, QTabWidget, QVBoxLayout, QWidget)

from mnnscope.inspector.model.overlay import Overlay
from mnnscope.inspector.profile import placement as plc
from mnnscope.inspector.profile.service import ProfileOptions, run_profile
from mnnscope.inspector.profile.tensorstats import (STATISTICS, int32_limit_producers, nonfinite_producers,
                                                    node_values, rows_of_node, tensor_rows)

from mnnscope.gui import focus
from mnnscope.gui.canvas import fmt_shape
from mnnscope.gui.dockheight import grow_bottom_dock, scroll_area_of
from mnnscope.gui.notify import ERROR, INFO
from mnnscope.gui.panels.convertform import settings_text
from mnnscope.gui.shelf import Shelf
from mnnscope.gui.panels.sweep import SweepTab, base_options, themed_plot
from mnnscope.gui.plotaxis import show_axes, show_empty
from mnnscope.gui.theme import palette
from mnnscope.gui.wraplabel import WrappedLabel

NO_RUN_YET = "NaN/Inf producers: found by a run"  # the producers' line before any run
PICK_TEXT = "select an op on the graph or a tensor in the table"  # the title with nothing to show
NOT_READ_YET = "a run reads its tensors (Run statistics)"  # an op selected before a run
NAME_SHARE = 0.48  # of the title's width, the most an op's or a tensor's name takes there (StatsPanel._short)

JOB = "statistics"
# blue -> green -> amber -> red: every stop dark enough for the nodes' white titles (the shared "heat" ramp's pale
# middle left a mid-valued node's title unreadable)
RAMP = ("#2c7bb6", "#1a9850", "#c98a00", "#d7191c")
COLUMNS = ("tensor", "op", "type", "shape", "min", "max", "mean", "std", "max |x|", "zeros", "NaN", "Inf")


def _num(v) -> str:
    return "" if v is None else f"{v:.4g}"


def analyse(result: dict, table) -> dict:
    """The worker-thread part of a statistics run: rows per tensor, their table cells, the first NaN/Inf
    producers."""
    rows = tensor_rows(result, table)
    return {"result": result, "rows": rows, "cells": [row_cells(r) for r in rows],
            "nonfinite": nonfinite_producers(rows, table) if table else [],
            "int32_limit": int32_limit_producers(rows, table) if table else [], "op_nodes": op_nodes(result, table)}


def op_nodes(result: dict, table) -> dict[str, int]:
    """{runtime op: the graph node a click on its row shows} for the ops of an .onnx converted for MNN whose
    tensors the .onnx does not have ("/Gemm_output_0__matmul_converted"): through the conversion's node map, as the
    Profile dock places their times (a new-user try clicked such rows and nothing was selected)."""
    if table is None or not plc.needs_node_map(result, table):
        return {}
    ops = [dict(op, ms=op.get("ms") if isinstance(op.get("ms"), (int, float)) else 1.0)
           for op in result.get("ops") or []]  # placed by name and structure, whatever their times
    placed = plc.place(dict(result, ops=ops), table, plc.load_node_map(result))
    out = {}
    for op, ids in placed.op_nodes.items():
        i = table.index_of(ids[0]) if ids else None
        if i is not None:
            out[op] = i
    return out


def row_cells(r) -> tuple[list, list]:
    """(texts, sort keys) of one tensor's row, computed once: painting and sorting only look them up."""
    s = r.stats
    shape = s.get("shape")
    values = (r.tensor, r.op, r.op_type, shape, s.get("min"), s.get("max"), s.get("mean"), s.get("std"),
              r.max_abs, s.get("zero_fraction"), int(s.get("nan") or 0), int(s.get("inf") or 0))
    texts = [r.tensor, r.op, r.op_type, fmt_shape(shape) if shape is not None else ""]
    texts += [_num(v) for v in values[4:9]]
    texts.append("" if values[9] is None else f"{100 * values[9]:.1f} %")
    texts += [f"{v:,}" if v else "" for v in values[10:]]
    keys = [r.tensor.lower(), r.op.lower(), r.op_type.lower(), int(np.prod(shape)) if shape else 0]
    keys += [-math.inf if v is None else float(v) for v in values[4:]]
    return texts, keys


def stats_options(window) -> ProfileOptions:
    """The Profile dock's options when there is one, else the file's own engine with the Inputs dock's inputs;
    a statistics run times nothing, so one run and one warm-up."""
    return dataclasses.replace(base_options(window), stats=True, runs=1, warmup=1)


def _stamp(path) -> tuple | None:
    """(size, mtime) of a model file: a file changed since its run gets no old rows (they index its nodes)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def conversion_words(result: dict, settings: dict | None = None) -> str:
    """What converted the file a run of an .onnx on MNN ran, where it was not the converter's defaults ("converted
    with Weight quant bits: 8", "converted with int8 (KL/MAX_ABS, calib_dir)"); "" for an .mnn, ONNX Runtime or the
    defaults. `settings`: the conversion's settings (to_json()), named as the Convert dock's form names them (the
    result's own "converted_with" is describe()'s "weight_quant_bits=8", a key no new user found in the form); without
    them, the result's words."""
    if not result.get("converted_from"):
        return ""
    how = settings_text(settings) if settings is not None else result.get("converted_with")
    return f"converted with {how}" if how else ""


_RIGHT = int(Qt.AlignRight | Qt.AlignVCenter)
_RED = QColor("#d7191c")
# Qt passes roles as plain ints; comparing an int with a PySide enum member costs ~20 µs, an int ~0.2 µs,
# and a table asks ~8 roles per cell per paint
_DISPLAY, _ALIGN, _FOREGROUND = (r.value for r in (Qt.DisplayRole, Qt.TextAlignmentRole, Qt.ForegroundRole))


class TensorModel(QAbstractTableModel):
    """The rows of a statistics run, with their cells computed beforehand (a model of a few thousand tensors
    paints and sorts without formatting a number on the UI thread)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list = []
        self.cells: list = []

    def set_rows(self, rows: list, cells: list | None = None) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.cells = list(cells) if cells is not None else [row_cells(r) for r in rows]
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return len(COLUMNS)

    def headerData(self, section, orientation, role=_DISPLAY):
        if role == _DISPLAY and orientation == Qt.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index, role=_DISPLAY):
        if role == _DISPLAY:
            return self.cells[index.row()][0][index.column()]
        if role == _ALIGN:
            return _RIGHT if index.column() >= 4 else None
        if role == _FOREGROUND and index.column() >= 10 and self.cells[index.row()][0][index.column()]:
            return _RED
        return None

    def sort(self, column: int, order=Qt.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        perm = sorted(range(len(self.rows)), key=lambda i: self.cells[i][1][column],
                      reverse=order == Qt.DescendingOrder)
        self.rows = [self.rows[i] for i in perm]
        self.cells = [self.cells[i] for i in perm]
        self.layoutChanged.emit()

    def row_of(self, row) -> int:
        return self.rows.index(row)


class LegendBar(QWidget):
    """The overlay's colour ramp with its range: what a node's colour means."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.scale = None
        self.setFixedSize(240, 22)   # shown or not, it keeps its place: the dock does not re-lay out

    def set_scale(self, scale, label: str = "") -> None:
        self.scale, self.label = scale, label
        self.update()

    def paintEvent(self, e) -> None:
        if self.scale is None:
            return
        p = QPainter(self)
        w, h = self.width(), self.height()
        g = QLinearGradient(0, 0, w, 0)
        n = len(self.scale.colours)
        for i, c in enumerate(self.scale.colours):
            g.setColorAt(i / (n - 1), QColor(c))
        p.fillRect(0, 0, w, h, g)
        p.setPen(QColor("#ffffff"))  # every stop of RAMP is dark
        lo, hi = _num(self.scale.vmin), _num(self.scale.vmax)
        p.drawText(self.rect().adjusted(4, 0, -4, 0), Qt.AlignVCenter | Qt.AlignLeft, lo)
        p.drawText(self.rect().adjusted(4, 0, -4, 0), Qt.AlignVCenter | Qt.AlignRight, hi)
        p.drawText(self.rect(), Qt.AlignCenter, self.label)
        p.end()


class StatsPanel(QWidget):
    finished = Signal(dict)   # the profile service's result (with run_id) of a statistics run
    failed = Signal(str)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.rows: list = []
        self.result: dict | None = None
        self.op_nodes: dict[str, int] = {}  # runtime op -> the node its row shows, where its tensor is not the graph's
        self._shelf = Shelf()  # model file -> (its size and mtime, its last run's payload)
        self.nonfinite: list[int] = []
        self.int32_limit: list[int] = []  # nodes that first write float values at the int32 limit (an overflow)
        self.suspects: list[int] = []     # both, in graph order: what the list, Previous/Next and the outline show
        self.step_index = -1
        self.statistic: str | None = None
        self.shown_node = -1
        self._table = None   # the graph table the rows were mapped onto
        self._syncing = False

        self.tabs = QTabWidget(self)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.tabs)
        self.tabs.addTab(self._build_tensors(), "Tensors")
        self.sweep = SweepTab(window, self)
        self.tabs.addTab(self.sweep, "Sweep")
        # a cancelled job reports nothing to its own callbacks (gui.tasks disowns it): the runner host says so
        window.runner.job_finished.connect(self._job_finished)
        window.pane.main_view.overlay_changed.connect(self._graph_overlay_changed)

    def sizeHint(self) -> QSize:
        # the table and the plot would ask for most of the window's height: the graph stays the main thing
        return QSize(900, 300)

    SHOWS_WHOLE = True   # the window brings the dock up as tall as it needs (window._bottom_room)

    def event(self, e) -> bool:
        """Contents grown taller (a layout request after them: the title over the histogram wrapped to more lines)
        than the dock shows: the dock grows with them, within the window's cap. At 1024x700 an op's two lines of
        statistics over its histogram pushed the producers' line out of view, the dock scrolling by 20 px (the
        usual use: select an op, read its histogram). Only where the contents grew: a dock the user drags shorter
        stays so."""
        done = super().event(e)
        if e.type() == QEvent.LayoutRequest:
            least = self.heightForWidth(self.width())
            grew, self._least = least > getattr(self, "_least", 0), least
            area = scroll_area_of(self)
            if grew and area is not None and least > area.viewport().height():
                QTimer.singleShot(0, self, self._grow_for_contents)   # (dropped with the panel, torn down first)
        return done

    def _grow_for_contents(self) -> None:
        grow_bottom_dock(self.window, "Statistics", self, max(0, self.heightForWidth(self.width()) - self.height()))

    def heightForWidth(self, width: int) -> int:
        # the least height (the status's lines at its width included: WrappedLabel), not the preferred one: the
        # word-wrapped status makes the layout height-for-width, and the dock's scroll area then made its contents
        # as tall as the table and the plot would like (~700 px), the dock scrolling through them
        return self.minimumSizeHint().height()

    # ----- construction -----------------------------------------------------------------------------
    def _build_tensors(self) -> QWidget:
        page = QWidget(self)
        lay = QVBoxLayout(page)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.run_btn = QPushButton("Run statistics")
        self.run_btn.setToolTip("Run the model once and read every tensor (the Profile dock's settings and the "
                                "Inputs dock's inputs where those docks are open)")
        self.run_btn.clicked.connect(self.run)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setEnabled(False)
        self.cancel_btn.clicked.connect(self.cancel)
        # wraps: on one line "219 tensors of 152 ops \u00b7 CPU \u00b7 49 ms \u00b7 converted with Weight quant bits: 8"
        # made the dock wider than a 1024 px window, the legend's maximum and the side panel's text out of view (a
        # new-user try)
        self.status = WrappedLabel("no statistics yet")
        self.status.setWordWrap(True)
        self.overlay_box = QComboBox()
        self.overlay_box.addItem("no statistic on the graph", None)
        for key, (label, _) in STATISTICS.items():
            self.overlay_box.addItem(f"colour by {label}", key)
        self.overlay_box.setEnabled(False)
        self.overlay_box.setFixedWidth(190)
        self.overlay_box.currentIndexChanged.connect(lambda _: self.set_statistic(self.overlay_box.currentData()))
        self.legend = LegendBar()
        self.legend.set_scale(None)
        for w in (self.run_btn, self.cancel_btn):
            bar.addWidget(w)
        bar.addWidget(self.status, 1)
        bar.addWidget(self.overlay_box)
        bar.addWidget(self.legend)
        lay.addLayout(bar)

        split = QSplitter(Qt.Horizontal, page)
        self.model = TensorModel(self)
        self.table_view = QTableView()
        self.table_view.setModel(self.model)
        self.table_view.setSortingEnabled(True)
        self.table_view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table_view.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table_view.verticalHeader().hide()
        self.table_view.verticalHeader().setDefaultSectionSize(22)
        self.table_view.setWordWrap(False)
        self.table_view.setTextElideMode(Qt.ElideMiddle)   # tensor names are paths: keep both ends
        self.table_view.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
        self.table_view.horizontalHeader().setStretchLastSection(True)
        for col, width in enumerate((150, 120, 80, 100) + (76,) * 8):  # fixed: sizing to contents reads every row
            self.table_view.setColumnWidth(col, width)
        self.table_view.selectionModel().currentRowChanged.connect(self._row_chosen)
        split.addWidget(self.table_view)

        side = QWidget()
        side_lay = QVBoxLayout(side)
        side_lay.setContentsMargins(0, 0, 0, 0)
        side_lay.setSpacing(2)
        self.detail = WrappedLabel(PICK_TEXT)
        self.detail.setWordWrap(True)
        self.detail.setTextFormat(Qt.RichText)
        self.plot = themed_plot(palette(self.window.theme))
        # tall enough that its count axis reads (at 80 px, "0.2 0.4 0.6 0.8" ran together; the axis also labels fewer
        # ticks where short: plotaxis.FittedAxis), and no taller than a 1024x700 window's dock holds (at 150 px, with
        # the producers' list shown empty, the dock scrolled and cut the plot's x axis: a new-user try)
        self.plot.setMinimumHeight(112)
        self.plot.setLabel("left", "count")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.hist_curve = self.plot.plot([0.0, 1.0], [0.0], stepMode="center", fillLevel=0,
                                         brush=pg.mkBrush("#2b8cbe80"), pen=pg.mkPen("#045a8d"))
        self.hist_counts: list[int] = []
        self.hist_curve.setVisible(False)
        show_axes(self.plot, False)   # (until a tensor's values are counted: _set_hist)
        nan_row = QHBoxLayout()
        self.nan_label = QLabel(NO_RUN_YET)
        self.prev_btn = QPushButton("Previous")
        self.next_btn = QPushButton("Next")
        self.prev_btn.clicked.connect(lambda: self.step(-1))
        self.next_btn.clicked.connect(lambda: self.step(1))
        nan_row.addWidget(self.nan_label, 1)
        nan_row.addWidget(self.prev_btn)
        nan_row.addWidget(self.next_btn)
        self.nan_list = QListWidget()
        self.nan_list.setMaximumHeight(90)
        self.nan_list.hide()  # shown with producers to list ("NaN/Inf producers: none" says the rest)
        self.nan_list.currentRowChanged.connect(self._nan_chosen)
        side_lay.addWidget(self.detail)
        side_lay.addWidget(self.plot, 1)
        side_lay.addLayout(nan_row)
        side_lay.addWidget(self.nan_list)
        split.addWidget(side)
        split.setSizes([600, 400])
        lay.addWidget(split, 1)
        self._enable_stepping()
        return page

    def add_actions(self, menu) -> None:
        from mnnscope.gui.menus import add_action
        add_action(self.window, menu, "Run &Statistics", self._run_from_menu, "F7",
                   tip="Read every tensor of one run: statistics, histograms, NaN/Inf producers")
        add_action(self.window, menu, "Run S&weep", self._sweep_from_menu,
                   tip="Time the model under threads x precision x memory")

    def _run_from_menu(self) -> None:
        self.window.show_dock("Statistics")
        self.tabs.setCurrentIndex(0)
        self.run()

    def _sweep_from_menu(self) -> None:
        self.window.show_dock("Statistics")
        self.tabs.setCurrentWidget(self.sweep)
        self.sweep.run()

    # ----- running ----------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.window.runner.job_busy(JOB)

    def run(self) -> bool:
        """Start a statistics run of the window's model; `finished(result)` or `failed(message)` follows."""
        w = self.window
        if not w.pane.path or w.pane.table is None:
            w.notify("open a model first", INFO, "Statistics")
            return False
        if w.inputs_refused("Statistics"):
            return False
        try:
            opts = stats_options(w)
        except Exception as e:  # the Profile/Inputs docks refuse their own settings
            self._failed(str(e))
            return False
        table = w.pane.table
        self._pending = table
        focus.set_running(self.run_btn, self.cancel_btn, True)
        self.status.setText("running \u2026")
        # the settings it converts with go with its rows (kept with them on the shelf): the status names them as the
        # Convert dock's form does
        how = {"convert_settings": opts.convert_settings or {}}
        w.runner.run_job(JOB, lambda client, on_event, cancelled: dict(analyse(
            run_profile(opts, client=client, on_event=on_event), table), **how), on_done=self._done,
            on_fail=self._failed)
        return True

    def cancel(self) -> None:
        self.window.runner.cancel_job(JOB)

    def _job_finished(self, name: str, ok: bool, msg: str) -> None:
        if name == JOB and not ok and msg == "cancelled":
            self._failed(msg)

    def _done(self, payload: dict) -> None:
        focus.set_running(self.run_btn, self.cancel_btn, False)
        if self._pending is not self.window.pane.table:  # another model was opened meanwhile
            self.status.setText("the model changed during the run: run again")
            return
        self._table = self._pending
        self._show(payload)
        path = self.window.pane.path
        if path:  # kept for when this model is opened again (it said "no statistics yet", a new-user try)
            self._shelf.put(path, (_stamp(path), payload))
        self.finished.emit(self.result)

    def _show(self, payload: dict) -> None:
        """A statistics run's rows, status, suspects and overlay in the dock (mapped onto self._table)."""
        self.result, self.rows, self.nonfinite = payload["result"], payload["rows"], payload["nonfinite"]
        self.int32_limit = payload.get("int32_limit") or []
        self.op_nodes = payload.get("op_nodes") or {}
        self.model.set_rows(self.rows, payload["cells"])
        hdr = self.table_view.horizontalHeader()
        if hdr.isSortIndicatorShown() and 0 <= hdr.sortIndicatorSection() < self.model.columnCount():
            # the header kept its arrow over the new rows, unsorted (tryout 67: "max |x|" marked, rows in file order)
            self.model.sort(hdr.sortIndicatorSection(), hdr.sortIndicatorOrder())
        mapped = len({r.node for r in self.rows if r.node >= 0})
        # which file ran: an .onnx on MNN is converted with the Convert dock's settings for it (tryout 67: an int8
        # conversion ran after a comparison set it, the status said only "91 tensors of 28 ops")
        how = conversion_words(self.result, payload.get("convert_settings"))
        # "of 8 ops" beside a status bar saying 94 ops (the .mnn beside) read as a count gone wrong (a new-user try):
        # the ops the rows fall on, out of the open graph's
        total = getattr(self._table, "node_count", 0)
        self.status.setText(f"{len(self.rows):,} tensors on {mapped:,} of the graph's {total:,} ops \u00b7 "
                            f"{self.result.get('backend_used')} "
                            f"\u00b7 {self.result.get('stats_ms') or 0:.0f} ms" + (f" \u00b7 {how}" if how else ""))
        self.status.setToolTip(next((str(w) for w in self.result.get("warnings") or []
                                     if str(w).startswith("profiled ")), ""))
        self.overlay_box.setEnabled(bool(self.rows))
        self._show_nonfinite()
        if self.statistic:
            self.set_statistic(self.statistic)
        item = self.window.pane.main_view.canvas.selected
        if 0 <= item < self._table.node_count:
            self.show_node(item)

    def _failed(self, msg: str) -> None:
        focus.set_running(self.run_btn, self.cancel_btn, False)
        self.status.setText("cancelled" if "cancelled" in msg else "failed")
        if "cancelled" not in msg:
            self.window.notify(f"statistics run failed: {msg}", ERROR, "Statistics")
        self.failed.emit(msg)

    # ----- graph ------------------------------------------------------------------------------------
    @property
    def view(self):
        return self.window.pane.main_view

    def _current(self) -> bool:
        return self._table is not None and self.view.table is self._table

    def set_statistic(self, statistic: str | None) -> Overlay | None:
        """Colour the graph by a statistic of each op's outputs (None: back to op categories)."""
        if statistic is not None and statistic not in STATISTICS:
            raise ValueError(f"unknown statistic '{statistic}'")
        self.statistic = statistic
        idx = self.overlay_box.findData(statistic)
        if idx >= 0 and idx != self.overlay_box.currentIndex():
            self.overlay_box.blockSignals(True)
            self.overlay_box.setCurrentIndex(idx)
            self.overlay_box.blockSignals(False)
        if statistic is None or not self._current():
            self.view.set_overlay(None)
            self.legend.set_scale(None)
            return None
        overlay = self.overlay(statistic)
        self.view.set_overlay(overlay)
        self.legend.set_scale(overlay.scale, STATISTICS[statistic][0] + (" (log)" if overlay.scale.log else ""))
        return overlay

    def _graph_overlay_changed(self, ov) -> None:
        """Another dock coloured the graph (or cleared it): the box and the legend stop saying a statistic is shown
        (they kept "colour by max |x|" and its ramp over the profile's or the comparison's colours)."""
        if self.statistic is None or (ov is not None and ov.meta.get("statistic") == self.statistic):
            return
        self.statistic = None
        self.overlay_box.blockSignals(True)
        self.overlay_box.setCurrentIndex(max(0, self.overlay_box.findData(None)))
        self.overlay_box.blockSignals(False)
        self.legend.set_scale(None)

    def overlay(self, statistic: str) -> Overlay:
        """The Overlay of a statistic per node of the mapped graph (log scale where the values span decades)."""
        values = node_values(self.rows, statistic)
        label, logged = STATISTICS[statistic]
        positive = [v for v in values.values() if v > 0]
        log = logged and len(positive) > 1 and max(positive) / min(positive) > 100
        ov = Overlay.from_values(label, {self._table.ids[i]: v for i, v in values.items()}, log=log,
                                 aggregate="max", vmin=0.0 if statistic == "zero_fraction" else None,
                                 vmax=1.0 if statistic == "zero_fraction" else None)
        ov.scale.colours = RAMP
        ov.meta["statistic"] = statistic
        return ov

    def selection_changed(self, view, item: int) -> None:
        """The window's selection hook: the op selected on the main graph shows its outputs' statistics; before a
        run, its name and what gives them (the title said "select an op on the graph" while one was selected:
        helper 102's try)."""
        if view is not self.view:
            return
        if self._current():
            if 0 <= item < self._table.node_count:
                self.show_node(item)
            return
        t = view.table
        if t is not None and 0 <= item < t.node_count:
            name = t.names[item] or t.ids[item]
            self.detail.setText(f"<b>{self._short(name)}</b> ({html.escape(t.op_types[item])}): {NOT_READ_YET}")
            self.detail.setToolTip(name)
        else:
            self.detail.setText(PICK_TEXT)
            self.detail.setToolTip("")

    def show_node(self, node: int) -> None:
        rows = rows_of_node(self.rows, node, self.op_nodes)
        t = self._table
        name = t.names[node] or t.ids[node]
        self.shown_node = node
        if not rows:
            self.detail.setToolTip(name)
            self.detail.setText(f"<b>{self._short(name)}</b> ({t.op_types[node]}): no tensor of this op was read "
                                "(fused or removed by the runtime)")
            self._set_hist(None)
            if not self._syncing:   # no row of the last op stays marked beside it (helper 104's try)
                self.table_view.selectionModel().clear()
            return
        row = next((r for r in rows if r.nonfinite or r.at_int32_limit is not None), rows[0])
        self._show_row(row, name, t.op_types[node])
        self._sync_table(row)

    def _short(self, name: str, op: str | None = None) -> str:
        """A name as the title over the histogram shows it, in about half the title's width (the whole name in its
        tooltip): an op's cut at its start (its scope's end and its own name tell it apart), a tensor's (`op`: the
        op it belongs to) without the scope it shares with the op, then cut in the middle. The query MatMul's
        "/encoder/layer.0/attention/self/query/Add_output_0__matmul_converted_raster_0" took three lines at
        1024x700 and the dock, at its cap, scrolled (helper 106's try)."""
        font = self.detail.font()
        font.setBold(True)
        room = max(160, int(self.detail.width() * NAME_SHARE))
        how = Qt.ElideLeft
        if op is not None:
            shared = os.path.commonprefix([op, name]).rfind("/")
            name = f"\u2026{name[shared:]}" if shared > 0 else name
            how = Qt.ElideMiddle
        return html.escape(QFontMetrics(font).elidedText(name, how, room))

    def _show_row(self, row, name: str, op_type: str) -> None:
        s = row.stats
        self.detail.setToolTip(f"{name} ({op_type}) \u2192 {row.tensor}")
        parts = [f"<b>{self._short(name)}</b> ({op_type}) \u2192 <b>{self._short(row.tensor, name)}</b> "
                 f"{fmt_shape(s.get('shape'))} {s.get('dtype', '')}",
                 f"min {_num(s.get('min'))} \u00b7 max {_num(s.get('max'))} \u00b7 mean {_num(s.get('mean'))} "
                 f"\u00b7 std {_num(s.get('std'))} \u00b7 max |x| {_num(row.max_abs)}"
                 + (f" \u00b7 zeros {100 * s['zero_fraction']:.1f} %" if s.get("zero_fraction") is not None else "")]
        if row.nonfinite:
            parts.append(f"<span style='color:#d7191c'><b>NaN {s.get('nan', 0):,} \u00b7 Inf {s.get('inf', 0):,}"
                         "</b></span>")
        if row.at_int32_limit is not None:
            parts.append(f"<span style='color:#d7191c'><b>{row.at_int32_limit:.10g} is the int32 limit</b>: what an "
                         "integer overflow or a saturated accumulator leaves</span>")
        self.detail.setText("<br>".join(parts))
        self._set_hist(s.get("hist"), row.tensor)

    def _set_hist(self, hist: dict | None, title: str = "") -> None:
        if not hist or hist.get("lo") is None:
            self.hist_counts = []
            self.hist_curve.setData([0.0, 1.0], [0.0])
            self.hist_curve.setVisible(False)   # (its step at 0 drew a blue line along the empty plot's foot)
            # no axes over nothing (an op with no tensor drew an empty 0-1 frame: helper 101's try)
            show_empty(self.plot, "No values to count" if title else "")
            self.plot.setRange(xRange=(0.0, 1.0), yRange=(0.0, 1.0), padding=0)  # not a zoom into a flat line
            return
        show_axes(self.plot, True)
        self.hist_curve.setVisible(True)
        counts = list(hist["counts"])
        lo, hi = float(hist["lo"]), float(hist["hi"])
        edges = np.linspace(lo, hi if hi > lo else lo + 1.0, len(counts) + 1)
        self.hist_counts = counts
        self.hist_curve.setData(edges, np.asarray(counts, np.float64))
        self.plot.enableAutoRange()
        # the tensor's name is on the line above the plot: here it pushed "64 bins over the finit" out of the dock (a
        # new-user try); the name stays as the plot's tooltip
        self.plot.setTitle(f"{len(counts)} bins over the finite values")
        self.plot.setToolTip(f"{title}: histogram of its finite values" if title else "")

    def _sync_table(self, row) -> None:
        if self._syncing:
            return
        idx = self.model.index(self.model.row_of(row), 0)
        self._syncing = True
        try:
            self.table_view.selectionModel().setCurrentIndex(
                idx, QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)
            self.table_view.scrollTo(idx)
        finally:
            self._syncing = False

    def _row_chosen(self, current, _previous) -> None:
        if self._syncing or not current.isValid():
            return
        row = self.model.rows[current.row()]
        self._syncing = True
        try:
            node = row.node if row.node >= 0 else self.op_nodes.get(row.op, -1)
            if node >= 0 and self._current():
                self.view.reveal(node)
            self._show_row(row, row.op, row.op_type)
        finally:
            self._syncing = False

    # ----- NaN / Inf producers ----------------------------------------------------------------------
    def _show_nonfinite(self) -> None:
        """The list of suspect values' producers: NaN/Inf, and float values at the int32 limit (the romanizer
        decoder's int8 run read -2.147e9 where fp32 gave 59, and nothing was flagged: a new-user try)."""
        t = self._table
        nonfinite, limit = set(self.nonfinite), set(self.int32_limit)
        self.suspects = sorted(nonfinite | limit, key=lambda i: (int(t.rank[i]), i)) if t is not None else []
        self.nan_list.blockSignals(True)
        self.nan_list.clear()
        for node in self.suspects:
            said = []
            if node in nonfinite:
                bad = [r for r in rows_of_node(self.rows, node, self.op_nodes) if r.nonfinite]
                said.append(f"NaN {sum(int(r.stats.get('nan') or 0) for r in bad):,} \u00b7 "
                            f"Inf {sum(int(r.stats.get('inf') or 0) for r in bad):,}")
            if node in limit:
                v = next(r.at_int32_limit for r in rows_of_node(self.rows, node, self.op_nodes)
                         if r.at_int32_limit is not None)
                said.append(f"at the int32 limit ({v:.4g})")
            self.nan_list.addItem(f"{t.names[node] or t.ids[node]}  ({t.op_types[node]})  {'; '.join(said)}")
            if node in limit:
                self.nan_list.item(self.nan_list.count() - 1).setToolTip(
                    "a float tensor whose min or max is \u00b12147483648, the end of the int32 range: what an integer "
                    "overflow or a saturated int32 accumulator leaves (x86 turns an out-of-range float->int32 "
                    "conversion into -2147483648)")
        self.nan_list.blockSignals(False)
        self.nan_list.setVisible(bool(self.suspects))
        self.step_index = -1
        parts = ([f"NaN/Inf producers: {len(nonfinite)}"] if nonfinite or not limit else []) + \
            ([f"int32-limit producers: {len(limit)}"] if limit else [])
        # before a run there is nothing to say: "none" read as a finding (helper 102's try)
        self.nan_label.setText(" \u00b7 ".join(parts) if self.suspects else "NaN/Inf producers: none"
                               if self.result is not None else NO_RUN_YET)
        if self._current():
            self.view.canvas.set_marked(self.suspects)
        self._enable_stepping()

    def _enable_stepping(self) -> None:
        on = len(self.suspects) > 0
        self.prev_btn.setEnabled(on)
        self.next_btn.setEnabled(on)

    def step(self, delta: int) -> int:
        """Select the next (1) or previous (-1) NaN/Inf (or int32-limit) producer on the graph, centred; returns its
        node."""
        if not self.suspects:
            return -1
        n = len(self.suspects)
        self.step_index = (self.step_index + delta) % n if self.step_index >= 0 else (0 if delta > 0 else n - 1)
        self.nan_list.blockSignals(True)
        self.nan_list.setCurrentRow(self.step_index)
        self.nan_list.blockSignals(False)
        self._nan_chosen(self.step_index)   # also when the row was current already (one producer, or wrapping)
        return self.suspects[self.step_index]

    def _nan_chosen(self, row: int) -> None:
        if not (0 <= row < len(self.suspects)) or not self._current():
            return
        self.step_index = row
        self.view.reveal(self.suspects[row])

    # ----- window hooks -----------------------------------------------------------------------------
    def model_changed(self, path, table, tree) -> None:
        if table is self._table:
            return
        self._table = None
        self.rows, self.nonfinite, self.int32_limit, self.result, self.shown_node = [], [], [], None, -1
        self.op_nodes = {}
        self.model.set_rows([])
        self._show_nonfinite()
        self._set_hist(None)
        self.legend.set_scale(None)
        self.overlay_box.setEnabled(False)
        self.detail.setText(PICK_TEXT)
        self.detail.setToolTip("")
        self.status.setText("no statistics yet")
        self.sweep.model_changed(path)
        kept = self._shelf.get(path) if table is not None else None
        if kept is not None and kept[0] == _stamp(path) and not self.window.runner.job_busy(JOB):
            # this model's last statistics run (the file unchanged: its rows name this table's nodes) comes back
            self._table = table
            self._show(kept[1])

    def shutdown(self) -> None:
        for job in (JOB, self.sweep.JOB):
            if self.window.runner.job_busy(job):
                self.window.runner.cancel_job(job)
