"""The main window: graph tabs (and an optional linked second model), Properties and the coming docks,
menus, status bar, notifications. Models are parsed in a child process and shapes come from the runner,
so neither ever holds the UI thread."""
from __future__ import annotations

import filecmp
import glob
import os
import time
from pathlib import Path

from PySide6.QtCore import QByteArray, QEvent, QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (QApplication, QDockWidget, QFrame, QLabel, QMainWindow, QMessageBox,
                               QProgressBar, QScrollArea, QSplitter, QToolButton, QWidget, QVBoxLayout)

from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.formats.adapter import shapes_note
from mnnscope.inspector.formats.loadproc import load_table
from mnnscope.inspector.formats.registry import adapters, detect, extensions
from mnnscope.inspector.model.dimexpr import eval_dim
from mnnscope.inspector.model.overlay import Overlay
from mnnscope.inspector.model.scopes import ScopeTree

from mnnscope.gui import filedialog, gcguard
from mnnscope.gui import settings as cfg
from mnnscope.gui.graphview import GraphView
from mnnscope.gui.linking import LINKED, NOT_LINKED, Linker
from mnnscope.gui.menus import follow_enabled, icon, make_actions, sync_side_by_side
from mnnscope.gui.noticelist import NoticesButton
from mnnscope.gui.notifications import NotificationArea
from mnnscope.gui.notify import ERROR, INFO, WARNING, NotificationSink
from mnnscope.gui.pane import Pane, resolve_expand
from mnnscope.gui.panels import PANELS, panel_class
from mnnscope.gui.panels.coming import ComingPanel
from mnnscope.gui.panels.properties import PropertiesPanel
from mnnscope.gui.plotrelease import release_plots
from mnnscope.gui.runnerhost import RunnerHost
from mnnscope.gui.tasks import TaskSlot, live_tasks
from mnnscope.gui.theme import apply_theme, palette
from mnnscope.gui.wheelguard import WheelGuard
from mnnscope.gui.wraplabel import ElidedLine, wrap_all_tooltips

BOTTOM_DOCK = 0.36  # the share of the window's height a bottom dock comes up with (the graph keeps the rest)
GRAPH_KEEPS = 0.5  # the least share of the height beside a bottom dock that the graph keeps when the window resizes


class _DockArea(QScrollArea):
    """A bottom dock's scroll area. Its size hint asks for at most BOTTOM_DOCK of the window's height: a dock
    shown by View > Panels (Qt sizes it by its hint) came up at ~520 of 950 px, which left the graph ~90 px once
    the window went to 1024x700 (tryout 8). The contents scroll instead."""

    def __init__(self, window: QMainWindow, parent=None):
        super().__init__(parent)
        self._window = window

    def sizeHint(self) -> QSize:
        s = super().sizeHint()
        return QSize(s.width(), min(s.height(), max(120, int(self._window.height() * BOTTOM_DOCK))))

    def focusNextPrevChild(self, forward: bool) -> bool:
        """A focused button that a run disables hands the focus on (Qt moves it to the next widget), and the scroll
        area scrolled to that widget: after "Run statistics" the dock jumped to its table, its buttons and tabs out
        of view (tryout 11). The view stays where it was unless the user moved the focus (Tab)."""
        before = QApplication.focusWidget()
        bars = (self.verticalScrollBar(), self.horizontalScrollBar())
        kept = [b.value() for b in bars]
        moved = super().focusNextPrevChild(forward)
        if before is not None and not before.isEnabled():
            for b, v in zip(bars, kept):
                b.setValue(v)
        return moved


def file_filter() -> str:
    """The open dialogs' filter, one entry per file format in the registry (folder formats open by path)."""
    def globs(exts) -> str:
        return " ".join(f"*{e}" for e in exts)
    files = [a for a in adapters() if a.extensions]
    each = [f"{a.description or a.name} ({globs(a.extensions)})" for a in files]
    return ";;".join([f"Models ({globs(extensions())})", *each, "All files (*)"])


def _load(path: str, job=None, cancelled=None):
    table = load_table(path, job_sink=lambda j: cancelled.set_hook(j.cancel), job=job)
    return table, ScopeTree(table, io_nodes=True)


def same_bytes(a: str, b: str) -> bool:
    """Whether two files hold the same bytes (sizes first: two conversions of a model rarely match in size)."""
    return os.path.getsize(a) == os.path.getsize(b) and filecmp.cmp(a, b, shallow=False)


class MainWindow(QMainWindow):
    model_loaded = Signal(str)
    model_closed = Signal(str)  # File > Close Model: the name of the model put away
    load_failed = Signal(str)
    shapes_loaded = Signal(int)
    shapes_failed = Signal(str)
    expand_failed = Signal(str)
    panes_changed = Signal()  # a second pane opened, closed or given another model

    def __init__(self, theme: str | None = None, runner_python: str | None = None, persist: bool = True):
        super().__init__()
        gcguard.install(QApplication.instance())  # reference cycles are collected on this thread only (gcguard)
        wrap_all_tooltips()  # tooltips in lines that fit a screen, wherever they are set
        self.persist = persist  # headless renders neither read nor write the user's window settings
        # working files a dock opens (a comparison's conversions, in folders removed later): not recent files (one
        # listed there gave "no such file" once its comparison's folder was gone: tryout 18)
        self.not_recent: set[str] = set()
        self.geometry_restored = False
        self.shapes_at: tuple = (None, {})  # (the main table, {input: the sizes its shapes were computed at})
        self.shapes_at_second: tuple = (None, {})  # the same for the pane beside
        # (table, the input sizes, {symbolic dim: size}) of the main model at the Inputs dock's sizes: shape inference
        # run again with the inputs fixed (names made up for sizes it could not express get their numbers); and the
        # (table, sizes) of the request in flight, if any
        self.dims_at: tuple = (None, None, {})
        self._dims_asked: tuple | None = None
        self._dims_seen: tuple = (None, set())  # ((table id, shapes known), its distinct symbolic dims)
        # tab titles for files whose names say nothing (a comparison's conversions are all "model.mnn")
        self.model_titles: dict[str, str] = {}
        self._props_width: int | None = None  # the Properties width _fit_docks last set (None: never)
        self.setWindowTitle("mnnscope")
        self.setWindowIcon(icon("mnnscope"))
        self.setAcceptDrops(True)
        self.theme = theme or cfg.theme()
        self.sink = NotificationSink()
        adapters()  # import the format adapters now: the first Open would spend ~150 ms on it on the UI thread
        self.runner = RunnerHost(runner_python, self)
        self._loads = TaskSlot(self)
        self._loads2 = TaskSlot(self)   # the side-by-side model loads independently
        self._load_started = 0.0
        self.timings: dict = {}
        self.pane = Pane(self)
        # the dock whose colours each model showed last (a model opened again gets them back: tryout 9 found its
        # compare and profile results back in their docks, the graph grey)
        self._overlay_owner: dict[str, str] = {}
        self.pane.main_view.overlay_changed.connect(self._note_overlay_owner)
        # Properties' "on the graph" line follows the colours (tryouts 10, 11: it kept another dock's value, "int8:
        # error introduced..." after a profile, until the node was clicked again)
        self.pane.main_view.overlay_changed.connect(self._overlay_shown)
        self.pane.main_view.overlay_changed.connect(self._mirror_overlay)
        self.second: Pane | None = None
        self.linker: Linker | None = None
        self._second_loaded_at = 0.0  # when the side-by-side model arrived (a newer main model closes it)
        central = QWidget(self)
        lay = QVBoxLayout(central)
        lay.setContentsMargins(0, 0, 0, 0)
        self.split = QSplitter(Qt.Horizontal, central)
        # a drawn divider between the two panes: without one, nodes cut at the edge of the left pane looked overlapped
        # with the right pane's ("Constan|rted", a new-user try); the theme colours it (QSplitter::handle)
        self.split.setHandleWidth(4)
        self.split.addWidget(self.pane)
        lay.addWidget(self.split)
        self.setCentralWidget(central)
        # over the graphs, not in the splitter (a splitter adopts every child widget as a pane)
        self.notes = NotificationArea(central)
        self._inputs_notices: list = []   # the notices of runs the Inputs dock refused (they leave once it is fixed)
        self.sink.subscribe(self._stamp_model)  # before the cards are made of it
        self.sink.subscribe(self.notes.show_notification)
        # a notice about a node (a failed conversion's, with "Show node") or grown by "more" must not cover the node
        # it is about: at 1024x700 it lay over Hardmax (tryout 16)
        self.notes.placed.connect(lambda rect: self._clear_of_notices(rect))
        self.properties = PropertiesPanel(self)
        # an .mnn's inputs with free dims: the sizes MNN computed its shapes at ("1x?" beside edges of 1x8)
        # (the pane beside too: its .mnn read "shape 1x3x48x?" over edges of 1x3x48x64, a new-user try)
        self.properties.shapes_at_source = lambda: next(
            (sizes for table, sizes in (self.shapes_at, self.shapes_at_second) if table is self.properties.table), {})
        self.properties.navigate_to.connect(lambda op: self.view.reveal(op))
        self.properties.show_dock.connect(lambda name: self.show_dock(name) if name in self.docks else None)
        self.properties.open_subgraph.connect(lambda node, attr: self.pane.open_subgraph(self.view, node, attr))
        self.docks: dict[str, QDockWidget] = {}
        self.panels: dict = {}  # dock name -> its panel, for the docks that are built (gui/panels/__init__.py)
        self._make_docks()
        self._make_status()
        make_actions(self)
        if "Compare" in self.panels and "Cancel Compare" in self.actions_by_name:
            # the dock enables its Cancel button exactly while a comparison runs (its _enable): the menu follows it
            follow_enabled(self.panels["Compare"].cancel_btn, self.actions_by_name["Cancel Compare"])
        if "Log" in self.panels and "Convert" in self.panels:  # the whole converter log, streamed or not
            self.panels["Log"].watch_convert(self.panels["Convert"])
        if "Convert" in self.panels and "Compare" in self.panels:  # an int8 conversion ticks int8 for the comparison
            self.panels["Convert"].converted.connect(self.panels["Compare"].conversion_made)
        if "Convert" in self.panels and "Profile" in self.panels:  # the folded Profile line names the conversion's
            self.panels["Convert"].form.changed.connect(self.panels["Profile"]._summarise)
        if "Inputs" in self.panels:  # the summary's FLOPs are counted at the Inputs dock's sizes, and follow them
            inputs = self.panels["Inputs"]
            self.properties.dims_source = lambda: self.dim_values_of(self.properties.table)
            inputs.changed.connect(self.properties.sizes_changed)
            # labels cut short show the number a long symbolic dim is at these sizes ("?x24x24x?" read otherwise)
            inputs.changed.connect(self._push_dim_values)
            inputs.changed.connect(self._inputs_fixed)
            self.model_loaded.connect(lambda _: QTimer.singleShot(0, self, self._push_dim_values))
        self.shortcuts_dialog = None
        self.guide_dialog = None
        self.model_loaded.connect(lambda _: self.actions_by_name["Convert to MNN"].setEnabled(
            self.pane.table is not None and self.pane.table.format == "onnx"))
        self.runner.state_changed.connect(lambda s: self.runner_label.setText(f"runner: {s}"))
        self.runner.backend_changed.connect(lambda b: self.backend_label.setText(b))
        if persist:
            self._restore_settings()
        apply_theme(QApplication.instance(), self.theme)

    # ----- construction -----------------------------------------------------------------------------
    def _make_docks(self) -> None:
        self.wheel_guard = WheelGuard(self)  # settings change by a click, never by scrolling past them
        d = QDockWidget("Properties", self)
        d.setObjectName("dock_properties")
        d.setWidget(self.properties)
        self.addDockWidget(Qt.RightDockWidgetArea, d)
        self.docks["Properties"] = d
        first = None
        for name in PANELS:
            cls = panel_class(name)
            dock = QDockWidget(name if cls is not None else f"{name} (coming)", self)
            dock.setObjectName(f"dock_{name.lower()}")
            if cls is not None:
                panel = cls(self)
                self.panels[name] = panel
            else:
                panel = ComingPanel(name, dock)
            # in a scroll area: a dock can be made as short as the user wants (at 1024x700 the Compare dock's own
            # minimum, with a real font, left the graph ~110 px), its contents scrolling instead
            area = _DockArea(self, dock)
            area.setWidgetResizable(True)
            area.setFrameShape(QFrame.NoFrame)
            area.setWidget(panel)
            dock.setWidget(area)
            self.addDockWidget(Qt.BottomDockWidgetArea, dock)
            if first is None:
                first = dock
            else:
                self.tabifyDockWidget(first, dock)
            dock.hide()
            # shown by any path (View > Panels, a tab, show_dock): Qt restores the height it had, which may be
            # more than the graph can spare in the window's present size
            dock.visibilityChanged.connect(lambda on: on and QTimer.singleShot(0, self, self._fit_bottom_dock))
            self.docks[name] = dock
            self.wheel_guard.guard(panel)
        self.resizeDocks([d], [380], Qt.Horizontal)

    def _make_status(self) -> None:
        sb = self.statusBar()
        self.model_label = ElidedLine()
        self.model_label.setText("no model")
        self.activity_label = QLabel("")
        self.runner_label = QLabel("runner: not started")
        self.backend_label = QLabel("backend: CPU")
        self.zoom_label = QLabel("")
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(120)
        self.progress.hide()
        self.cancel_btn = QToolButton()
        self.cancel_btn.setText("Cancel")
        self.cancel_btn.clicked.connect(self.cancel_load)
        self.cancel_btn.hide()
        self.notices = NoticesButton(self)
        self.sink.subscribe(self.notices.arrived)
        self.notes.unread.connect(self.notices.left_unread)
        sb.addWidget(self.model_label, 1)
        for w in (self.activity_label, self.progress, self.cancel_btn, self.notices, self.zoom_label,
                  self.runner_label, self.backend_label):
            sb.addPermanentWidget(w)

    # ----- settings ----------------------------------------------------------------------------------
    def _restore_settings(self) -> None:
        s = cfg.settings()
        geo = s.value("geometry")
        if isinstance(geo, QByteArray):
            self.geometry_restored = self.restoreGeometry(geo)
        state = s.value("window_state")
        if isinstance(state, QByteArray):
            self.restoreState(state)
            # a Properties width _fit_docks set (not one the user dragged) stays its to grow back: a state saved at
            # 1024x700 left Properties at 190 px in a 1500x950 window, one word per line
            try:
                self._props_width = int(s.value("properties_width_fitted") or 0) or None
            except (TypeError, ValueError):
                self._props_width = None
        mm = s.value("minimap", "true")
        self.set_minimap(str(mm).lower() != "false")

    def _save_settings(self) -> None:
        s = cfg.settings()
        s.setValue("geometry", self.saveGeometry())
        s.setValue("window_state", self.saveState())
        d = self.docks["Properties"]
        ours = self._props_width is not None and abs(d.width() - self._props_width) <= 2
        s.setValue("properties_width_fitted", d.width() if ours else 0)
        s.setValue("minimap", "true" if GraphView.minimap_enabled else "false")
        cfg.set_theme(self.theme)
        s.sync()

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        items = cfg.recent_files()
        for p in items:
            self.recent_menu.addAction(p, lambda p=p: self.user_open(p))
        self.recent_menu.setEnabled(bool(items))

    # ----- views -------------------------------------------------------------------------------------
    @property
    def view(self) -> GraphView:
        w = self.focusWidget()
        if self.second is not None and w is not None and self.second.isAncestorOf(w):
            return self.second.view
        return self.pane.view

    def all_views(self) -> list[GraphView]:
        return self.pane.views() + (self.second.views() if self.second else [])

    def set_theme(self, name: str) -> None:
        self.theme = name
        apply_theme(QApplication.instance(), name)
        for v in self.all_views():
            v.set_palette(palette(name))
        cfg.set_theme(name)

    def toggle_minimap(self, on: bool) -> None:
        self.set_minimap(on)

    def set_minimap(self, on: bool) -> None:
        GraphView.minimap_enabled = bool(on)
        for v in self.all_views():
            v.minimap.setVisible(False)
            v.minimap._place()
        a = getattr(self, "actions_by_name", {}).get("Minimap")
        if a is not None:
            a.setChecked(bool(on))

    def notify(self, message: str, severity: str = ERROR, subject: str = "", hint: str = "") -> None:
        self.sink.notify(message, severity, subject, hint)

    def _stamp_model(self, n) -> None:
        """A notice about a model open in a pane remembers that model's path: a file of the same name opened later,
        elsewhere, is another model (dismiss_not_about)."""
        for pane in (self.pane, self.second):
            if pane is not None and pane.path and n.subject == Path(pane.path).name:
                n.model = pane.path
                return

    # ----- opening models ----------------------------------------------------------------------------
    def open_start(self) -> str:
        """Where File > Open starts: at the Convert dock's last conversion (selected: it went to a run folder a user
        could not find, tryout 20), else the open model's folder, else the last recent file's, else the current."""
        r = getattr(self.panels.get("Convert"), "last_result", None)
        if r is not None and getattr(r, "ok", False) and r.output and os.path.isfile(r.output):
            return r.output
        if self.pane.path:
            return str(Path(self.pane.path).parent)
        recent = cfg.recent_files() if self.persist else []
        return str(Path(recent[0]).parent) if recent else ""

    def ask_open(self) -> None:
        path = filedialog.ask_open_file(self, "Open model", self.open_start(), file_filter())
        if path:
            self.user_open(path)

    def ask_open_folder(self) -> None:
        """File > Open Folder: a model that is a folder (an MNN-LLM export: config.json naming its llm.mnn)."""
        path = filedialog.ask_open_folder(self, "Open a model folder (an MNN-LLM export)", "")
        if path:
            self.user_open(path)

    def ask_open_second(self) -> None:
        if self._offer_conversion():
            return
        guess = ""
        if self.pane.path:
            p = Path(self.pane.path)
            other = p.with_suffix(".mnn" if p.suffix == ".onnx" else ".onnx")
            guess = str(other) if other.exists() else str(p.parent)
        path = filedialog.ask_open_file(self, "Open a model beside this one", guess, file_filter())
        if path:
            self.user_open(path, second=True)

    def _offer_conversion(self) -> bool:
        """Side by side asked for an .onnx with no .mnn beside it: its conversion is what goes beside it, so the user
        may convert it at once (a new-user try found only a file dialog with nothing to choose, and side by side
        only as a side effect of Convert). True when that is settled (converting, or cancelled); False: the file
        dialog."""
        p = Path(self.pane.path) if self.pane.path else None
        panel = self.panels.get("Convert")
        if p is None or p.suffix.lower() != ".onnx" or panel is None or panel.busy:
            return False
        if any(p.parent.glob(glob.escape(p.stem) + "*.mnn")):  # cnn.mnn, cnn.fp16.mnn: one to choose
            return False
        box = QMessageBox(QMessageBox.Question, "Side by side", f"{p.name} has no .mnn beside it.", parent=self)
        box.setInformativeText("Convert it to MNN now (the Convert dock's settings) and open the conversion beside "
                               "it, with linked selection, or choose a model file?")
        convert = box.addButton("Convert and open beside", QMessageBox.AcceptRole)
        choose = box.addButton("Choose a file\u2026", QMessageBox.ActionRole)
        box.addButton(QMessageBox.Cancel)
        box.setDefaultButton(convert)
        self.offer_box = box  # (tests answer it)
        box.exec()
        self.offer_box = None
        if box.clickedButton() is convert:
            self.ask_convert()
            if not panel.start():  # settings it cannot use: the dock, in view, says which
                self.notify("not converted: the Convert dock says what to change", WARNING, p.name)
            return True
        return box.clickedButton() is not choose

    def user_open(self, path: str, second: bool = False) -> bool:
        """A model the user opened (File > Open, Open Recent, a drop): it goes into Open Recent even where the app
        had opened it before on its own (a conversion beside its model, kept out of the list)."""
        self.not_recent.discard(path)
        return self.open_model(path, second=second)

    def open_model(self, path: str, second: bool = False, expanded=None, job=None) -> bool:
        """Start loading a model (returns False, with a notification, when it cannot even start). `job`: a
        loader child already started for this path (formats/loadproc.py start_load), e.g. at app start."""
        try:
            fmt = detect(path).name
        except ModelError as e:
            self._load_error(str(e), path)
            return False
        path = os.path.abspath(path)
        self._load_started = job.started if job is not None else time.perf_counter()
        self._busy(True, f"loading {Path(path).name}")
        self.cancel_btn.show()
        self.model_label.setText(f"loading {path} \u2026")
        slot = self._loads2 if second else self._loads
        asked = time.monotonic()
        slot.start(_load, path, job, on_done=lambda res: self._loaded(path, fmt, res, second, expanded, asked),
                   on_fail=lambda msg: self._load_error(msg, path), name="load")
        return True

    def _request_shapes(self, path: str, fmt: str, target: str) -> None:
        """Shapes come second: on two cores, inferring them while the file is parsed delays the first paint.
        The main model's dynamic input sizes are the Inputs dock's (its spec's shapes), so .mnn shapes follow it."""
        sizes = self.input_spec().get("shapes") or None
        inputs = self.panels.get("Inputs")
        if target == "main" and inputs is not None and hasattr(inputs, "file_sizes") and inputs.table is self.pane.table:
            # a File row's sizes too (its file's): an .npz of 1x15 ids left the .mnn's shapes at 1x8 (helper 91)
            sizes = {**(sizes or {}), **inputs.file_sizes()} or None
        if target != "main":
            # the model beside it (its conversion) at the sizes the Inputs dock shows, a file's included, for the
            # inputs it shares by name (tryout 10: the .mnn pane read 1x1x64x64 beside a comparison at 256x256; a
            # new user's .npz set the width to 320 and the .mnn kept 64: the spec holds only sizes typed)
            if inputs is not None and hasattr(inputs, "sizes_now") and inputs.table is self.pane.table:
                sizes = inputs.sizes_now()  # (a File row's: its file's, whatever was typed before)
            table = self.second.table if self.second is not None else None
            names = set(table.inputs) if table is not None else set()
            sizes = {k: v for k, v in (sizes or {}).items() if k in names} or None
        self.runner.load_shapes(path, fmt, on_done=lambda shapes, sizes: self._shapes(target, shapes, sizes),
                                on_fail=lambda msg, died: self._shapes_failed(path, msg, died), key=target,
                                input_shapes=sizes or None)

    def refresh_second_shapes(self) -> bool:
        """The .mnn beside the model at the Inputs dock's sizes again, after they changed (its shapes stayed at the
        sizes it was opened with); True if asked."""
        pane = self.second
        table = pane.table if pane is not None else None
        own = getattr(self, "_second_file_shapes", None)
        if table is None or table.format != "mnn" or own is None or len(own) != len(table.shapes):
            return False
        table.shapes[:] = own  # MNN's shapes fill the file's unknown ones again
        self._request_shapes(pane.path, table.format, "second")
        return True

    def cancel_load(self) -> None:
        self._loads.cancel()
        self._loads2.cancel()
        self.runner.cancel()
        self._busy(False, "")
        self.cancel_btn.hide()
        self.model_label.setText(self._model_text())
        self.notify("loading cancelled", INFO)

    def _loaded(self, path: str, fmt: str, res, second: bool, expanded, asked: float = 0.0) -> None:
        table, tree = res
        self.timings["load_s"] = time.perf_counter() - self._load_started
        self.cancel_btn.hide()
        try:
            expanded = resolve_expand(tree, expanded)
        except ValueError as e:
            self.notify(str(e), WARNING, Path(path).name)
            self.expand_failed.emit(str(e))
            expanded = None
        if second:
            # the .mnn's own shapes, put back before its shapes are asked for at other input sizes (refresh_second)
            self._second_file_shapes = list(table.shapes) if fmt == "mnn" else None
            self._show_second(path, table, tree)
        else:
            self.shapes_at = (None, {})
            if self.second is not None and self._second_loaded_at < asked:
                # the pane beside shows what was opened for the previous model: never pair it with this one
                gone = self.title_of(self.second.path)  # "int8w \u00b7 model.mnn", not a bare "model.mnn"
                self.close_second()
                self.notify(f"side by side closed: {gone} was opened beside the previous model", INFO,
                            Path(path).name, "File \u25b8 Open Side by Side puts this model's conversion beside it")
            self.pane.set_model(path, table, tree, expanded)
            self.properties.set_model(table, tree)
            for panel in self.panels.values():
                if hasattr(panel, "model_changed"):
                    panel.model_changed(path, table, tree)
            self.restore_colours()
            self.notes.dismiss_not_about(Path(path).name, path)
            self.notices.model_opened(Path(path).name, path)
            if self.second is not None:
                self._relink()
        self._request_shapes(path, fmt, "second" if second else "main")
        if self.persist and path not in self.not_recent:
            cfg.add_recent(path)
            self._refresh_recent()
        self._update_title()
        self.model_label.setText(self._model_text())
        for w in table.info.get("warnings", []):
            self.notify(w, WARNING, Path(path).name)
        self.model_loaded.emit(path)

    def _update_title(self) -> None:
        names = [Path(p.path).name for p in (self.pane, self.second) if p is not None and p.path]
        self.setWindowTitle(" \u2194 ".join(names) + " \u2014 mnnscope" if names else "mnnscope")
        self.actions_by_name["Close Side by Side"].setEnabled(self.second is not None)
        sync_side_by_side(self)
        self.panes_changed.emit()

    def _model_text(self, pane=None) -> str:
        """The status bar's model line: the left pane's model, or `pane`'s (side by side, the right pane's model
        while a node of it is selected: the line named the left model over a selected MNN node, tryout 19)."""
        pane = pane or self.pane
        t = pane.table
        if t is None:
            return "no model"
        view, graph = pane.view, ""
        if view is not None and view is not pane.main_view and view.table is not None:  # an If/Loop body tab
            t, graph = view.table, f" \u25b8 {pane.tabs.tabText(pane.tabs.currentIndex())}"
            tree = view.tree
        else:
            tree = pane.tree
        hidden = int(tree.hidden.sum())
        extra = f" (+{hidden:,} constants)" if hidden else ""
        note = f" \u00b7 {self.shapes_note}" if self.shapes_note and pane is self.pane else ""
        side = " (right pane)" if pane is not self.pane else ""
        return (f"{Path(t.path).name}{graph}{side} \u00b7 {t.format.upper()} \u00b7 {t.node_count - hidden:,} ops"
                f"{extra}{note}")

    def _load_error(self, msg: str, path: str) -> None:
        self._busy(False, "")
        self.cancel_btn.hide()
        self.model_label.setText(self._model_text())
        try:
            hint = ("" if not os.path.exists(path) else  # "no such file" needs no advice on file contents
                    f"check that the file is a complete model ({', '.join(extensions())})")
        except ModelError:  # the registry itself is broken (MNNSCOPE_FORMATS): msg says so
            hint = "check MNNSCOPE_FORMATS"
        self.notify(msg, ERROR, Path(path).name, hint)
        self.load_failed.emit(msg)

    @property
    def shapes_note(self) -> str | None:
        """MNN computes shapes behind dynamic inputs only for concrete sizes: which ones, for the main model."""
        table, sizes = self.shapes_at
        return shapes_note({"shapes_for_inputs": sizes}) if sizes and table is self.pane.table else None

    def _shapes(self, target: str, shapes: dict, sizes: dict | None = None) -> None:
        pane = self.second if target == "second" else self.pane
        if pane is not None and pane.table is not None:
            if target == "main":  # before the merge, which shows the shapes
                self.shapes_at = (pane.table, dict(sizes or {}))
            else:
                self.shapes_at_second = (pane.table, dict(sizes or {}))
            self._merge_shapes(target, shapes)
            at = self.inputs_at(pane.table, sizes)
            for v in pane.views():
                v.canvas.input_at = (pane.table, at)
                v.canvas.update()
            if target == "main":
                self.model_label.setText(self._model_text())
                self._push_dim_values()  # its symbolic dims are known now: their sizes at the Inputs dock's

    @staticmethod
    def inputs_at(table, sizes: dict | None) -> dict[int, list]:
        """{tensor: shape} of the inputs with free (-1) dims (an .mnn's) at `sizes` ({input: dims}, those its shapes
        were computed at): what the graph draws for them."""
        out = {}
        for name, dims in (sizes or {}).items():
            ti = table.tensor_index(name)
            own = table.shapes[ti] if ti is not None else None
            if own and dims and len(dims) == len(own) and any(isinstance(d, int) and d < 0 for d in own):
                out[ti] = [int(d) for d in dims]
        return out

    def _merge_shapes(self, target: str, shapes: dict) -> None:
        pane = self.second if target == "second" else self.pane
        filled = pane.table.merge_shapes(shapes)
        if self.persist and self.runner.backend == "CPU" and self.runner.alive:
            self.runner.query_backend()
        for v in pane.views():
            v.canvas.update()
        self.properties.show_item(self.properties.item, auto=False)
        self.shapes_loaded.emit(filled)

    def _shapes_failed(self, path: str, msg: str, died: bool) -> None:
        if "cancelled" in msg:
            return
        hint = ("the runner restarts on the next request; the graph is shown without inferred shapes"
                if died else "the graph is shown without inferred shapes")
        self.notify(f"shapes unavailable: {msg}", WARNING if not died else ERROR, Path(path).name, hint)
        self.shapes_failed.emit(msg)

    def _busy(self, on: bool, what: str) -> None:
        busy = on or self._loads.busy or self._loads2.busy or any(v.layout_busy for v in self.all_views())
        self.progress.setVisible(busy)
        if on and what:
            self.activity_label.setText(what)
        elif not busy:
            self.activity_label.setText("")

    # ----- side by side ------------------------------------------------------------------------------
    def _show_second(self, path: str, table, tree) -> None:
        opened = self.second is None
        if opened:
            self.second = Pane(self)
            # Properties of an op selected in it follows its colours too (after a profile took the mirrored error
            # colours away, it still said "int8: error introduced 0.172", a new-user try)
            self.second.main_view.overlay_changed.connect(
                lambda ov, pane=self.second: self._overlay_shown(ov, pane.main_view))
            self.split.addWidget(self.second)
            self.split.setSizes([self.split.width() // 2] * 2)
        self._second_loaded_at = time.monotonic()
        # Properties describing this pane's previous model (its selection, now gone) follows it to the new one
        shown_here = not opened and any(v.table is self.properties.table for v in self.second.views())
        self.second.set_model(path, table, tree)
        if shown_here:
            self.properties.set_model(table, tree)
        if self.pane.table is not None:
            self._relink()
        if opened:
            self._fit_docks(force=True)

    def _relink(self) -> None:
        """Pair the two panes anew: nothing is linked until the node map proves the pair (gui/linking.py)."""
        self._unlink()
        self.linker = Linker(self.pane, self.second, self)
        self.linker.state_changed.connect(self._link_state)
        self.linker.unmatched.connect(self._unmatched)
        self._link_state(self.linker.state)

    def _unlink(self) -> None:
        if self.linker is not None:
            self.linker.clear()
            self.linker.shutdown()
            self.linker.deleteLater()
            self.linker = None

    def _link_state(self, state: str) -> None:
        if self.linker is None or self.second is None:
            return
        main = Path(self.pane.path or "").name
        if state == LINKED:
            self._mirror_overlay()
            self.second.set_link_state(f"linked with {main}")
            # the colours said (tryout 19 could not tell the two outlines apart)
            self.second.link_label.setToolTip("selecting an op outlines it in orange, and its counterparts in the "
                                              "other model in yellow (the converter's node map)")
        elif state == NOT_LINKED:
            self.second.set_link_state(f"not linked: {self.linker.reason}", warn=True)
            self.notify(f"side by side not linked: {self.linker.reason}", WARNING, Path(self.second.path).name,
                        "open the model's own conversion beside it to link selections")
        else:
            self.second.set_link_state(f"checking that this is the conversion of {main} \u2026")

    def _mirror_overlay(self, _overlay=None) -> None:
        """The main pane's error or statistic colours on the linked pane beside it, each op there taking the largest
        value of its counterparts (the node map): after a comparison the .mnn beside the model stayed in op colours
        (tryout 67). Only overlays that combine by their largest value (errors, statistics): a time spread over a
        fused region and summed back would count an op split in two twice. An overlay of the pane's own stays."""
        other = self.second.main_view if self.second is not None else None
        if other is None or other.table is None:
            return
        mine = other.overlay
        if mine is not None and not (getattr(mine, "meta", None) or {}).get("mirrored"):
            return
        ov = self.pane.main_view.overlay
        linked = self.linker is not None and self.linker.state == LINKED
        mode = (getattr(ov, "meta", None) or {}).get("mode") if ov is not None else None
        if mode is not None and not self._converted_in(mode, self.second.path):
            # a comparison's errors are of its mode's conversion: painted on another one (a fp32 .mnn converted after
            # an int8 comparison came up in int8's red and green, a new-user try) they said what it does not do
            linked = False
        if ov is None or ov.aggregate != "max" or not linked:
            if mine is not None:
                other.set_overlay(None)
            return
        src = self.pane.main_view._overlay_values
        values = {}
        for m in range(other.table.node_count):
            got = [src[o] for o in self.linker.counterparts(other, m) if o in src]
            if got:
                values[other.table.ids[m]] = max(got)
        meta = dict(getattr(ov, "meta", None) or {}, mirrored=True,
                    muted_why=f"no counterpart with a value in {Path(self.pane.path or '').name}")
        meta.pop("via", None)  # (names of the other model's regions)
        muted = frozenset(i for i in other.table.ids if i not in values)
        other.set_overlay(Overlay(name=f"{ov.name} (of its counterparts in {Path(self.pane.path or '').name})",
                                  values=values, scale=ov.scale, unit=ov.unit, aggregate="max", meta=meta,
                                  muted=muted, by_id=True))

    def _converted_in(self, mode: str, path: str | None) -> bool:
        """Whether `path` is the .mnn the Compare dock's shown comparison ran for `mode`: that file, or one with the
        same bytes (the converter writes the same file for the same settings: a new user's own decoder.int8w.mnn,
        from the Convert dock, kept its op colours beside the int8w comparison's red and green)."""
        compare = self.panels.get("Compare")
        found = next((m for m in (getattr(compare, "result", None) or {}).get("modes", []) if m.get("mode") == mode),
                     None)
        mnn = (found or {}).get("mnn_model")
        try:
            return bool(mnn and path) and (os.path.samefile(mnn, path) or same_bytes(mnn, path))
        except OSError:
            return False

    def title_of(self, path: str | None) -> str:
        """A model as its tab names it ("int8w · model.mnn" for a comparison's conversion), else its file name."""
        if not path:
            return ""
        return self.model_titles.get(os.path.abspath(path), Path(path).name)

    def _unmatched(self, view, item: int) -> None:
        """The banner says when the op selected has no counterpart in the other model (-1: back to 'linked with')."""
        if self.linker is None or self.second is None or self.linker.state != LINKED:
            return
        if item < 0:
            self._link_state(LINKED)
            return
        t = view.table
        other = self.second if view is self.pane.main_view else self.pane
        name = t.names[item] or t.ids[item]
        self.second.set_link_state(f"{name} ({t.op_types[item]}) has no counterpart in {Path(other.path or '').name}: "
                                   "the conversion removed it or folded it into another op")

    def counterparts(self, view: GraphView, item: int) -> list[int] | None:
        """The ops linked to `item` in the other pane ([] none), None when no other pane is linked to `view`."""
        if self.linker is None or self.linker.other_view(view) is None:
            return None
        return self.linker.counterparts(view, item)

    def _clear_of_notices(self, rect=None) -> bool:
        """Pan the graph of the current view so its selected node is not under the notices; True when it moved."""
        if self.notes.isHidden() or not self.notes.shown_cards():
            return False
        view = self.view
        canvas = view.canvas if view is not None else None
        sc = canvas.scene if canvas is not None else None
        if sc is None or canvas.selected < 0:
            return False
        lf = canvas._leaf_showing(sc, canvas.selected)
        if lf < 0:
            return False
        area = rect if rect is not None else self.notes.geometry()
        top_left = canvas.mapFrom(self.centralWidget(), area.topLeft())
        ax0, ay0, ax1, ay1 = top_left.x(), top_left.y(), top_left.x() + area.width(), top_left.y() + area.height()
        s = canvas.scale
        nx0, ny0 = sc.x0[lf] * s + canvas.tx, sc.y0[lf] * s + canvas.ty
        nx1, ny1 = sc.x1[lf] * s + canvas.tx, sc.y1[lf] * s + canvas.ty
        if nx1 <= ax0 or nx0 >= ax1 or ny1 <= ay0 or ny0 >= ay1:
            return False  # not under the notices
        gap = 12
        left = ax0 - gap - nx1            # move left of the cards, if the canvas has room there
        up = ay0 - gap - ny1              # else above them
        if nx1 - nx0 + 2 * gap <= ax0:
            canvas.set_view(s, canvas.tx + left, canvas.ty)
        elif ny1 - ny0 + 2 * gap <= ay0:
            canvas.set_view(s, canvas.tx, canvas.ty + up)
        else:
            return False
        return True

    def dim_values_of(self, table) -> dict[str, int]:
        """{dim name: size} for `table` at the Inputs dock's sizes (its model's only): the inputs' named dims, and the
        sizes the model's other symbolic dims take there once worked out (dims_at)."""
        inputs = self.panels.get("Inputs")
        if inputs is None or table is None or inputs.table is not table:
            return {}
        values = inputs.dim_values()
        at_table, at_sizes, dims = self.dims_at
        if dims and at_table is table and at_sizes == inputs.sizes_now():
            values = {**dims, **values}
        return values

    def _push_dim_values(self) -> None:
        """The Inputs dock's {dim name: size} to the main pane's graph (its model's only): what its labels and
        tooltips evaluate symbolic dims at."""
        view = self.pane.main_view
        self._ask_dims(view.table)
        values = self.dim_values_of(view.table)
        if values != view.canvas.dim_values:
            view.canvas.dim_values = values
            view.canvas.update()

    def _ask_dims(self, table) -> None:
        """Where the main model's shapes hold dims the Inputs dock's sizes do not give (PP-OCRv6 det's output read
        "ConvTranspose_459_o0__d0×...": names the exporter made up), the runner works them out at those sizes once
        (shape inference with the inputs fixed); labels, Properties and FLOPs then read numbers, as for an .mnn."""
        inputs = self.panels.get("Inputs")
        if inputs is None or table is None or inputs.table is not table or self._dims_asked is not None:
            return
        sizes, names = inputs.sizes_now(), inputs.dim_values()
        if not names or (self.dims_at[0] is table and self.dims_at[1] == sizes):
            return  # no free input dims (nothing depends on sizes), or worked out for these sizes already
        if not any(eval_dim(d, names) is None for d in self._symbolic_dims(table)):
            return
        path = self.pane.path
        if not path or not self.runner.dims_at(path, table.format, sizes,
                                               lambda dims: self._dims_done(table, sizes, dims)):
            return
        self._dims_asked = (table, sizes)

    def _symbolic_dims(self, table) -> set:
        """The distinct symbolic dims of `table`'s shapes (kept until more shapes arrive): a large model's tensors
        share a few dozen, and evaluating each dim of every tensor on each size typed would stall the window."""
        key = (id(table), sum(1 for shape in table.shapes if shape))
        if self._dims_seen[0] != key:
            self._dims_seen = (key, {d for shape in table.shapes if shape for d in shape if isinstance(d, str)})
        return self._dims_seen[1]

    def dims_settled(self) -> bool:
        """No request for the main model's dim sizes is in flight (`mnnscope view` waits for it, as for the summary)."""
        return self._dims_asked is None

    def _dims_done(self, table, sizes: dict, dims: dict) -> None:
        self._dims_asked = None
        self.dims_at = (table, sizes, dict(dims or {}))
        # this model's numbers to its graph; or, where another model was opened or other sizes typed meanwhile, the
        # request for those
        self._push_dim_values()
        if self.properties.table is table:
            self.properties.sizes_changed()

    def profile_from_why(self, pane, view: GraphView, item: int) -> str:
        """Why "Profile from Here" cannot run on `item` of `view` ("": it can)."""
        panel = self.panels.get("Profile")
        if panel is None:
            return "no Profile dock"
        if pane is not self.pane or view is not pane.main_view:
            return ("the Profile dock profiles the model in the left pane: profile from here there"
                    if pane is not self.pane else "a cut starts at a node of the model's main graph, not inside a body")
        if view.table is None or view.table.format != "onnx":
            return "a cut needs the .onnx: open it (its conversion is profiled after the cut on MNN)"
        if panel.busy:
            return "a profile runs already"
        return ""

    def profile_from(self, pane, view: GraphView, item: int) -> bool:
        """Profile the open .onnx from `item` on (the Profile dock's settings and the Inputs dock's inputs)."""
        if self.profile_from_why(pane, view, item):
            return False
        return self.panels["Profile"].run_from(view.table.ids[item])

    def show_counterpart(self, view: GraphView, item: int) -> None:
        found = self.counterparts(view, item) or []
        if found:
            if view.canvas.selected != item:
                view.select(item)  # the linker highlights all of them in the other pane
            other = self.linker.other_view(view)
            other.reveal(found[0])
            other.canvas.setFocus()

    def close_model(self) -> None:
        """File > Close Model (Ctrl+W): the window back to no model, as it starts (a user found no way to put a model
        away: no Close in File, no button on its tab, Ctrl+W did nothing). The docks keep their results for when it
        reopens (each dock's model_changed hears path None)."""
        if self.pane.path is None:
            return
        name = Path(self.pane.path).name
        self._loads.cancel()
        self.close_second()
        self.pane.clear_model()
        self.shapes_at = (None, {})
        self.properties.set_model(None, None)
        for panel in self.panels.values():
            if hasattr(panel, "model_changed"):
                panel.model_changed(None, None, None)
        self.notes.dismiss_not_about("")
        self.notices.model_opened("")
        self._update_title()
        self.model_label.setText(self._model_text())
        self.statusBar().showMessage(f"closed {name}", 5000)
        self.model_closed.emit(name)

    def close_second(self) -> None:
        if self.second is None:
            return
        view = self.pane.main_view
        # the op selected on the left stays selected (the counterpart of a node picked on the right: the unlinking
        # took its highlight and its selection, and the selection was lost: tryout 19)
        keep = view.canvas.selected if view.scene is not None else -1
        self._unlink()
        if keep >= 0 and view.canvas.selected < 0:
            view.canvas.set_selected(keep)
        self.second.shutdown()
        self.second.setParent(None)
        self.second.deleteLater()
        self.second = None
        # what is left describes the remaining model only
        self.pane.tabs.setCurrentWidget(view)
        if self.pane.table is not None:
            self.properties.set_model(self.pane.table, self.pane.tree)
            self.properties.show_item(view.canvas.selected)
        self._update_title()
        self.model_label.setText(self._model_text())
        self._fit_docks(force=True)

    def _fit_docks(self, force: bool = False) -> None:
        """Properties takes at most ~380 px, and less where the graphs need the room: about a fifth of the
        window with two graphs side by side, under a third with one."""
        d = self.docks["Properties"]
        if d.isHidden() or d.isFloating():
            return
        cap = int(self.width() * (0.2 if self.second is not None else 0.3))
        want = max(180, min(380, cap))
        # a width this method set (the user has not dragged it since) follows the window back up: 1500 -> 1024 ->
        # 1500 left Properties at its 1024 width, wrapping names
        ours = self._props_width
        grow = ours is not None and abs(d.width() - ours) <= 2 and d.width() < want - 2
        if force or d.width() > max(want, cap) or grow:
            self.resizeDocks([d], [want], Qt.Horizontal)
            self._props_width = want

    def bottom_dock_cap(self, d) -> int:
        """The tallest bottom dock `d` may be: the graph keeps GRAPH_KEEPS of the height they share."""
        return int((self.centralWidget().height() + d.height()) * (1 - GRAPH_KEEPS))

    def _fit_bottom_dock(self) -> None:
        """A bottom dock leaves the graph at least GRAPH_KEEPS of the height they share: a dock sized at 1500x950
        (by the user or by Qt) kept its height when the window went to 1024x700, and the graph got ~90 px."""
        for d in self.docks.values():
            if d.isVisible() and not d.isFloating() and self.dockWidgetArea(d) == Qt.BottomDockWidgetArea:
                cap = self.bottom_dock_cap(d)
                if d.height() > cap + 2:
                    self.resizeDocks([d], [max(cap, 60)], Qt.Vertical)
                return  # tabbed bottom docks share one height

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self._fit_docks()
        self._fit_bottom_dock()

    def _bottom_height(self) -> int | None:
        """The bottom docks' height (tabbed, they share one), None without one shown."""
        return next((d.height() for d in self.docks.values() if d.isVisible() and not d.isFloating() and
                     self.dockWidgetArea(d) == Qt.BottomDockWidgetArea), None)

    def event(self, e) -> bool:
        """A drag of the separator over the bottom docks (the window itself gets the mouse there) that changed their
        height marks it as the user's (bottom_sized_by_user: the window's height then): the docks stop growing for
        their contents and keep it when another comes in as a tab, until the window's height changes. Dragged
        shorter, the Statistics dock grew back at the next op's title, the Convert dock at the next tab, the Profile
        dock after a run (helper 104's try)."""
        kind = e.type()
        if kind == QEvent.MouseButtonPress:
            self._bottom_at_press = self._bottom_height()
        done = super().event(e)
        if kind == QEvent.MouseButtonRelease and getattr(self, "_bottom_at_press", None) is not None:
            before, self._bottom_at_press = self._bottom_at_press, None
            QTimer.singleShot(0, self, lambda: self._note_bottom_drag(before))
        return done

    def _note_bottom_drag(self, before: int) -> None:
        after = self._bottom_height()
        if after is not None and abs(after - before) > 2:
            self.bottom_sized_by_user = self.height()

    def grow_bottom(self, d) -> bool:
        """A bottom dock with results to read grows to the most the graph leaves it (bottom_dock_cap), where the user
        has not sized the bottom area: at 1024x700 a comparison's tables sat below the fold of a dock a third of the
        window tall, and three new users scrolled or dragged the splitter to read them (helpers 111, 113, 114)."""
        if d.isFloating() or self.dockWidgetArea(d) != Qt.BottomDockWidgetArea or self.bottom_user_sized():
            return False
        cap = self.bottom_dock_cap(d)
        if not d.isVisible() or d.height() >= cap - 4:
            return False
        self.resizeDocks([d], [cap], Qt.Vertical)
        return True

    def bottom_user_sized(self) -> bool:
        return getattr(self, "bottom_sized_by_user", None) == self.height()

    def showEvent(self, e) -> None:
        super().showEvent(e)
        self._fit_docks()
        self._fit_bottom_dock()

    def _overlay_shown(self, _overlay, view=None) -> None:
        view = self.pane.main_view if view is None else view
        if view.table is not None and self.properties.table is view.table and self.properties.item == \
                view.canvas.selected:
            self.properties.show_view(view)

    # ----- selection ---------------------------------------------------------------------------------
    def _selection_changed(self, view: GraphView) -> None:
        if view is None or view.table is None:
            return
        if self.properties.table is not view.table:
            self.properties.set_model(view.table, view.tree)
        self.properties.show_view(view)
        for panel in self.panels.values():  # docks that follow the selection (e.g. Statistics)
            if hasattr(panel, "selection_changed"):
                panel.selection_changed(view, view.canvas.selected)
        if not self._loads.busy and view in self.pane.views():  # a body's tab describes that body
            self.model_label.setText(self._model_text())
        elif self.second is not None and not self._loads2.busy and view in self.second.views():
            self.model_label.setText(self._model_text(self.second))
        if self.linker is not None and view in (self.pane.main_view, getattr(self.second, "main_view", None)):
            self.linker.follow(view)
        if view is self.view and view.canvas.selected >= 0:  # a node shown (Show node, a Diagnostics row) clear of
            QTimer.singleShot(0, self, self._clear_of_notices)  # the notices, once it is centred

    # ----- conversion (the Convert dock holds the logic: gui/panels/convert.py) ---------------------------
    def ask_convert(self) -> None:
        """Model > Convert to MNN: the Convert dock, shown and raised, pointed at the open .onnx unless busy."""
        panel = self.panels.get("Convert")
        if panel is None or not (self.pane.path and self.pane.table is not None and self.pane.table.format == "onnx"):
            return
        if not panel.busy and panel.src != os.path.abspath(self.pane.path):
            panel.set_source(self.pane.path)
        self.show_dock("Convert")
        panel.convert_btn.setFocus()

    # ----- docks ---------------------------------------------------------------------------------------
    def show_dock(self, name: str) -> None:
        """Show and raise a dock; a bottom dock that was hidden comes up at about a third of the window's height
        (left to Qt, it took its size hint: at 1024x700 two thirds, the graph keeping 134 px)."""
        d = self.docks[name]
        in_bottom = not d.isFloating() and self.dockWidgetArea(d) == Qt.BottomDockWidgetArea
        # hidden, or a tab behind another: it comes to the front now
        coming = d.isHidden() or d.visibleRegion().isEmpty()
        # the bottom area empty until now: the dock sets its height (left to Qt, its size hint: at 1024x700 two
        # thirds, the graph keeping 134 px)
        alone = d.isHidden() and not any(o.isVisible() for o in self.docks.values()
                                         if o is not d and self.dockWidgetArea(o) == Qt.BottomDockWidgetArea)
        d.show()
        d.raise_()
        if in_bottom and coming:  # once the dock is in the layout (sized now, Qt's own sizing wins)
            QTimer.singleShot(0, lambda: self._bottom_room(d, alone))

    def panel_shown(self, d) -> None:
        """A dock shown from View › Panels: to the front (tabbed behind another, it stayed out of sight), and a
        bottom dock with the room show_dock gives it (Qt brought the Inputs dock up two rows tall at 1500x950, the
        other two of the romanizer decoder's four out of sight: tryout 67)."""
        d.raise_()
        if not d.isFloating() and self.dockWidgetArea(d) == Qt.BottomDockWidgetArea:
            alone = not any(o.isVisible() for o in self.docks.values()
                            if o is not d and self.dockWidgetArea(o) == Qt.BottomDockWidgetArea)
            QTimer.singleShot(0, lambda: self._bottom_room(d, alone))

    def panel_unchecked(self, d) -> None:
        """View › Panels unchecks a dock's item (QAction.toggled, before Qt's own slot closes the dock on triggered):
        one open but tabbed behind another is checked again, and so comes to the front (panel_shown) instead of
        closing. With Profile's tab in front, View › Panels › Convert hid the Convert dock the user asked to see (its
        item was checked: the dock was open). Hidden by any other path, it is hidden by then: left alone."""
        if not d.isHidden() and d.visibleRegion().isEmpty():   # (a tab behind another: Qt keeps it shown, clipped)
            d.toggleViewAction().setChecked(True)   # (QAction.activate then says triggered(True): Qt leaves it open)

    def _bottom_room(self, d, alone: bool) -> None:
        """A bottom dock brought up alone comes at about a third of the window; one brought to the front of a much
        smaller area grows to it: tabbed with the Inputs dock (sized to a few rows), the Profile dock opened 120 px
        tall, its results out of sight until the splitter was dragged (tryout 14)."""
        want = max(d.minimumSizeHint().height(), int(self.height() * BOTTOM_DOCK))
        area = d.widget()
        panel = area.widget() if isinstance(area, QScrollArea) else None
        if getattr(panel, "SHOWS_WHOLE", False) and d.isVisible():
            # a panel that reads whole or not at all (Statistics: an op's title over its histogram, the producers'
            # line under it) comes up as tall as it needs, within the graph's share (at 1024x700 the third cut it
            # by 6 px: it scrolled)
            least = panel.heightForWidth(area.viewport().width()) + d.height() - area.viewport().height()
            want = max(want, min(least, self.bottom_dock_cap(d)))
        if alone:
            self.bottom_sized_by_user = None   # the area was empty: a new start, at a third of the window
        elif self.bottom_user_sized():
            return   # a tab into docks the user sized keeps their height (helper 104's try: it went back to a third)
        if d.isVisible() and (alone or d.height() < 0.75 * want):
            self.resizeDocks([d], [want], Qt.Vertical)

    def restore_colours(self) -> None:
        """The colours of the dock that showed them last on the open model come back (the model opened again, or a
        Runs diff put away: it left the op categories where the profile's times had been, tryout 12)."""
        path = self.pane.path
        owner = self.panels.get(self._overlay_owner.get(os.path.abspath(path), "")) if path else None
        if owner is not None and hasattr(owner, "restore_overlay"):
            owner.restore_overlay()

    def _note_overlay_owner(self, overlay) -> None:
        meta = getattr(overlay, "meta", None) or {}
        owner = "Profile" if "profile" in meta else "Compare" if "mode" in meta else None
        if overlay is not None and owner and self.pane.path:
            self._overlay_owner[os.path.abspath(self.pane.path)] = owner

    def inputs_refused(self, what: str) -> bool:
        """True (with a notice naming the first problem) while the Inputs dock holds inputs it refuses: a run then
        waits for them to be fixed. It used to go ahead on default random data while the dock said "runs refuse
        these inputs" (tryout 9: a range past the embedding's 160 rows was refused, F5 profiled ids 2..136)."""
        panel = self.panels.get("Inputs")
        errors = panel.validate() if panel is not None and hasattr(panel, "validate") else []
        if not errors:
            return False
        # "waits for" read as if the run would start once the inputs were fixed (a new user's try): it did not start
        self._inputs_notices.append(self.sink.notify(
            f"{what} did not start: the Inputs dock refuses its inputs: {errors[0]}"
            + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""), WARNING, "Inputs",
            "fix the input there (or press Defaults), then run again",
            actions=[("Show Inputs", lambda: self.show_dock("Inputs"))]))
        return True

    def _inputs_fixed(self) -> None:
        """The notice of a run the Inputs dock refused leaves once the dock refuses nothing: it stayed up saying
        "ids up to 6635..." over a dock that showed no problem any more (a new user's try)."""
        said, panel = self._inputs_notices, self.panels.get("Inputs")
        if said and panel is not None and not getattr(panel, "errors", None):
            self._inputs_notices = []
            for n in said:
                self.notes.dismiss_notification(n)

    def conversion_settings(self) -> dict | None:
        """The Convert dock's settings (ConvertSettings.to_json()) when they differ from the converter's defaults,
        else None: what every conversion a run makes starts from (the dock holds the open model's own settings). A
        Compare run converted with the defaults while the dock showed other settings, and its verdict asked for the
        GELU setting the user had just set (tryout 12)."""
        panel = self.panels.get("Convert")
        try:
            s = panel.settings() if panel is not None and hasattr(panel, "settings") else None
        except (ValueError, TypeError):
            return None
        return s.to_json() if s is not None and s.describe() else None

    def input_spec(self) -> dict:
        """The inputs the Inputs dock describes, as inputs.data.make_inputs keywords (seed, shapes, files, text,
        tokenizer, image); seed 0 random inputs while there is no Inputs dock."""
        panel = self.panels.get("Inputs")
        return panel.spec() if panel is not None else {"seed": 0}

    # ----- misc --------------------------------------------------------------------------------------
    def show_shortcuts(self) -> None:
        from mnnscope.gui.shortcuts import show_shortcuts
        show_shortcuts(self)

    def show_guide(self) -> None:
        from mnnscope.gui.guide import show_guide
        show_guide(self)

    def show_about(self) -> None:
        self.notify("mnnscope: graph viewer, profiler and debugger for MNN models", INFO, "About")

    def dragEnterEvent(self, e) -> None:
        if e.mimeData().hasUrls():
            e.acceptProposedAction()

    def dropEvent(self, e) -> None:
        urls = [u.toLocalFile() for u in e.mimeData().urls() if u.isLocalFile()]
        if urls:
            self.user_open(urls[0])
            if len(urls) > 1:
                self.user_open(urls[1], second=True)
        e.acceptProposedAction()

    def closeEvent(self, e) -> None:
        if self.persist:
            self._save_settings()
        self.shutdown()
        release_plots(self)  # their menus would outlive the window (gui/plotrelease.py)
        super().closeEvent(e)

    def shutdown(self) -> None:
        """Stop every worker and the runner (window close; tests call it too)."""
        self._loads.shutdown()
        self._loads2.shutdown()
        self._unlink()
        self.properties.shutdown()
        for panel in self.panels.values():
            if hasattr(panel, "shutdown"):
                panel.shutdown()
        self.pane.shutdown()
        if self.second is not None:
            self.second.shutdown()
        self.runner.shutdown()

    @staticmethod
    def live_tasks():
        return live_tasks()
