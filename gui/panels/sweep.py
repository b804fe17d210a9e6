"""The Statistics dock's Sweep tab: the model timed under threads x precision x memory (the profile service's
run_sweep on the work runner), as a table of cells and a plot of milliseconds against threads, one curve per
precision and memory mode. An .onnx sweeps on MNN (precision and memory are MNN settings): the service
converts it first, with default settings."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton, QSizePolicy,
                               QSpinBox, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from mnnscope.inspector.formats.registry import detect
from mnnscope.inspector.profile.service import (MEMORY_MODES, PRECISIONS, ProfileOptions, parse_sweep,
                                                run_sweep)
from mnnscope.runner import protocol

from mnnscope.gui import focus
from mnnscope.gui.notify import ERROR, INFO
from mnnscope.gui.panels.convertform import settings_text
from mnnscope.gui.plotaxis import FittedAxis, show_empty
from mnnscope.gui.theme import palette
from mnnscope.gui.wraplabel import WrappedLabel

CURVE_COLOURS = ("#2b8cbe", "#d7191c", "#1a9850", "#fdae61", "#6a4c93", "#7a5a3a")
HEADERS = ("threads", "precision", "memory", "backend used", "precision effective", "total ms", "min\u2013max ms",
           "note")
_OPTION_FIELDS = {f.name for f in dataclasses.fields(ProfileOptions)}


def sweep_notes(cells: list[dict]) -> list[str]:
    """Each distinct note of the cells (an error or a warning), once, with the cells it is about where that is not
    all of them ("threads 1, low: ...")."""
    by_note: dict[str, list[str]] = {}
    for c in cells:
        for note in ([c["error"]] if c.get("error") else []) + [str(w) for w in c.get("warnings") or []]:
            by_note.setdefault(note, []).append(
                f"threads {c.get('threads')}, {c.get('precision_requested')}, memory {c.get('memory_mode')}")
    return [note if len(where) == len(cells) else f"{'; '.join(where)}: {note}" for note, where in by_note.items()]


SWEEP_PLOT_TITLE = "Run sweep: ms per run against threads, a line per precision and memory"  # (no cell yet)


def themed_plot(pal) -> pg.PlotWidget:
    """A pyqtgraph plot in the window's theme (pyqtgraph's own default is white on black)."""
    plot = pg.PlotWidget(background=pal.background, axisItems={"left": FittedAxis("left")})  # labels never overlap
    for side in ("left", "bottom"):
        ax = plot.getAxis(side)
        ax.setPen(pg.mkPen(pal.text_dim))
        ax.setTextPen(pg.mkPen(pal.text))
    return plot


def base_options(window) -> ProfileOptions:
    """The Profile dock's options when there is one, else the open model with the Inputs dock's inputs (the
    statistics run and the sweep start from these)."""
    profile = window.panels.get("Profile")
    if profile is not None:
        return profile.options()
    spec = {k: v for k, v in window.input_spec().items() if k in _OPTION_FIELDS}
    return ProfileOptions(model=window.pane.path, **spec)


def sweep_options(window, runs: int) -> ProfileOptions:
    """Base options of a sweep: base_options; MNN always."""
    opts = base_options(window)
    engine = protocol.ENGINE_MNN if protocol.ENGINE_MNN in detect(opts.model).engines else opts.engine
    return dataclasses.replace(opts, engine=engine, runs=runs, stats=False)


class SweepTab(QWidget):
    JOB = "sweep"
    finished = Signal(dict)   # run_sweep's result (cells, run_id)
    failed = Signal(str)

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        self.result: dict | None = None
        self._opts: ProfileOptions | None = None  # the options of the last sweep started (what its status names)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        axes = QHBoxLayout()
        axes.addWidget(QLabel("threads"))
        self.threads = QLineEdit("1,2,4")
        self.threads.setMaximumWidth(90)
        self.threads.setToolTip("thread counts, comma separated")
        axes.addWidget(self.threads)
        axes.addWidget(QLabel("precision"))
        self.precision = {p: QCheckBox(p) for p in PRECISIONS}
        for p, box in self.precision.items():
            box.setChecked(p in (protocol.PRECISION_HIGH, protocol.PRECISION_LOW))
            axes.addWidget(box)
        axes.addWidget(QLabel("memory"))
        self.memory = {m: QCheckBox(m) for m in MEMORY_MODES}
        for m, box in self.memory.items():
            box.setChecked(m == protocol.MEMORY_NORMAL)
            axes.addWidget(box)
        axes.addWidget(QLabel("runs"))
        self.runs = QSpinBox()
        self.runs.setRange(1, 1000)
        self.runs.setValue(5)
        axes.addWidget(self.runs)
        self.run_btn = QPushButton("Run sweep")
        self.run_btn.clicked.connect(self.run)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setEnabled(False)
        self.cancel_btn.clicked.connect(self.cancel)
        axes.addWidget(self.run_btn)
        axes.addWidget(self.cancel_btn)
        # wrapped: on one line its text ("4 cells of decoder.mnn, converted from the .onnx with ...") set the tab's
        # least width, wider than the dock, and the plot and the notes went out of view (tryout 71)
        self.status = WrappedLabel("")
        self.status.setWordWrap(True)
        # no least width of its own either (Qt gives a wrapped label one of ~40 characters): with the notes' it made
        # the tab 1090 px at 1024x700, cut the status, the notes and the plot's last thread (helper 82's try)
        self.status.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        axes.addStretch(1)
        lay.addLayout(axes)
        # on a line of its own, the dock's width: right of the controls at 1024x700 it wrapped into a column ~140 px
        # wide, five lines tall, and the table under it showed 2.5 of its 6 rows (a new-user try)
        lay.addWidget(self.status)
        split = QSplitter(self)
        self.table = QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        split.addWidget(self.table)
        self.plot = themed_plot(palette(window.theme))
        self.plot.setLabel("bottom", "threads")
        # ("total ms (median)", then "median ms", were cut on the short plot at 1024x700; the median is in the tooltip)
        self.plot.setLabel("left", "ms")
        self.plot.getAxis("left").setToolTip("the median of the cell's runs, in ms (the table's total ms)")
        self.plot.getAxis("left").enableAutoSIPrefix(False)  # "ms (x0.001)" reads as a unit error
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.addLegend(offset=(-10, 10))
        self._y_span: tuple[float, float] | None = None  # the curves' lowest and highest time (room kept above)
        # a bound method, not a lambda: Qt drops the connection with the tab (a lambda outlived it, and a view box
        # resized while a window was torn down could call into a deleted plot)
        self.plot.plotItem.vb.sigResized.connect(self._fit_y)
        split.addWidget(self.plot)
        show_empty(self.plot, SWEEP_PLOT_TITLE)   # (before a sweep: no 0-1 axes under nothing, helper 102's try)
        split.setSizes([600, 400])
        lay.addWidget(split, 1)
        # the cells' notes in full, each once (in the table's last column a note read "the Interpreter cannot run
        # t…", the rest only on hover: tryout 67)
        self.notes = WrappedLabel("")
        self.notes.setWordWrap(True)  # on one line it ran past the dock (helper 82's try)
        self.notes.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # (as the status: wraps to the dock)
        self.notes.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.notes.setVisible(False)
        lay.addWidget(self.notes)
        window.runner.job_event.connect(self._event)
        window.runner.job_finished.connect(self._job_finished)

    # ----- running ----------------------------------------------------------------------------------
    def cells(self) -> list[dict]:
        """The matrix the controls describe (UsageError when an axis is empty or a value is wrong)."""
        precisions = ",".join(p for p, box in self.precision.items() if box.isChecked())
        memories = ",".join(m for m, box in self.memory.items() if box.isChecked())
        return parse_sweep([f"threads={self.threads.text().replace(' ', '')}", f"precision={precisions}",
                            f"memory={memories}"])

    def run(self) -> bool:
        w = self.window
        if not w.pane.path:
            w.notify("open a model first", INFO, "Sweep")
            return False
        try:
            cells = self.cells()
            opts = sweep_options(w, self.runs.value())
        except Exception as e:  # a usage error in the axes, or a dock refusing its settings
            self.status.setText(str(e))
            self.failed.emit(str(e))
            return False
        self._opts = opts
        focus.set_running(self.run_btn, self.cancel_btn, True)
        self.status.setText(f"{len(cells)} cells \u2026")
        w.runner.run_job(self.JOB, lambda client, on_event, cancelled: run_sweep(
            opts, cells, client=client, on_event=on_event), on_done=self._done, on_fail=self._failed)
        return True

    def cancel(self) -> None:
        self.window.runner.cancel_job(self.JOB)

    def _job_finished(self, name: str, ok: bool, msg: str) -> None:
        if name == self.JOB and not ok and msg == "cancelled":  # a cancelled job calls none of its callbacks
            self._failed(msg)

    def _event(self, name: str, kind: str, payload) -> None:
        # (not once it ended: a progress line still queued from a cancelled sweep overwrote "cancelled")
        if name == self.JOB and kind == "progress" and isinstance(payload, dict) and payload.get("message") \
                and not self.run_btn.isEnabled():
            self.status.setText(str(payload["message"]))

    def _timed(self, result: dict) -> str:
        """" of a fresh conversion of cnn.onnx with the Convert dock's settings (fp16 weights)": which file the cells
        timed (a new-user try's sweep ran an fp16 conversion, the Convert dock's settings, and nothing in the dock
        said so; "of cnn.mnn" named the run folder's copy, not a file beside the model)."""
        opts = self._opts
        ran = result.get("path") or ""
        if not ran:
            return ""
        if opts is None or os.path.abspath(ran) == os.path.abspath(opts.model):
            return f" of {os.path.basename(ran)}"
        how = settings_text(opts.convert_settings)  # as the Convert dock's form names them
        return f" of a fresh conversion of {os.path.basename(opts.model)} with " + (
            f"the Convert dock's settings ({how})" if how else "default settings")

    def _done(self, result: dict) -> None:
        focus.set_running(self.run_btn, self.cancel_btn, False)
        self.result = result
        cells = result.get("cells") or []
        bad = sum(1 for c in cells if c.get("error"))
        self.status.setText(f"{len(cells)} cells" + (f", {bad} failed" if bad else "") + self._timed(result)
                            + (f" \u00b7 saved as run #{result['run_id']}" if result.get("run_id") else ""))
        self._fill_table(cells)
        self._fill_plot(cells)
        self.finished.emit(result)

    def _failed(self, msg: str) -> None:
        focus.set_running(self.run_btn, self.cancel_btn, False)
        self.status.setText("cancelled" if "cancelled" in msg else f"failed: {msg}")
        if "cancelled" not in msg:
            self.window.notify(f"sweep failed: {msg}", ERROR, "Sweep")
        self.failed.emit(msg)

    # ----- results ----------------------------------------------------------------------------------
    def _fill_table(self, cells: list[dict]) -> None:
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(cells))
        for r, c in enumerate(cells):
            lo, hi = c.get("total_ms_min"), c.get("total_ms_max")
            note = c.get("error") or "; ".join(c.get("warnings") or [])
            values = (c.get("threads"), c.get("precision_requested"), c.get("memory_mode"), c.get("backend_used"),
                      c.get("precision_effective"), c.get("total_ms"),
                      f"{lo:.3f}\u2013{hi:.3f}" if lo is not None and hi is not None else "", note)
            for col, v in enumerate(values):
                item = QTableWidgetItem()
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    item.setData(0, round(float(v), 3) if isinstance(v, float) else v)
                else:
                    item.setText("" if v is None else str(v))
                if col == 7 and note:
                    item.setToolTip(note)
                self.table.setItem(r, col, item)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)  # cells in the order swept
        self.table.setSortingEnabled(True)
        self.notes.setText("\n".join(f"\u26a0 {note}" for note in sweep_notes(cells)))
        self.notes.setVisible(bool(self.notes.text()))

    def _fill_plot(self, cells: list[dict]) -> None:
        self.plot.clear()
        show_empty(self.plot, None if any(c.get("total_ms") is not None for c in cells) else SWEEP_PLOT_TITLE)
        legend = self.plot.plotItem.legend
        if legend is not None:
            legend.clear()
        series: dict[tuple, list] = {}
        for c in cells:
            if c.get("total_ms") is not None:
                series.setdefault((c.get("precision_requested"), c.get("memory_mode")), []).append(
                    (c["threads"], c["total_ms"]))
        self.curves = {}
        # the threads axis is whole numbers: ticks at the counts swept (tryout 11 read "1.2, 1.4, 1.6" threads)
        counts = sorted({int(c["threads"]) for c in cells if c.get("threads") is not None})
        self.plot.getAxis("bottom").setTicks([[(t, str(t)) for t in counts]] if counts else None)
        for k, (key, pts) in enumerate(series.items()):
            pts.sort()
            x, y = np.asarray([p[0] for p in pts], float), np.asarray([p[1] for p in pts], float)
            colour = CURVE_COLOURS[k % len(CURVE_COLOURS)]
            self.curves[key] = self.plot.plot(x, y, pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=7,
                                              symbolBrush=colour, name=f"{key[0]}, memory {key[1]}")
        ys = [p[1] for pts in series.values() for p in pts]
        self._y_span = (min(ys), max(ys)) if ys else None
        self._fit_y()

    def _fit_y(self, *_) -> None:
        """Room above the curves for the legend in the top right corner (it lay over the red line: tryout 67): the
        share of the plot's height its rows take in pixels, so that a short plot (a 1024x700 window's dock) keeps
        it clear too."""
        if self._y_span is None:
            return
        lo, hi = self._y_span
        span = (hi - lo) or abs(hi) or 1.0
        legend, vb_h = self.plot.plotItem.legend, self.plot.plotItem.vb.height()
        rows = len(self.curves)
        if legend is not None and vb_h > 0:
            share = min(0.8, (legend.boundingRect().height() + 16) / vb_h)
        else:
            share = min(0.6, 0.2 + 0.1 * rows)
        self.plot.setYRange(lo - 0.05 * span, hi + span * share / (1 - share), padding=0)

    def model_changed(self, path) -> None:
        if self.window.runner.job_busy(self.JOB):
            return
        self.result = None
        self.table.setRowCount(0)
        self.notes.setText("")
        self.notes.setVisible(False)
        self.plot.clear()
        legend = self.plot.plotItem.legend
        if legend is not None:
            legend.clear()
        self.status.setText("")
