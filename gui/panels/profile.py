"""The Profile dock: run settings, Run ▸ Profile (F5) and Cancel, per-op and per-type tables, a bar chart of
the top ops, and the time heat map on the graph (legend, hottest nodes labelled), with exports.

The run is the profile service (inspector/profile/service.py run_profile) on the window's work runner
(window.runner.run_job); the op times are placed on the viewed graph's nodes on the same worker thread
(inspector/profile/placement.py: by name, or through the conversion's node map for an .onnx run on MNN).
The UI thread only shows results.
"""
from __future__ import annotations

import importlib
import json
import math
import re
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetrics, QStandardItemModel
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QMenu, QProgressBar, QPushButton, QSizePolicy, QSpinBox,
                               QSplitter, QTableView, QTabWidget, QToolButton, QVBoxLayout, QWidget)

from mnnscope.gui import filedialog, focus
from mnnscope.gui.canvas import fmt_shape
from mnnscope.gui.dockheight import grow_bottom_dock, least_height_for_width
from mnnscope.gui.legend import HotLabels, Legend
from mnnscope.gui.menus import add_action
from mnnscope.gui.shelf import Shelf
from mnnscope.gui.notify import ERROR, INFO, WARNING
from mnnscope.gui.panels.convertform import settings_text
from mnnscope.gui.plotaxis import show_axes, title_room
from mnnscope.gui.wraplabel import ElidedLabel
from mnnscope.gui.panels.profile_tables import (NODE_COLUMNS, OP_COLUMNS, TYPE_COLUMNS, FilterProxy, NameColumnFit,
                                                RowsModel, fit_to_headers, node_rows, op_rows, type_rows)
from mnnscope.gui.tasks import TaskSlot
from mnnscope.inspector.compare.errormap import TIME_FLOOR_MS
from mnnscope.inspector.inputs.data import given_inputs
from mnnscope.inspector.inputs.sources import is_free
from mnnscope.inspector.model.overlay import Overlay
from mnnscope.inspector.profile import placement as plc
from mnnscope.runner import protocol

JOB = "profile"
ENGINE_TITLES = {protocol.ENGINE_MNN: "MNN", protocol.ENGINE_ORT: "ONNX Runtime"}
OTHER = "other"  # the "On the graph" entry naming another dock's overlay while it is on the graph
OVERLAYS = {"time": ("Time per node", "ms", "heat"), "share": ("Share of the measured time", "%", "heat"),
            "throughput": ("Throughput", "GFLOP/s", "mono")}
TOP_BARS = 15
IDLE_TEXT = "Run \u25b8 Profile (F5) times the open model."  # the status before a run
CHART_TITLE_PT = 10  # the bar chart's title (pyqtgraph's default 11pt took a line's worth more at 1024 px)
BAR_GAP = 2  # px between two bar names, over a name's own height: 15 bars in a 140 px chart (1024x700), and 3 in a
# 28 px one (a short dock), printed their names over each other
LABEL_SHARE = 0.6  # of the chart's width its bar names may take at most (_label_width); a longer one is elided
ROWS_IN_VIEW = 5  # table rows a finished profile makes room for in the dock, where the graph can spare the height


def run_job(request, table, client, on_event, cancelled, pids: dict | None = None):
    """The worker-thread part: the profile service in its own process (inspector/profile/profproc.py: the
    service imports onnx, whose initialisation holds the GIL for seconds), then the op times placed on the
    viewed graph. `request`: ProfileOptions or its fields as a dict. `pids` receives the child's and its
    runner's process ids. The window's work runner (`client`) is not used."""
    import dataclasses
    importlib.import_module("numpy.ma")  # see ProfilePanel._ask_hello: not on the UI thread

    from mnnscope.inspector.process.childjob import run_service_child
    req = request if isinstance(request, dict) else dataclasses.asdict(request)
    result = run_service_child("mnnscope.inspector.profile.profproc", req, on_event, cancelled, pids, what="profile")
    node_map = None
    if table is not None and plc.needs_node_map(result, table):
        node_map = plc.load_node_map(result)
    placement = plc.place(result, table, node_map) if table is not None else None
    return {"result": result, "placement": placement}


def _foreign(ov) -> bool:
    """The graph shows another dock's overlay (Compare's errors, a statistic): overlay() marks this dock's own."""
    return ov is not None and "profile" not in ov.meta


def free_sizes_text(result: dict, table) -> str:
    """" at x 1×3×640×480": the sizes a run gave the inputs whose dims the model leaves free (a new-user try profiled
    PP-OCRv6 det at 640x480 and nothing said which size the times were for; another never knew it ran at 64x64)."""
    parts = []
    for inp in result.get("inputs") or []:
        t = table.tensor_index(inp.get("name") or "") if table is not None else None
        declared = table.shapes[t] if t is not None else None
        if inp.get("shape") and (declared is None or any(is_free(d) for d in declared)):
            parts.append(f"{inp['name']} {fmt_shape(inp['shape'])}")
    return f" at {', '.join(parts)}" if parts else ""


SHORT_RUN = (f"under {TIME_FLOOR_MS:g} ms per run: reruns of so short a run vary more than settings differ; compare "
             "settings on a larger input")


class FoldedLine(ElidedLabel):
    """A label that shows one line, its lines joined and the rest elided, the whole text in its tooltip and from
    text() (what the dock and its callers read); unfolded (set_folded(False)) it is word-wrapped in full. At
    1024x700 the dock's word-wrapped status and notices took four lines of a ~260 px dock, and its results table
    showed one or two rows (a new-user try). `whole`: a longer text for the tooltip (the notices' kept-at paths);
    setToolTip() gives a tip said after it. `unfold_on_click`: a click folds and unfolds it (the notices)."""

    def __init__(self, text: str = "", unfold_on_click: bool = False):
        super().__init__()
        self._whole = self._tip = ""
        self.folded = True
        self.elided = False
        self.unfold_on_click = unfold_on_click
        if unfold_on_click:
            self.setCursor(Qt.PointingHandCursor)
        self.setText(text)

    def setText(self, text: str, whole: str = "") -> None:
        self._full, self._whole = text or "", whole or ""
        self._fit()

    def setToolTip(self, tip: str) -> None:
        self._tip = tip or ""
        self._fit()

    def set_folded(self, folded: bool) -> None:
        if folded != self.folded:
            self.folded = folded
            self.setWordWrap(not folded)
            self._fit()
            self.updateGeometry()

    def mousePressEvent(self, e) -> None:
        if self.unfold_on_click and e.button() == Qt.LeftButton and (self.elided or not self.folded):
            self.set_folded(not self.folded)
            e.accept()
            return
        super().mousePressEvent(e)

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(0, hint.height()) if self.folded else hint

    def _fit(self) -> None:
        if self.folded:
            line = "   ".join(x.strip() for x in self._full.split("\n") if x.strip())
            width = self.contentsRect().width() - 2 * self.margin() - 2
            # not laid out yet (width 0): fitted at its first resize
            shown = self.fontMetrics().elidedText(line, Qt.ElideRight, width) if width > 20 else line
            self.elided = shown != line or line != self._full.strip()
        else:
            shown, self.elided = self._full, False
        QLabel.setText(self, shown)
        whole = self._whole or self._full
        said = [whole] if whole and (self.elided or whole != self._full) else []
        if self.unfold_on_click and self.elided:
            said.append("(click to unfold)")
        elif self.unfold_on_click and not self.folded:
            said.append("(click to fold)")
        ElidedLabel.setToolTip(self, "\n\n".join(said + ([self._tip] if self._tip else [])))


class ProfilePanel(QWidget):
    finished = Signal(dict)   # the service result (run_id, placement summary under "placement")
    overlay_changed = Signal(str)
    backends_known = Signal()  # the runner's hello arrived (or failed): the backend list is final

    def __init__(self, window):
        super().__init__(window)
        self.window_ = window
        self.result: dict | None = None
        self.placement: plc.Placement | None = None
        self.result_model_path: str | None = None   # the model the shown result belongs to
        # other models' last profiles (result, placement), oldest first: shown again when their model reopens
        self._shelf = Shelf()
        self.repeat_why = ""   # why the last repeat_last() was refused
        self._result_text = ""
        self._failed_for: str | None = None   # the model whose failure the status shows (None: none shown)
        self.last_options = None
        self.hello: dict | None = None
        self._hello = TaskSlot(self)
        self._ops_seen = 0
        self._phase = self._last_op = ""
        self.job_pids: dict = {}   # the running profile's processes: {"child", "runner"} (tests read them)
        self._told: dict[tuple, set] = {}  # notices sent as notifications, per model and settings (_notices)
        self.overlay_kind = "time"
        self.legend: Legend | None = None
        self.hot: HotLabels | None = None
        self.run_action = self.cancel_action = None
        self._build()
        window.runner.job_event.connect(self._job_event)
        window.pane.main_view.overlay_changed.connect(self._graph_overlay_changed)
        window.runner.job_finished.connect(self._job_finished)

    # ----- widgets ---------------------------------------------------------------------------------
    def _build(self) -> None:
        lay = QVBoxLayout(self)
        # tight: at 1024x700 each pixel above the tables is one less of their rows (one row showed: a new-user try)
        lay.setContentsMargins(6, 4, 6, 4)
        lay.setSpacing(2)
        row = QHBoxLayout()
        self.engine = QComboBox()
        self.engine.setToolTip("MNN, or ONNX Runtime for an .onnx model (MNN converts an .onnx first)")
        for key, title in ENGINE_TITLES.items():
            self.engine.addItem(title, key)
        self.backend = QComboBox()
        self.backend.setToolTip("Only the backends this runner's MNN really loads can be chosen")
        self.precision = QComboBox()
        self.precision.addItems(list(protocol.PRECISIONS))
        self.memory = QComboBox()
        self.memory.addItems(list(protocol.MEMORY_MODES))
        self.threads = self._spin(1, 256, 1, "threads")
        self.runs = self._spin(1, 10000, 10, "timed runs (median and spread over them)")
        self.warmup = self._spin(0, 1000, 2, "untimed warm-up runs")
        # two rows: in one, the settings and buttons pushed the window wider than a 1024 px screen
        self.settings_rows = [QWidget(), QWidget()]  # folded into `summary` after a run (_fold_settings)
        row = QHBoxLayout(self.settings_rows[0])
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(lay.spacing())  # as tight as the rows laid out in `lay` (a widget's own layout: 6 px)
        for label, w in (("Engine", self.engine), ("Backend", self.backend), ("Precision", self.precision),
                         ("Memory", self.memory)):
            row.addWidget(QLabel(label))
            row.addWidget(w)
        row.addStretch(1)
        lay.addWidget(self.settings_rows[0])
        row = QHBoxLayout(self.settings_rows[1])
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(lay.spacing())
        for label, w in (("Threads", self.threads), ("Runs", self.runs), ("Warm-up", self.warmup)):
            row.addWidget(QLabel(label))
            row.addWidget(w)
        # the settings in one line once a run has been shown: their two rows, the status and the notices left the
        # table 1-2 rows of a ~260 px dock at 1024x700 (a new-user try); Change… shows the rows again
        self.summary = FoldedLine()
        self.summary.hide()
        self.change_button = QToolButton()
        self.change_button.setText("Change\u2026")
        self.change_button.setCheckable(True)
        self.change_button.setToolTip("Show the run's settings (engine, backend, precision, memory, threads, runs); "
                                      "press again to fold them into one line")
        self.change_button.toggled.connect(lambda on: self._fold_settings(not on))
        self.change_button.hide()
        self.run_button = QPushButton("Profile (F5)")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        row = QHBoxLayout()
        row.addWidget(self.settings_rows[1])
        row.addWidget(self.summary, 1)
        row.addWidget(self.change_button)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        row.addStretch(1)
        self._buttons_row = row
        lay.addLayout(row)
        self.engine.currentIndexChanged.connect(self._engine_changed)
        for box in (self.engine, self.backend, self.precision, self.memory):
            box.currentIndexChanged.connect(self._summarise)
        for spin in (self.threads, self.runs, self.warmup):
            spin.valueChanged.connect(self._summarise)

        status = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(False)
        self.progress.hide()
        # one line, the whole in the tooltip (FoldedLine): wrapped, a result's line took two of a short dock
        self.status = FoldedLine(IDLE_TEXT)
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        status.addWidget(self.progress)
        status.addWidget(self.status, 1)
        lay.addLayout(status)
        # the notices in one line too, a click unfolds them (the whole of each in the tooltip)
        self.notice = FoldedLine(unfold_on_click=True)
        self.notice.setObjectName("ProfileNotice")
        self.notice.setStyleSheet("QLabel#ProfileNotice { background: #fff3cd; color: #5c4400; border: 1px solid "
                                  "#e0c36c; border-radius: 4px; padding: 2px 6px; }")
        self.notice.hide()
        lay.addWidget(self.notice)

        tools = QHBoxLayout()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter ops by name, type or node")
        self.filter.setClearButtonEnabled(True)
        self.filter.setMinimumWidth(120)
        tools.addWidget(self.filter, 1)
        tools.addWidget(QLabel("On the graph"))
        self.overlay_box = QComboBox()
        for key, (title, _, _) in OVERLAYS.items():
            self.overlay_box.addItem(title, key)
        self.overlay_box.addItem("Off (op categories)", "off")
        # another dock's overlay is named here too (_graph_overlay_changed): a long name must not widen the dock
        self.overlay_box.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.overlay_box.setMinimumContentsLength(max(len(t) for t, _, _ in OVERLAYS.values()))
        self.overlay_box.currentIndexChanged.connect(self._overlay_chosen)
        tools.addWidget(self.overlay_box)
        self.coverage = QLabel("")
        self.coverage.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # shrinks: never widens the window
        self.coverage.setMinimumWidth(60)
        tools.addWidget(self.coverage, 1)
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.InstantPopup)
        menu = QMenu(self.export_button)
        menu.addAction("Overlay as Model Explorer JSON\u2026", lambda: self._ask_export("overlay"))
        menu.addAction("Chrome trace (Perfetto)\u2026", lambda: self._ask_export("trace"))
        menu.addAction("Ops table as CSV\u2026", lambda: self._ask_export("ops_csv"))
        menu.addAction("Op types as CSV\u2026", lambda: self._ask_export("types_csv"))
        self.export_button.setMenu(menu)
        self.export_button.setEnabled(False)
        tools.addWidget(self.export_button)
        lay.addLayout(tools)

        split = QSplitter(Qt.Horizontal)
        self.tabs = QTabWidget()
        self.ops_model = RowsModel(OP_COLUMNS, self)
        self.ops_proxy = FilterProxy(self)
        self.ops_proxy.setSourceModel(self.ops_model)
        self.ops_view = self._table(self.ops_proxy)
        self.ops_view.clicked.connect(self._row_clicked)
        self.types_model = RowsModel(TYPE_COLUMNS, self)
        self.types_proxy = FilterProxy(self)
        self.types_proxy.setSourceModel(self.types_model)
        self.types_view = self._table(self.types_proxy)
        self.types_view.clicked.connect(self._type_clicked)
        # fixed widths: sizing to contents asks the (Python) model for every cell, 100s of ms for a big model
        for v, widths in ((self.ops_view, (250, 110, 80, 80, 60, 70, 70)), (self.types_view, (160, 50, 80, 60, 70))):
            for col, w in enumerate(widths):
                v.setColumnWidth(col, w)
        # the name column gives way where the dock is narrow: the times stay in view (profile_tables.NameColumnFit)
        self._name_fits = [NameColumnFit(self.ops_view, hi=250, keep=3), NameColumnFit(self.types_view, hi=160, keep=2)]
        # what the graph colours and ranks (#1-#5): time per graph node (profile_tables.node_rows)
        self.nodes_model = RowsModel(NODE_COLUMNS, self)
        self.nodes_proxy = FilterProxy(self)
        self.nodes_proxy.setSourceModel(self.nodes_model)
        self.nodes_view = self._table(self.nodes_proxy)
        self.nodes_view.clicked.connect(self._node_clicked)
        for col, w in enumerate((200, 110, 110, 60, 250)):
            self.nodes_view.setColumnWidth(col, w)
        self._name_fits.append(NameColumnFit(self.nodes_view, hi=200, keep=3))
        self._headers_fitted = False  # the columns widened to their titles, once shown (showEvent)
        self.tabs.addTab(self.ops_view, "Ops")
        self.tabs.addTab(self.nodes_view, "By node (as on the graph)")
        self.tabs.setTabToolTip(1, "Time per graph node, ranked as the graph's #1-#5 callouts rank it: an MNN op's "
                                   "time spread over the ONNX nodes it fused, an inserted op's over the nodes it "
                                   "serves")
        self.tabs.addTab(self.types_view, "By op type")
        self.filter.textChanged.connect(self.ops_proxy.set_needle)
        self.filter.textChanged.connect(self.nodes_proxy.set_needle)
        self.filter.textChanged.connect(self.types_proxy.set_needle)
        split.addWidget(self.tabs)
        self.chart = pg.PlotWidget(background="w")
        self.chart.setMinimumWidth(220)
        self.chart.setMenuEnabled(False)
        self.chart.setMouseEnabled(x=False, y=False)
        self.chart.hideButtons()
        self.chart.setLabel("bottom", "median ms")
        self.chart.getAxis("bottom").enableAutoSIPrefix(False)
        self.chart.getAxis("left").setStyle(tickLength=0)
        split.addWidget(self.chart)
        self._chart_empty("Run \u25b8 Profile (F5): the slowest ops as bars")
        self._bars = 0  # the bars the chart has room for: as many as its height holds (_bars_that_fit)
        self.chart.getViewBox().sigResized.connect(self._chart_resized)
        # the chart names what the table in view names: ops beside the Ops table, nodes beside By node (_chart)
        self.tabs.currentChanged.connect(lambda _: self.result is not None and self._chart())
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([600, 400])  # the tables first: left to the size hints, the chart took 3/5 at 1024 px
        lay.addWidget(split, 1)
        self._engine_changed()

    def heightForWidth(self, width: int) -> int:
        """The least height the dock's contents need at `width`, not their preferred one: the word-wrapped status
        makes the layout height-for-width, and the dock's scroll area then made the contents as tall as they would
        like (~590 px in a 230 px dock): the tables' rows lay below its fold, the Ops table showing one row after a
        first profile at 1024x700 (a new-user try)."""
        return least_height_for_width(self, width)

    def settings_summary(self, how: str | None = None) -> str:
        """The run's settings in one line ("MNN on CPU · precision low · memory normal · 1 thread · 10 runs after 2
        warm-up"): what the folded settings say (ONNX Runtime has no precision or memory setting)."""
        parts = [f"{self.engine.currentText()} on {self.backend.currentData() or self.backend.currentText()}"]
        if self.engine.currentData() == protocol.ENGINE_MNN:
            parts += [f"precision {self.precision.currentText()}", f"memory {self.memory.currentText()}"]
        n = self.threads.value()
        parts += [f"{n} thread{'' if n == 1 else 's'}", f"{self.runs.value()} runs after {self.warmup.value()} warm-up"]
        how = self._converted_with() if how is None else how
        if how:   # (a new user's next Profile timed an fp16-weights conversion; this line said only "MNN on CPU ...")
            parts.append(f"converted with {how}")
        return " \u00b7 ".join(parts)

    def _converted_with(self) -> str:
        """The Convert dock's settings a run on MNN converts the open .onnx with, in its form's words ("" for the
        converter's defaults, ONNX Runtime, an .mnn)."""
        table = getattr(getattr(self.window_, "pane", None), "table", None)
        if self.engine.currentData() != protocol.ENGINE_MNN or table is None or table.format != "onnx":
            return ""
        settings = self.window_.conversion_settings() if hasattr(self.window_, "conversion_settings") else None
        return settings_text(settings)

    def _summarise(self, *_) -> None:
        how = self._converted_with()   # (read once: the Convert dock's form is read to say it)
        # (said as the next run's: above a result, helper 113 read "converted with Weight quant bits: 8" as the
        # settings of the fp32 result under it)
        self.summary.setText("Next run: " + self.settings_summary(how))
        self.summary.setToolTip("The next run's settings: Change\u2026 shows them"
                                + ("; the conversion's are the Convert dock's" if how else ""))
        self.change_button.setText("Fold" if self.summary.isHidden() else "Change\u2026")

    def _fold_settings(self, folded: bool) -> None:
        """The settings' two rows, or (`folded`) one line that says them, with Change… and the run buttons beside
        it: the rows are set before a first run, and in the way of its results after it."""
        for w in self.settings_rows:
            w.setVisible(not folded)
        self.summary.setVisible(folded)
        self._buttons_row.setStretch(self._buttons_row.count() - 1, 0 if folded else 1)  # folded: the line's room
        if self.change_button.isChecked() == folded:
            self.change_button.blockSignals(True)
            self.change_button.setChecked(not folded)
            self.change_button.blockSignals(False)
        self._summarise()

    def _spin(self, lo: int, hi: int, value: int, tip: str) -> QSpinBox:
        s = QSpinBox()
        s.setRange(lo, hi)
        s.setValue(value)
        s.setToolTip(tip)
        return s

    def _table(self, model) -> QTableView:
        v = QTableView()
        v.setModel(model)
        v.setSortingEnabled(True)
        v.setSelectionBehavior(QAbstractItemView.SelectRows)
        v.setSelectionMode(QAbstractItemView.SingleSelection)
        v.setEditTriggers(QAbstractItemView.NoEditTriggers)
        v.verticalHeader().hide()
        v.verticalHeader().setDefaultSectionSize(20)
        v.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
        v.horizontalHeader().setStretchLastSection(True)
        v.setAlternatingRowColors(True)
        v.setTextElideMode(Qt.ElideMiddle)   # long scoped op names keep their start and their end
        v.setWordWrap(False)  # wrapped at a "/", a 20 px row showed "/combine/..." and hid the rest of the name
        return v

    # ----- panel hooks -------------------------------------------------------------------------------
    def add_actions(self, menu) -> None:
        w = self.window_
        self.run_action = add_action(w, menu, "&Profile", self.run, "F5",
                                     tip="Time the open model per operator (settings in the Profile dock)")
        self.cancel_action = add_action(w, menu, "Cancel Profile", self.cancel, "Shift+F5",
                                        tip="Stop the running profile (its runner is gone within a second)")
        self.cancel_action.setEnabled(False)

    def model_changed(self, path, table, tree) -> None:
        self._clear_overlay()
        if path and str(path).lower().endswith(".mnn"):  # only MNN runs an .mnn
            self.engine.blockSignals(True)
            self.engine.setCurrentIndex(self.engine.findData(protocol.ENGINE_MNN))
            self.engine.blockSignals(False)
        # An .onnx keeps the engine chosen (MNN to start with: a first user of an MNN debugger pressed F5 on an .onnx
        # and got ONNX Runtime's times; reopening the file then reset a chosen MNN back to ONNX Runtime).
        self._engine_changed()
        QTimer.singleShot(0, self, self._summarise)   # (after the Convert dock took this model's settings)
        # no model open (File > Close Model): the last profile is another model's too (it read as the open one's)
        other = bool(self.result_model_path and (not path or not _same_file(path, self.result_model_path)))
        if other and path in self._shelf and not self.busy:
            # its own last profile comes back, as the Compare dock's comparison does (it said "Profile of the other
            # model" over one profiled minutes before)
            self._shelve()
            result, placement = self._shelf.take(path)
            self.show_result(result, placement, path, quiet=True)
            other = False
        self.status.set_folded(True)  # (a failure of the model before was shown whole)
        if other:
            self.status.setText(f"Profile of {Path(self.result_model_path).name} (another model): "
                                + ("Run \u25b8 Profile (F5) to profile this one." if path else "no model is open."))
        elif path and self.result_model_path and self._result_text and not self.busy:
            self.status.setText(self._result_text)  # its own model again (it said "another model" meanwhile)
        elif self._failed_for and not (path and _same_file(path, self._failed_for)) and not self.busy:
            # another model's failure, with no profile to show: it still said "Profile failed: ...unsupported_op.onnx:
            # conversion to MNN failed ..." over moe_llm.onnx (helper 101's try)
            self.status.setText(IDLE_TEXT)
            self._failed_for = None
        # its notices ("profiled from Conv.30 ...") belong to its model: out of sight while another one is open
        # (tryout 18 read the rec model's banner over cnn.onnx)
        self.notice.setVisible(bool(self.notice.text()) and not other)
        self._show_coverage(self._view().overlay if self._view() is not None else None)

    def showEvent(self, e) -> None:
        super().showEvent(e)
        self._ask_hello()
        if not self._headers_fitted:  # the style and font are final once shown (the theme is set after the docks)
            self._headers_fitted = True
            for view, fit in zip((self.ops_view, self.types_view, self.nodes_view), self._name_fits):
                fit_to_headers(view)
                fit.fit()

    def shutdown(self) -> None:
        self._hello.shutdown()

    # ----- backends from the runner's hello --------------------------------------------------------
    def _ask_hello(self) -> None:
        if self.hello is not None or self._hello.busy:
            return
        client = self.window_.runner.work

        def ask(cancelled=None):
            cancelled.set_hook(client.cancel)
            # numpy 2 imports numpy.ma on the first np.unique: the canvas's first paint of scope frames (and of
            # an overlay) spent 0.2-0.9 s on it on the UI thread. A pure-Python import: here it costs the UI nothing.
            importlib.import_module("numpy.ma")
            return client.request("hello", {"mnn": True}, timeout=120)

        def done(info):
            self.hello = info
            self._engine_changed()
            self.backends_known.emit()

        def failed(msg):
            self.hello = {"backends": [], "mnn": None, "problems": [msg]}
            self._engine_changed()
            self.backends_known.emit()

        self._hello.start(ask, on_done=done, on_fail=failed, name="profile-hello")

    def backend_choices(self) -> list[tuple[str, bool, str]]:
        """[(backend, usable, why not)] for the chosen engine, from the runner's hello."""
        engine = self.engine.currentData()
        info = self.hello
        if engine == protocol.ENGINE_ORT:
            providers = (info or {}).get("ort_providers") or ["CPUExecutionProvider"]
            names = ["CPU"] + [p.replace("ExecutionProvider", "") for p in providers
                               if p != "CPUExecutionProvider"]
            return [(n, True, "") for n in names]
        if info is None:
            return [(protocol.DEFAULT_BACKEND, True, "")] + [
                (b, False, "asking the runner which backends its MNN loads\u2026")
                for b in (*protocol.MNN_BACKENDS[1:], protocol.BACKEND_AUTO)]
        loads = set(info.get("backends") or [])
        out = []
        for b in protocol.MNN_BACKENDS:
            ok = b in loads or b == protocol.DEFAULT_BACKEND
            why = "" if ok else (f"not in this runner's MNN build ({info.get('mnn') or 'MNN unavailable'}, "
                                 f"{info.get('python', 'its Python')})")
            out.append((b, ok, why))
        out.append((protocol.BACKEND_AUTO, True, "MNN chooses; the result says which one ran"))
        return out

    def _engine_changed(self, *_) -> None:
        path = self.window_.pane.path
        is_mnn = bool(path) and str(path).lower().endswith(".mnn")
        model = self.engine.model()
        if isinstance(model, QStandardItemModel):
            ort = model.item(self.engine.findData(protocol.ENGINE_ORT))
            ort.setEnabled(not is_mnn)
            ort.setToolTip("ONNX Runtime runs .onnx files" if is_mnn else "")
        if is_mnn and self.engine.currentData() == protocol.ENGINE_ORT:
            self.engine.setCurrentIndex(self.engine.findData(protocol.ENGINE_MNN))
            return
        keep = self.backend.currentText()
        self.backend.blockSignals(True)
        self.backend.clear()
        for name, ok, why in self.backend_choices():
            self.backend.addItem(name if ok else f"{name} (unavailable)", name)
            item = self.backend.model().item(self.backend.count() - 1)
            item.setEnabled(ok)
            item.setToolTip(why)
        i = self.backend.findData(keep.split(" ")[0]) if keep else -1
        self.backend.setCurrentIndex(i if i >= 0 and self.backend.model().item(i).isEnabled() else 0)
        self.backend.blockSignals(False)
        mnn = self.engine.currentData() == protocol.ENGINE_MNN
        for w in (self.precision, self.memory):
            w.setEnabled(mnn)
            w.setToolTip("" if mnn else "an MNN setting: ONNX Runtime runs the .onnx model at fp32")

    # ----- settings --------------------------------------------------------------------------------
    def request(self) -> dict | None:
        """The ProfileOptions fields for the open model, the dock's settings and the Inputs dock's inputs."""
        path = self.window_.pane.path
        if not path:
            return None
        engine = self.engine.currentData()
        ort = engine == protocol.ENGINE_ORT
        spec = dict(self.window_.input_spec() or {})
        keys = ("seed", "shapes", "files", "text", "tokenizer", "image", "ranges")
        extra = {}
        if not ort and not str(path).lower().endswith(".mnn"):  # an .onnx on MNN converts with the dock's settings
            conv = self.window_.conversion_settings()
            if conv:
                extra["convert_settings"] = conv
        return dict(model=str(path), engine=engine, backend=self.backend.currentData() or "CPU", **extra,
                    precision=protocol.PRECISION_HIGH if ort else self.precision.currentText(),
                    memory=protocol.MEMORY_NORMAL if ort else self.memory.currentText(),
                    threads=self.threads.value(), runs=self.runs.value(), warmup=self.warmup.value(),
                    **{k: spec[k] for k in keys if spec.get(k) is not None})

    def options(self):
        """ProfileOptions for the open model, the dock's settings and the Inputs dock's inputs (None: no model).
        Imports the profile service (and onnx) on first use."""
        from mnnscope.inspector.profile.service import ProfileOptions
        req = self.request()
        return ProfileOptions(**req) if req is not None else None

    def apply_settings(self, settings: dict) -> None:
        """Set the dock from a run record's settings (engine, backend, precision, memory, threads, runs, warmup)."""
        s = settings or {}
        if s.get("engine"):
            i = self.engine.findData(protocol.engine_name(s["engine"]))
            if i >= 0 and self.engine.model().item(i).isEnabled():
                self.engine.setCurrentIndex(i)
        if s.get("backend"):
            i = self.backend.findData(str(s["backend"]).upper())
            if i >= 0 and self.backend.model().item(i).isEnabled():
                self.backend.setCurrentIndex(i)
        for box, key in ((self.precision, "precision"), (self.memory, "memory")):
            if s.get(key) and box.findText(s[key]) >= 0:
                box.setCurrentIndex(box.findText(s[key]))
        for spin, key in ((self.threads, "threads"), (self.runs, "runs"), (self.warmup, "warmup")):
            if isinstance(s.get(key), int):
                spin.setValue(s[key])

    # ----- running ---------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.window_.runner.job_busy(JOB)

    def run(self, *_args, opts=None) -> bool:
        """Profile the open model with the dock's settings (F5), or with `opts` (ProfileOptions or its fields as
        a dict); False when there is nothing to run or a profile runs already."""
        if opts is None and self.window_.pane.path and self.window_.inputs_refused("Profile"):
            self._refused()
            return False
        opts = opts or self.request()
        if opts is None:
            self.window_.notify("Open a model first: File \u25b8 Open (Ctrl+O)", INFO, "Profile")
            return False
        if self.busy:
            return False
        self.window_.show_dock("Profile")  # at a third of the height: the heat map on the graph is what this is for
        self._ask_hello()
        self.last_options = opts
        table = self.window_.pane.table
        self._ops_seen = 0
        self._phase = self._last_op = ""
        self._set_running(True)
        n = table.node_count if (table is not None and table.format == "mnn") else 0
        self.progress.setRange(0, n)   # 0..0: busy indicator (the converted op count is not known yet)
        self.progress.setValue(0)
        f = opts if isinstance(opts, dict) else vars(opts)
        engine = ENGINE_TITLES.get(f.get("engine"), f.get("engine") or "the file's engine")
        start = f" from {f['from_node']}" if f.get("from_node") else ""
        # an .onnx on MNN is converted with the Convert dock's settings for it: said as it starts (a new user's F5
        # timed a full-int8 conversion left there by "Reconvert with settings…", told only by a banner afterwards)
        how = settings_text(f.get("convert_settings")) if str(f.get("model", "")).lower().endswith(
            ".onnx") and f.get("engine") == protocol.ENGINE_MNN else ""
        self.status.setText(f"Profiling {Path(f['model']).name}{start} on {engine} {f.get('backend')} "
                            f"({f.get('runs')} runs after {f.get('warmup')} warm-up)"
                            + (f", converted with the Convert dock's settings ({how})" if how else "") + "\u2026")
        self.job_pids = {}
        self.window_.runner.run_job(JOB, lambda c, ev, cancelled: run_job(opts, table, c, ev, cancelled,
                                                                          self.job_pids),
                                    on_done=self._done, on_fail=self._failed)
        return True

    def _refused(self) -> None:
        """Said in the dock too: after a refused F5 it still read "Run ▸ Profile (F5) to profile this one" (a new
        user's try), the reason only in a notice over the graph."""
        self.status.set_folded(False)
        self.status.setText("Profile did not start: the Inputs dock refuses its inputs (fix its red line, then F5)."
                            + self._others_below(self.window_.pane.path))

    def _others_below(self, model: str | None) -> str:
        """" The results below are of cnn.onnx (another model)." where the tables hold another model's profile than
        `model`'s (the one a run was for), else "": a new user read cnn.onnx's table under moe_llm.onnx's failure (and
        under its refused F5) as moe_llm's."""
        if not model or self.result is None or not self.result_model_path or _same_file(model, self.result_model_path):
            return ""
        return f" The results below are of {Path(self.result_model_path).name} (another model)."

    def run_from(self, node: str) -> bool:
        """Profile the open .onnx from `node` (its id) on: the model cut there, with the dock's settings and the Inputs
        dock's inputs (right-click > Profile from Here; `mnnscope profile --from NODE`)."""
        if self.window_.pane.path and self.window_.inputs_refused("Profile"):
            self._refused()
            return False
        req = self.request()
        if req is None:
            return False
        req["from_node"] = node
        return self.run(opts=req)

    @staticmethod
    def _model_of(opts) -> str:
        return opts["model"] if isinstance(opts, dict) else opts.model

    def measured_file(self) -> str | None:
        """The .mnn file the last profile ran (None for an .onnx: converted for itself, or run on ONNX Runtime)."""
        opts = self.last_options
        model = (opts.get("model") if isinstance(opts, dict) else getattr(opts, "model", None)) if opts else None
        return str(model) if model and str(model).lower().endswith(".mnn") else None

    def repeat_last(self, settings=None, output: str | None = None) -> bool:
        """Run the last profile again (same options); False when there was none. `settings` (ConvertSettings: the
        Convert dock's, after Reconvert and re-run): an .onnx profiled on MNN is converted with them (the repeat
        used to convert with the defaults again, so a changed setting changed nothing); `repeat_why` says why a
        repeat was refused. `output` (the reconversion's file) is not needed: a profiled .mnn is the file the
        reconversion rewrote (measured_file), an .onnx converts for itself."""
        self.repeat_why = ""
        if self.last_options is None:
            self.repeat_why = "no profile ran yet"
            return False
        opts = self.last_options
        if settings is not None:
            from mnnscope.inspector.profile.service import engine_for
            f = dict(opts if isinstance(opts, dict) else vars(opts))
            model = str(f["model"]).lower()
            if engine_for(f["model"], f.get("engine")) != protocol.ENGINE_MNN:
                self.repeat_why = ("the last profile ran ONNX Runtime, which a conversion does not change: profile "
                                   "on MNN (Engine) first")
                return False
            if not model.endswith(".mnn"):
                f["convert_settings"] = settings.to_json()
                opts = f
        return self.run(opts=opts)

    def cancel(self) -> None:
        if self.busy:
            self.window_.runner.cancel_job(JOB)

    def _set_running(self, on: bool) -> None:
        if on:
            self.status.set_folded(True)  # one line again (a failure is shown whole)
            self._failed_for = None
        focus.set_running(self.run_button, self.cancel_button, on)   # (the focus on Run goes to Cancel, and back)
        if self.run_action is not None:
            self.run_action.setEnabled(not on)
            self.cancel_action.setEnabled(on)
        self.progress.setVisible(on)

    def _job_event(self, name: str, kind: str, payload) -> None:
        if name != JOB or not isinstance(payload, dict) or self.run_button.isEnabled():
            return   # events still queued from a run that was cancelled or ended are dropped
        if kind == "op_begin":   # per-op events come from the first warm-up run (timed runs send none)
            self._ops_seen += 1
            if self.progress.maximum() > 0:
                self.progress.setValue(min(self._ops_seen, self.progress.maximum()))
            self._last_op = f"op {self._ops_seen}: {payload.get('name')} ({payload.get('type', '?')})"
        elif kind == "progress" and payload.get("message"):
            self._phase = str(payload["message"])
        else:
            return
        self.status.setText(" \u00b7 ".join(x for x in (self._phase, self._last_op) if x))

    def _job_finished(self, name: str, ok: bool, msg: str) -> None:
        if name == JOB:
            self._set_running(False)
            if not ok and msg == "cancelled":
                self.status.setText("Profile cancelled.")

    def _failed(self, msg: str) -> None:
        self._set_running(False)
        if "cancelled" in msg:
            self.status.setText("Profile cancelled.")
            return
        model = self._model_of(self.last_options) if self.last_options else ""
        name = Path(model).name
        text = f"Profile of {name} failed: {msg}" if name and name not in msg else f"Profile failed: {msg}"
        self._failed_for = model or None
        self.status.setText(text + self._others_below(model))
        self.status.set_folded(False)  # the failure whole, word-wrapped: one line cut it at "...without …"
        self.window_.notify(f"Profile failed: {msg}", ERROR, Path(self._model_of(self.last_options)).name
                            if self.last_options else "Profile")

    def _shelve(self) -> None:
        """The profile shown put away under its model (gui/shelf.py)."""
        if self.result is not None and self.result_model_path:
            self._shelf.put(self.result_model_path, (self.result, self.placement))

    def _done(self, out: dict) -> None:
        self._set_running(False)
        result, pl = out["result"], out["placement"]
        model = self._model_of(self.last_options) if self.last_options else None
        if model and self.result_model_path and not _same_file(model, self.result_model_path):
            self._shelve()  # another model's profile: shown again when that model reopens
        self._shelf.take(model)  # this model's earlier one: replaced now
        f = (self.last_options if isinstance(self.last_options, dict) else vars(self.last_options)) \
            if self.last_options is not None else {}
        if result.get("converted_from") and f.get("convert_settings") and "convert_settings" not in result:
            # the settings of the conversion it timed, kept with it: its notice names them as the Convert dock does
            # (conversion_notice), also when the result is shown again after another model
            result["convert_settings"] = f["convert_settings"]
        self.show_result(result, pl, model)
        payload = dict(result)
        if pl is not None:
            payload["placement"] = {k: v for k, v in pl.to_json().items() if k not in ("values", "op_nodes")}
        self.finished.emit(payload)

    # ----- results ---------------------------------------------------------------------------------
    def show_result(self, result: dict, placement: plc.Placement | None, model_path: str | None,
                    quiet: bool = False) -> None:
        """The result in the tables, the status, the notices and the overlay; `quiet`: shown again (its model
        reopened), its notices not sent as notifications a second time."""
        self.result, self.placement, self.result_model_path = result, placement, model_path
        t = getattr(self._view(), "table", None)
        types = {(t.names[i] or t.ids[i]): t.op_types[i] for i in range(t.node_count)} if t is not None else None
        self.ops_model.set_rows(op_rows(result, placement.op_nodes if placement else None, types))
        self.types_model.set_rows(type_rows(result))
        self.nodes_model.set_rows(node_rows(placement, t if self._result_on_view() else None)
                                  if placement is not None else [])
        self.nodes_view.sortByColumn(2, Qt.DescendingOrder)
        self.ops_view.sortByColumn(2, Qt.DescendingOrder)
        self.types_view.sortByColumn(2, Qt.DescendingOrder)
        self._chart()
        self.export_button.setEnabled(True)
        total = result.get("total_ms")
        ops_sum = result.get("ops_sum_ms")
        engine = ENGINE_TITLES.get(result.get("engine"), result.get("engine"))
        # ONNX Runtime runs the .onnx at fp32, whatever the greyed-out Precision box holds (tryout 9 read "high")
        asked, ran = result.get("precision_requested"), result.get("precision_effective")
        prec = f", precision {ran}" if result.get("engine") != protocol.ENGINE_ORT else ""
        if prec and asked and ran and asked != ran:  # (tryout 11 read "precision high" on a low run as ignored)
            prec = f", precision {asked} (ran as {ran}: see below)"
        cut = result.get("from_node") or {}
        start = f" from {cut['node']} ({cut['nodes']} of {cut['of']} nodes)" if cut.get("node") else ""
        given = given_inputs(result)   # (helper 105 gave ids.npy and found it named only in the Runs dock's tooltip)
        start += free_sizes_text(result, t) + (f" ({given})" if given else "")
        text = (f"{Path(model_path or result.get('path') or '').name}{start}: {engine} on "
                f"{result.get('backend_used')}, {result.get('threads')} thread(s){prec}: "
                f"{total:.3f} ms per run (median of {result.get('runs')})" if isinstance(total, (int, float))
                else "profile done")
        plain = result.get("plain_ms")
        if result.get("timing_inflated") and isinstance(plain, (int, float)):
            # the per-op runs far slower than the plain runs beside them: the run's own time too (a new user's
            # decoder read 0.83 ms here, /Gemm 80% of it, where the plain runs took 0.167 ms; the notice says why)
            text += f"; {plain:.3f} ms without per-op timing"
        if isinstance(ops_sum, (int, float)):
            text += f", ops sum {ops_sum:.3f} ms"
            short, why = outside_ops_text(total, ops_sum, engine)
            if short:  # (ONNX Runtime: 8.24 ms per run beside 4.45 ms over its ops, unexplained: tryout 18)
                text += f" ({short})"
            self.status.setToolTip(why)
        if result.get("run_id") is not None:
            text += f" \u00b7 saved as run #{result['run_id']}"
        self.status.setText(text)
        self.status.set_folded(True)
        self._result_text = text  # said again when its model comes back after another one
        self._notices(result, notify=not quiet)
        self._coverage_text()
        self.apply_overlay()
        self.change_button.show()
        self._fold_settings(True)  # the results' room: Change… brings the settings back
        QTimer.singleShot(0, self, self._room_for_rows)  # once the tables are laid out with the new rows

    def _room_for_rows(self) -> None:
        """The bottom dock grows until the table shows ROWS_IN_VIEW rows, as far as the window lets a bottom dock
        grow (the graph keeps GRAPH_KEEPS of the height): at 1024x700 the dock came up at a third of the window
        and the Ops table showed one row under the settings, the status and the notice, until the user dragged
        the dock taller (a new-user try)."""
        view = self.tabs.currentWidget()
        # (what the scroll area hides below its fold comes first: the dock grows by it before the table does)
        grow_bottom_dock(self.window_, "Profile", self,
                         ROWS_IN_VIEW * view.verticalHeader().defaultSectionSize() - view.viewport().height())

    def _notices(self, result: dict, notify: bool = True) -> list[str]:
        """Visible notices (in the dock and as notifications): backend requested vs used, precision without
        effect, no per-op times. A notice of the model and its settings (the backend, the precision) is sent as a
        notification once per model and settings: "Precision 'low' had no effect" popped over the graph after every
        run of the same settings (a new-user try); the dock keeps saying it."""
        notes = []
        req, used = str(result.get("backend_requested") or ""), str(result.get("backend_used") or "")
        if req and used and req.upper() not in (used.upper(), protocol.BACKEND_AUTO):
            notes.append(f"Backend {req} was requested but {used} was used"
                         + (f": {result['backend_note']}" if result.get("backend_note") else ""))
        elif req.upper() == protocol.BACKEND_AUTO and used:
            notes.append(f"AUTO backend: MNN ran the model on {used}")
        preq, peff = result.get("precision_requested"), result.get("precision_effective")
        if preq and peff and preq != peff:
            check = result.get("precision_check") or {}
            notes.append(f"Precision '{preq}' had no effect on this CPU: the outputs are bit-identical to "
                         f"precision '{peff}'" + (" (checked against a high-precision run)" if check else ""))
        if result.get("timing_unavailable"):
            notes.append(str(result["timing_unavailable"]))
        # the profile's own warnings too: which conversion was timed ("profiled X, converted from the .onnx with
        # default settings") and why MNN has no per-op times for an RNN and the setting that gives them (tryout 15:
        # only the CLI's JSON said either; two conversions' profiles read alike)
        extra = [conversion_notice(str(w), result) for w in result.get("warnings") or [] if str(w) not in notes]
        if any(n.startswith("Precision '") for n in notes):  # the runner's own words for it: said once (tryout 71)
            extra = [w for w in extra if not (w.startswith("precision '") and "had no effect" in w)]
        subject = Path(self.result_model_path or result.get("path") or "").name
        if notify:
            told = self._told.setdefault(self._settings_key(result), set())
            for n in [n for n in notes if n not in told] + [w for w in extra if not w.startswith("profiled ")]:
                self.window_.notify(n, WARNING, subject)
            told.update(notes)  # said for these settings of this model: the dock says it again, not over the graph
        lines = [("\u2139 " if n.startswith("profiled ") else "\u26a0 ") + n for n in notes + extra]
        total = result.get("total_ms")
        if isinstance(total, (int, float)) and 0 < total < TIME_FLOOR_MS:
            # (the Compare dock and the Runs diff said so, this dock did not: a new user read 0.068 ms at precision
            # low beside 0.031 ms at high as fp16 being twice as slow, helper 107)
            lines.append(f"\u2139 {SHORT_RUN}")
        # the timed conversion without where it is kept, the whole path in the tooltip: at 1024x700 the path of the
        # run folder's copy took a second line of a dock that showed two rows of its table (a new-user try)
        short = [re.sub(r" \(kept at .*\)$", "", x) if x.startswith("\u2139 profiled ") else x for x in lines]
        self.notice.setText("\n".join(short), whole="\n".join(lines))
        self.notice.set_folded(True)  # one line (a click unfolds it)
        self.notice.setVisible(bool(lines))
        return notes + extra

    def _settings_key(self, result: dict) -> tuple:
        """The model and the settings a result's notices are about (not its runs: they change no notice)."""
        model = self.result_model_path or result.get("converted_from") or result.get("path") or ""
        try:
            model = str(Path(model).resolve())
        except OSError:
            pass
        return (model, result.get("engine"), str(result.get("backend_requested") or "").upper(),
                result.get("precision_requested"), result.get("memory_mode"), result.get("threads"),
                json.dumps(result.get("convert_settings"), sort_keys=True, default=str),
                (result.get("from_node") or {}).get("node"))

    def _coverage_text(self) -> None:
        pl = self.placement
        if pl is None or pl.coverage is None:
            self.coverage.setText("no per-op times to place" if pl is not None else "")
            return
        # short: at 1280 px "... on the graph through the conversi" was cut (a new-user try); the how in the tooltip
        self.coverage.setText(f"{pl.coverage * 100:.0f}% of the time placed on the graph")
        tip = (f"placed {pl.coverage * 100:.0f}% of the measured time on the graph"
               + (" through the conversion's node map (each MNN op's time on the ONNX nodes it was converted from)"
                  if pl.how == "node_map" else "") + "\n" + (pl.note or ""))
        if pl.unplaced:
            tip += "Not placed: " + ", ".join(f"{u['name']} ({u['ms']:.3f} ms)" for u in pl.unplaced[:8])
        self.coverage.setToolTip(tip)

    def _chart(self) -> None:
        """The top rows as bars, named as the first column of the table beside them names them: the Ops table's
        op names, the By node table's node names (the chart named an op by its node, "Conv.82", beside the table's
        "Add.217 ... Convolution": a new-user try could not tell they were one op)."""
        self.chart.clear()
        by_node = self.tabs.currentWidget() is self.nodes_view
        model, key = (self.nodes_model, "node") if by_node else (self.ops_model, "op")
        self._bars = self._bars_that_fit()
        rows = sorted(model.rows, key=lambda r: -r["ms"])[:self._bars]
        if not rows:  # (no per-op times: the last model's op names must not stay on the axis, tryout 15)
            self._chart_empty("No per-op times")
            return
        show_axes(self.chart, True)
        n = len(rows)
        ys = list(range(n))
        bars = pg.BarGraphItem(x0=[0] * n, y=ys, height=0.7, width=[r["ms"] for r in rows], brush="#d7191c")
        self.chart.addItem(bars)
        ax = self.chart.getAxis("left")
        # whole where they fit beside the bars (_label_width), elided in the middle only where they do not (all were
        # cut at 26 characters: "output/…__matmul_converted" beside room for the whole name, a new-user try)
        fm = self._tick_metrics()
        title = f"Top {n} nodes by time on the graph" if by_node else f"Top {n} ops by median time"
        room = self._label_room = self._label_width(title)
        labels = bar_labels(rows, key, fits=lambda t: fm.horizontalAdvance(t) <= room)
        ax.setTicks([list(enumerate(labels))])
        # as wide as its longest label: pyqtgraph's own width cut their first characters at the chart's left edge
        # (".../layers.1/..." read "layers.1/..." with "…/" under the edge: a new-user try at 1024x700)
        ax.setWidth(max(fm.horizontalAdvance(t) for t in labels) + 12)
        self.chart.getViewBox().invertY(True)
        self.chart.setYRange(-0.5, n - 0.5, padding=0)
        self.chart.setXRange(0, max(r["ms"] for r in rows) * 1.05, padding=0)
        self.chart.setLabel("bottom", "ms on the graph" if by_node else "median ms")
        self._chart_title(title)

    def _chart_empty(self, title: str) -> None:
        """A chart with no bars: its title alone, no axes (empty, it drew a 0-1 frame with ticks 0.2 ... 1.0 and
        "median ms" under nothing: a new-user try)."""
        self.chart.getAxis("left").setTicks([[]])   # (the last model's op names must not come back with the axis)
        show_axes(self.chart, False)
        self._chart_title(title)
        self._label_room = self._label_width(title)

    def _chart_title(self, text: str | None = None) -> None:
        """The chart's title (`text`, else the last one) elided to the chart's width, whole in the tooltip: a pyqtgraph
        title is never narrower than its text, and "Top 3 nodes by time on the graph" in a 400 px chart at 1024x700
        widened the plot past the dock, its bars and axis cut (a new-user try)."""
        if text is not None:
            self._title_text = text
            self.chart.setToolTip(text)
        text = getattr(self, "_title_text", "")
        room = title_room(self.chart, margin=28)
        label = self.chart.plotItem.titleLabel
        font = QFont(self.chart.font())
        font.setPointSizeF(CHART_TITLE_PT)
        fm = QFontMetrics(font)
        # its short form before a cut one ("Top 15 nodes by time on the gra..." at 1024x700: helper 110)
        short = text.replace(" on the graph", "")
        fitted = short if fm.horizontalAdvance(text) > max(40, room) >= fm.horizontalAdvance(short) else \
            fm.elidedText(text, Qt.ElideRight, max(40, room))
        if fitted != getattr(label, "text", None):
            self.chart.setTitle(fitted, size=f"{CHART_TITLE_PT}pt")

    def _tick_metrics(self) -> QFontMetrics:
        return QFontMetrics(self.chart.getAxis("left").style.get("tickFont") or self.chart.font())

    def _label_width(self, title: str) -> int:
        """The px the bar names may take: the chart's width less the bars' column, LABEL_SHARE of it at least and
        room for the chart's `title` over it (pyqtgraph centres it there: "Top 5 ops by me…" beside names that took
        the room)."""
        font = QFont(self.chart.font())
        font.setPointSizeF(CHART_TITLE_PT)
        width = self.chart.viewport().width()
        title_px = QFontMetrics(font).horizontalAdvance(title) + 28  # (title_room's margin)
        return max(60, min(int(width * LABEL_SHARE), width - title_px) - 12)  # (the axis's 12 px beside its names)

    def _bars_that_fit(self) -> int:
        """As many bars as the chart's height gives a name's height and BAR_GAP each (at most TOP_BARS, at least one):
        a fixed 16 px a bar, at least 3, against the chart's real height printed the names over each other in a
        short dock (a new-user try at 1024x700)."""
        height = self.chart.getViewBox().height()
        row = 0.8 * self._tick_metrics().height() + BAR_GAP  # pyqtgraph lays a name out 0.8 of the font's line high
        return TOP_BARS if height <= 0 else max(1, min(TOP_BARS, int(height // row)))

    def _chart_resized(self, *_) -> None:
        """Another size (the dock dragged, the window resized): as many bars as now fit, their names fitted to the
        width."""
        if self.result is not None and self._bars and (self._bars_that_fit() != self._bars
                                                       or self._label_width(getattr(self, "_title_text", ""))
                                                       != getattr(self, "_label_room", None)):
            self._chart()
        else:
            self._chart_title()

    # ----- overlay on the graph ----------------------------------------------------------------------
    def _view(self):
        return self.window_.pane.main_view

    def _result_on_view(self) -> bool:
        p = self.window_.pane.path
        return bool(p and self.result_model_path and _same_file(p, self.result_model_path))

    def overlay(self, kind: str | None = None) -> Overlay | None:
        """The overlay of `kind` (time, share, throughput) for the shown result, or None."""
        kind = kind or self.overlay_kind
        if self.placement is None or self.result is None or kind not in OVERLAYS:
            return None
        values = plc.overlay_values(kind, self.placement, self.result)
        if not values:
            return None
        table = self.window_.pane.table
        cut = set((self.result.get("from_node") or {}).get("ids") or [])
        if kind != "throughput" and table is not None and self._result_on_view():
            # a node no measured time landed on (folded, eliminated, not run) is drawn cold, not in its op colour;
            # one before a profile's cut was not measured at all: grey
            values = {**{nid: 0.0 for nid in table.ids if not cut or nid in cut}, **values}
        title, unit, ramp = OVERLAYS[kind]
        ov = Overlay.from_values(f"profile {kind}", values, ramp=ramp, unit=unit,
                                 aggregate="max" if kind == "throughput" else "sum")
        ov.meta = {"profile": kind, "coverage": self.placement.coverage,
                   "backend_used": self.result.get("backend_used"), "run_id": self.result.get("run_id")}
        if cut and table is not None and self._result_on_view():
            ov.muted = frozenset(nid for nid in table.ids if nid not in cut and nid not in values)
            ov.meta["muted_why"] = f"not measured: the profile ran from {self.result['from_node'].get('node')} on"
        return ov

    def set_overlay_kind(self, kind: str) -> None:
        self.overlay_kind = kind
        i = self.overlay_box.findData(kind)
        if i >= 0 and i != self.overlay_box.currentIndex():
            self.overlay_box.setCurrentIndex(i)
            return
        self.apply_overlay()

    def _overlay_chosen(self, _index: int) -> None:
        kind = self.overlay_box.currentData()
        if kind != OTHER:
            self.set_overlay_kind(kind)

    def _show_coverage(self, ov) -> None:
        """"placed 98% of the measured time on the graph" is about the profile's colours on its own model's graph:
        hidden under another dock's overlay (`ov`, the graph's) and while another model is open (tryout 2026-12-04
        read it over another model, whose rows then placed nothing)."""
        self.coverage.setVisible(not _foreign(ov) and (self.result_model_path is None or self._result_on_view()))

    def _graph_overlay_changed(self, ov) -> None:
        """The "On the graph" box names what the graph shows: another dock's overlay (Compare's errors, a statistic)
        by its name, else this dock's choice (a tester read "Time per node" over the compare errors)."""
        box = self.overlay_box
        other = _foreign(ov)
        self._show_coverage(ov)
        i = box.findData(OTHER)
        box.blockSignals(True)
        if other:
            text = str(ov.name)
            if i < 0:
                box.addItem(text, OTHER)
                i = box.count() - 1
            box.setItemText(i, text)
            box.setItemData(i, f"{text}: shown by another dock; choose an entry above to show the profile "
                            "instead", Qt.ToolTipRole)
            box.setCurrentIndex(i)
        else:
            if i >= 0:
                box.removeItem(i)
            box.setCurrentIndex(max(0, box.findData(self.overlay_kind)))
        box.blockSignals(False)

    def apply_overlay(self) -> None:
        view = self._view()
        ov = self.overlay() if self._result_on_view() else None
        if ov is None:
            self._clear_overlay()
            return
        view.set_overlay(ov)
        title, unit, _ = OVERLAYS[self.overlay_kind]
        if self.legend is None or self.legend.view is not view:
            self.legend, self.hot = Legend(view), HotLabels(view)
        self.legend.title, self.legend.unit = title, unit
        self.legend.owner = self.hot.owner = view.overlay
        pl = self.placement
        self.legend.note = (f"placed {pl.coverage * 100:.0f}% of the measured time" if pl and pl.coverage is not None
                            else "")
        self.hot.unit = unit
        self.hot.total = pl.measured_ms if pl else None
        self.hot._cache_key = None
        for w in (self.legend, self.hot):
            w.bring_up()
        self.overlay_changed.emit(self.overlay_kind)

    def restore_overlay(self) -> None:
        """Its model open again (the window asks the dock whose colours it showed last): the colours come back."""
        if self.result is not None and self._result_on_view():
            self.apply_overlay()

    def _clear_overlay(self) -> None:
        view = self._view()
        if view.overlay is not None and str(view.overlay.name).startswith("profile"):
            view.set_overlay(None)
        for w in (self.legend, self.hot):
            if w is not None:
                w.hide()
        self._graph_overlay_changed(view.overlay)  # another dock's overlay stays: the box says so

    # ----- navigation ------------------------------------------------------------------------------
    def node_of_op(self, op_name: str) -> int | None:
        """The viewed graph's node index an op's time landed on (the heaviest of a fused region)."""
        if self.placement is None or not self._result_on_view():
            return None
        nodes = self.placement.op_nodes.get(op_name) or []
        table = self.window_.pane.table
        if not nodes or table is None:
            return None
        best = max(nodes, key=lambda n: self.placement.values.get(n, 0.0))
        return table.index_of(best)

    def _row_clicked(self, index) -> None:
        row = self.ops_model.rows[self.ops_proxy.mapToSource(index).row()]
        self.reveal_op(str(row["op"]))

    def reveal_op(self, op_name: str) -> bool:
        i = self.node_of_op(op_name)
        if i is None:
            if self.result_model_path and not self._result_on_view():
                self.window_.notify(f"op '{op_name}' is in the profile of {Path(self.result_model_path).name}, "
                                    "not of the open model: open that model to see it on its graph", INFO, "Profile")
            else:
                self.window_.notify(f"op '{op_name}' is not placed on a node of this graph", INFO, "Profile")
            return False
        self._view().reveal(i)
        return True

    def _node_clicked(self, index) -> None:
        row = self.nodes_model.rows[self.nodes_proxy.mapToSource(index).row()]
        t = getattr(self._view(), "table", None)
        i = t.index_of(str(row["node"])) if t is not None and self._result_on_view() else None
        if i is None:
            self.window_.notify(f"node '{row['node']}' is not on the open model's graph", INFO, "Profile")
            return
        self._view().reveal(i)

    def _type_clicked(self, index) -> None:
        row = self.types_model.rows[self.types_proxy.mapToSource(index).row()]
        self.filter.setText(str(row["type"]))
        self.tabs.setCurrentWidget(self.ops_view)

    # ----- exports ---------------------------------------------------------------------------------
    def export(self, what: str, path: str) -> str:
        """Write `what` (overlay | trace | ops_csv | types_csv) to `path`; returns the path."""
        if self.result is None:
            raise ValueError("no profile to export")
        if what == "overlay":
            ov = self.overlay()
            if ov is None:
                raise ValueError("no overlay to export (no per-op times placed on this graph)")
            with open(path, "w") as f:
                json.dump(ov.to_model_explorer(), f, indent=1, allow_nan=False, default=_finite)
        elif what == "trace":
            from mnnscope.inspector.profile.service import write_trace
            write_trace(self.result, path)
        elif what == "ops_csv":
            self.ops_model.to_csv(path)
        elif what == "types_csv":
            self.types_model.to_csv(path)
        else:
            raise ValueError(f"unknown export '{what}'")
        return path

    def _ask_export(self, what: str) -> None:
        stem = Path(self.result_model_path or "profile").stem
        suggest = {"overlay": (f"{stem}.profile.me.json", "JSON (*.json)"),
                   "trace": (f"{stem}.trace.json", "Chrome trace (*.json)"),
                   "ops_csv": (f"{stem}.ops.csv", "CSV (*.csv)"),
                   "types_csv": (f"{stem}.optypes.csv", "CSV (*.csv)")}[what]
        near = str(Path(self.result_model_path).parent) if self.result_model_path else None
        path = filedialog.ask_save_file(self, "Export", suggest[0], suggest[1], near=near)
        if not path:
            return
        try:
            self.export(what, path)
        except (OSError, ValueError) as e:
            self.window_.notify(f"Export failed: {e}", ERROR, path)
            return
        self.window_.notify(f"Exported {Path(path).name}", INFO, path)


def _same_file(a, b) -> bool:
    """One file under two spellings (relative, through a link)."""
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return str(a) == str(b)


def outside_ops_text(total, ops_sum, engine: str) -> tuple[str, str]:
    """Where a run's time beyond its ops' sum went, when that is a fifth of the run or more: (a few words for the
    status line, the explanation for its tooltip); ("", "") otherwise."""
    if not isinstance(total, (int, float)) or not isinstance(ops_sum, (int, float)) or total <= 0:
        return "", ""
    rest = total - ops_sum
    if rest < 0.2 * total:
        return "", ""
    return (f"{rest / total * 100:.0f}% of the run outside the timed ops",
            f"{rest:.3f} ms of the {total:.3f} ms per run are not in any op's time: {engine}'s own work between the "
            "ops (copies of inputs and outputs, memory planning, thread hand-offs) and the per-op timing itself")


def conversion_notice(warning: str, result: dict) -> str:
    """The profile's "profiled a fresh conversion of X with the given settings (fp16=True)" with the settings named
    as the Convert dock's form names them, "with the Convert dock's settings (fp16 weights)" (convertform
    settings_text, as the run's status says them as it starts): the inspector's key=value words are its CLI's, not
    to be found in the form (a new-user try). Other warnings, and a result without its `convert_settings`, as
    they are."""
    how = result.get("converted_with")
    said = f"with the given settings ({how})"
    if not how or not warning.startswith("profiled a fresh conversion") or said not in warning:
        return warning
    words = settings_text(result.get("convert_settings"))
    return warning.replace(said, f"with the Convert dock's settings ({words})", 1) if words else warning


def bar_labels(rows: list[dict], key: str = "node", fits=None) -> list[str]:
    """Labels of the chart's bars: the node each op landed on (else the op's name), or with `key` "op" the op's own
    name, with as many of its last path parts as it takes to tell it from the others (two bars read "conv1/Conv"
    for /conv1/Conv and /layer1/conv1/Conv, tryout 18), two at least. One that does not fit (`fits`, a test of a
    label: the chart's room in px; without it 26 characters) keeps its first part, which tells it apart, and as
    much of its end as fits, the middle elided (elide_middle)."""
    fits = fits or (lambda text: len(text) <= 26)
    if key == "op":
        names = [str(r.get("op") or "") for r in rows]
    else:
        names = [str(r.get("node") or r.get("op") or "").split(" +")[0] for r in rows]
    parts = [[p for p in name.split("/") if p] or [name] for name in names]
    keep = [2] * len(rows)
    for _ in range(8):
        tails = ["/".join(ps[-k:]) for ps, k in zip(parts, keep)]
        same = {t for t in tails if tails.count(t) > 1}
        if not same:
            break
        keep = [k + 1 if t in same else k for t, k in zip(tails, keep)]
    out = []
    for ps, k in zip(parts, keep):
        text = "/".join(ps[-k:])
        out.append(text if fits(text) else elide_middle(text, ps[-min(k, len(ps))] if len(ps) > 1 else "", fits))
    return out


def elide_middle(text: str, head: str, fits) -> str:
    """`text` that does not fit (`fits`), its middle elided: its first path part `head` (its first 12 characters) and
    as much of its end as fits ("layers.11/…q_proj/MatMul"); a name of one part, or where the head leaves no room,
    both of its ends (an MNN op's "X_output_0__matmul_converted")."""
    if head:
        lead = f"{head[:12]}/\u2026"
        for n in range(len(text) - len(head) - 2, 3, -1):
            if fits(lead + text[-n:]):
                return lead + text[-n:]
    for n in range(len(text) - 1, 1, -1):  # both ends, a little more of the end (it names the kind of op)
        a = n * 12 // 25
        if fits(f"{text[:a]}\u2026{text[-(n - a):]}"):
            return f"{text[:a]}\u2026{text[-(n - a):]}"
    return f"{text[:1]}\u2026{text[-1:]}"


def _finite(v):
    return None if isinstance(v, float) and not math.isfinite(v) else str(v)
