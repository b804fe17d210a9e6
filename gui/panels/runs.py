"""The Runs dock: the run store's history of the open model (or of every version of its file, or of every
model), two runs compared (per-op time deltas drawn over the graph, or per-mode output errors), a run repeated
with its inputs and settings, runs deleted.

The store is read on worker threads (gui.tasks): hashing the model reads the whole file, and a run's ops can be
thousands of rows. The figures come from inspector.history, the same functions `mnnscope runs` prints.
"""
from __future__ import annotations

import dataclasses
import os
from functools import partial
from html import escape
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QHBoxLayout, QHeaderView, QLabel,
                               QMessageBox, QPushButton, QSplitter, QTreeWidget, QTreeWidgetItem, QVBoxLayout,
                               QWidget)

from mnnscope.inspector.errors import ModelError
from mnnscope.inspector.history import (DIFF_KINDS, brief, compare_verdicts_text, deltas_title, diff_row_name,
                                        diff_row_sizes, diff_runs, fmt_bytes, generate_value, num, op_deltas, pct,
                                        ratio_words, setting_text, settings_text, whole_run_text)
from mnnscope.inspector.inputs.data import inputs_from
from mnnscope.inspector.model.overlay import Overlay
from mnnscope.inspector.profile.placement import RASTER_SUFFIX  # a piece MNN split off an op at run time
from mnnscope.inspector.store.runs import RUN_KINDS, RunStore

from mnnscope.gui.notify import INFO
from mnnscope.gui.tasks import TaskSlot
from mnnscope.gui.wraplabel import WrappedLabel, wrap_tip

SCOPES = ("This model", "This model and its other versions", "All models")
KINDS = RUN_KINDS
LIMIT = 500          # runs listed at most
DIFF_ROWS = 300      # op rows of a diff shown at most (largest changes first)
COLUMNS = ("Run", "Kind", "Date", "Model", "Settings", "Backend", "Result")
DIFF_COLUMNS = ("\u0394 ms", "a ms", "b ms", "b/a", "Type", "Op")
COMPARE_DIFF_COLUMNS = ("Mode", "a rel_l2", "b rel_l2", "b/a", "verdict a \u2192 b", "size a \u2192 b")
CONVERT_DIFF_COLUMNS = ("", "a", "b", "b/a", "", "")
esc = partial(escape, quote=False)   # the diff's rich text: a run's own words, "<" and "&" escaped
DELTA_WIDTHS = (72, 64, 64, 52, 90)   # the diff table's columns but its last (which stretches)
JOB = "repeat"       # the runner job name of a repeat made by this dock


def _load(path: str | None, scope: int, kind: str | None, cancelled=None) -> tuple[str | None, list[dict]]:
    """Worker: (the model's content hash, the runs to list, each with its brief and settings line)."""
    store = RunStore()
    digest = store.model_hash(path) if path and os.path.isfile(path) else None
    if scope == 2 or not path:
        runs = store.list_runs(kind=kind, limit=LIMIT)
    elif digest is None:
        runs = []
    elif scope == 1:  # every content of the file, and the model it was converted from (an .mnn's ONNX)
        runs = store.lineage_runs(path, kind=kind, limit=LIMIT)
    else:
        runs = store.list_runs(model_hash=digest, kind=kind, limit=LIMIT)
    rows = []
    for r in runs:
        # whole: the cell elides it to its width, its tooltip wraps it (cut at 120 characters, the tooltip was cut too)
        rows.append(dict(r, brief=brief(r), settings_line=settings_text(r, 4000)))
    return digest, rows


def _diff(ids: list[int], cancelled=None) -> dict:
    store = RunStore()
    runs = []
    for run_id in ids:
        run = store.get_run(run_id)
        if run is None:
            raise ValueError(f"run {run_id} is no longer in the store")
        runs.append(run)
    a, b = sorted(runs, key=lambda r: (r["time"], r["id"]))  # older first: the diff reads "a -> b"
    return diff_runs(a, b, conversions=store.conversion_of)


def _delete(ids: list[int], cancelled=None) -> dict:
    return RunStore().delete_runs(ids)


def _repeat_profile(run: dict):
    """The job body that repeats a profile run with its recorded settings (no Profile dock to do it)."""
    def job(client, on_event, cancelled):
        from mnnscope.inspector.profile.service import ProfileOptions, run_profile
        names = {f.name for f in dataclasses.fields(ProfileOptions)} - {"model"}
        settings = {k: v for k, v in (run.get("settings") or {}).items() if k in names}
        return run_profile(ProfileOptions(model=run["model_path"], **settings), client=client, on_event=on_event)
    return job


def _repeat_compare(run: dict):
    def job(client, on_event, cancelled):
        from mnnscope.inspector.compare.options import CompareOptions, tolerance_options
        from mnnscope.inspector.compare.service import compare_model
        s = run.get("settings") or {}
        # a check of a given .mnn repeats as one, on that file (not a comparison of the .onnx's own conversion)
        mnn = s.get("mnn")
        if mnn and not os.path.isfile(mnn):
            raise ModelError(f"{mnn}: the .mnn this run checked is no longer there")
        # a fix run (the Compare dock's button) repeats as one: the same ops kept in float, not a plain comparison;
        # judged with the run's own tolerance
        opts = CompareOptions(modes=list(s.get("modes") or ["fp32"]), seed=int(s.get("seed") or 0),
                              fix_skip_ops=list(s["keep_float"]) if s.get("keep_float") else None, mnn_path=mnn,
                              **tolerance_options(s.get("tolerance")))
        # with the run's inputs (an image, files, a text), not random ones of its seed
        spec = s.get("input_spec") if isinstance(s.get("input_spec"), dict) else {"seed": opts.seed}
        return compare_model(run["model_path"], opts, inputs=spec, client=client, on_event=on_event)
    return job


class RunsPanel(QWidget):
    listed = Signal(int)        # the list was refreshed: number of runs shown
    diffed = Signal(object)     # a diff is shown (inspector.history.diff_runs' dict)
    repeated = Signal(object)   # a repeat made by this dock finished: the service result
    failed = Signal(str)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.path: str | None = None
        self.digest: str | None = None
        self.runs: list[dict] = []
        self.diff: dict | None = None
        self.overlay: Overlay | None = None
        self._shown: Overlay | None = None   # the overlay this dock put on the graph
        self.legend = None                    # its legend on the graph (gui/legend.py)
        self._closed = False
        self._list = TaskSlot(self)
        self._diffs = TaskSlot(self)
        self._deletes = TaskSlot(self)
        self._again = QTimer(self)   # jobs finishing in a burst refresh once
        self._again.setSingleShot(True)
        self._again.setInterval(300)
        self._again.timeout.connect(self.refresh)

        self.scope = QComboBox()
        self.scope.addItems(SCOPES)
        self.scope.setToolTip("Runs of this model (same content); of every version of this file and of the model a "
                              "recorded conversion made it from (an .mnn's ONNX); or of every model")
        self.kind = QComboBox()
        self.kind.addItems(("All kinds",) + KINDS)
        self.refresh_button = QPushButton("Refresh")
        self.diff_button = QPushButton("Compare")
        self.diff_button.setToolTip("Compare the two selected runs (two profiles: per-op times; two comparisons: "
                                    "output errors per mode)")
        self.repeat_button = QPushButton("Repeat")
        self.repeat_button.setToolTip("Run the selected run again with its inputs and settings")
        self.delete_button = QPushButton("Delete\u2026")
        self.overlay_box = QCheckBox("Show on graph")
        self.overlay_box.setChecked(True)
        self.overlay_box.setVisible(False)   # shown with a profile diff, the only one drawn on the graph
        self.overlay_box.setToolTip("Colour the graph by each op's change in time: blue faster, red slower")
        bar = QHBoxLayout()
        for w in (self.scope, self.kind, self.refresh_button, self.diff_button, self.repeat_button,
                  self.delete_button):
            bar.addWidget(w)
        bar.addStretch(1)
        self.status = QLabel("")
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        bar.addWidget(self.status)

        self.table = QTreeWidget()
        self.table.setHeaderLabels(COLUMNS)
        self.table.setRootIsDecorated(False)
        self.table.setUniformRowHeights(True)
        self.table.setSelectionMode(QAbstractItemView.ExtendedSelection)
        self.table.setAlternatingRowColors(True)
        head = self.table.header()
        head.setStretchLastSection(True)
        # the Kind column as wide as its longest word ("gener…" at 60 px: tryout 66)
        kind_w = max(60, self.table.fontMetrics().horizontalAdvance("generate") + 20)
        # the Model column holds a name like "PP-OCRv6_rec_small.onnx" (at 110 px "PP-OCRv6_rec_…": helper 120)
        for col, width in enumerate((44, kind_w, 140, 160, 250, 60)):
            self.table.setColumnWidth(col, width)

        # its height as its wrapped lines need (a plain label's last line, a warning, was cut off under the table:
        # tryout 71)
        self.diff_label = WrappedLabel("Select two runs to compare them.")
        self.diff_label.setWordWrap(True)
        self.diff_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.deltas = QTreeWidget()
        self.deltas.setHeaderLabels(DIFF_COLUMNS)
        self.deltas.setRootIsDecorated(False)
        self.deltas.setUniformRowHeights(True)
        self.deltas.header().setStretchLastSection(True)
        self.deltas.header().setSectionResizeMode(QHeaderView.Interactive)
        for col, width in enumerate(DELTA_WIDTHS):
            self.deltas.setColumnWidth(col, width)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        head_row = QHBoxLayout()
        head_row.addWidget(self.diff_label, 1)
        head_row.addWidget(self.overlay_box, 0, Qt.AlignTop)
        rl.addLayout(head_row)
        rl.addWidget(self.deltas, 1)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.table)
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(bar)
        lay.addWidget(split, 1)

        self.scope.currentIndexChanged.connect(lambda _i: self.refresh())
        self.kind.currentIndexChanged.connect(lambda _i: (self._clear_diff(), self.refresh()))
        self.refresh_button.clicked.connect(self.refresh)
        self.diff_button.clicked.connect(self.compare_selected)
        self.repeat_button.clicked.connect(self.repeat_selected)
        self.delete_button.clicked.connect(lambda: self.delete_selected(confirm=True))
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.deltas.itemClicked.connect(self._delta_clicked)
        self.deltas.itemActivated.connect(self._delta_clicked)   # Enter on a row, as a click
        self.overlay_box.toggled.connect(lambda _on: self._show_overlay())
        window.runner.job_finished.connect(self._job_finished)
        self._selection_changed()
        self.refresh()

    # ----- hooks of the window -------------------------------------------------------------------------
    def add_actions(self, menu) -> None:
        from mnnscope.gui.menus import add_action, follow_enabled
        menu.addSeparator()
        # greyed as the dock's buttons are: enabled before any run existed, they read as something to do (helper 107)
        follow_enabled(self.diff_button, add_action(self.window, menu, "Compare Selected Runs", self._menu_compare,
                                                    tip="Runs dock: compare the two selected runs"))
        follow_enabled(self.repeat_button, add_action(self.window, menu, "Repeat Selected Run", self._menu_repeat,
                                                      tip="Runs dock: run the selected run again with its inputs and "
                                                          "settings"))

    def _menu_compare(self) -> None:
        self.window.show_dock("Runs")
        self.compare_selected()

    def _menu_repeat(self) -> None:
        self.window.show_dock("Runs")
        self.repeat_selected()

    def model_changed(self, path, table, tree) -> None:
        if path != self.path:
            self.path = path
            self._clear_diff()
        self.refresh()

    def shutdown(self) -> None:
        self._closed = True   # a job that ends after this starts no more reads
        self._again.stop()
        for slot in (self._list, self._diffs, self._deletes):
            slot.shutdown()

    def _job_finished(self, name: str, ok: bool, msg: str) -> None:
        if not self._closed:
            self._again.start()  # every job may have recorded a run (profile, compare, convert, this dock's repeats)

    # ----- the list ------------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._list.busy or self._diffs.busy or self._deletes.busy

    def refresh(self) -> None:
        if self._closed:
            return
        kind = self.kind.currentText() if self.kind.currentIndex() > 0 else None
        self.status.setText("reading the run store\u2026")
        self._list.start(_load, self.path, self.scope.currentIndex(), kind, on_done=self._listed,
                         on_fail=self._list_failed, name="runs list")

    def _list_failed(self, msg: str) -> None:
        self.status.setText(f"the run store could not be read: {msg}")
        self.failed.emit(msg)

    def _listed(self, result) -> None:
        self.digest, rows = result
        keep = set(self.selected_ids())
        self.runs = rows
        self.table.blockSignals(True)
        self.table.clear()
        items = []
        for r in rows:
            b = r["brief"]
            model = b["model"] or "-"
            if self.digest and r.get("model_sha256") and r["model_sha256"] != self.digest:
                model += f" @{r['model_sha256'][:8]}"  # another version of the file
            it = QTreeWidgetItem([str(r["id"]), r["kind"], b["when"], model, r["settings_line"],
                                  b["backend_used"] or b["backend_requested"] or "-", b["headline_text"]])
            it.setData(0, Qt.UserRole, r["id"])
            it.setToolTip(3, r.get("model_path") or "")
            it.setToolTip(4, wrap_tip(r["settings_line"]))
            it.setToolTip(6, wrap_tip(b["headline_text"]))  # cut at the dock's edge at 1024x700 (helper 121)
            it.setTextAlignment(0, Qt.AlignRight | Qt.AlignVCenter)
            if "error" in b["headline"]:
                it.setForeground(6, QBrush(QColor("#c0392b")))
            items.append(it)
        self.table.addTopLevelItems(items)
        for it in items:
            if it.data(0, Qt.UserRole) in keep:
                it.setSelected(True)
        self.table.blockSignals(False)
        where = ("every model" if self.scope.currentIndex() == 2 or not self.path
                 else Path(self.path).name)
        self.status.setText(f"{len(rows)} run{'s' if len(rows) != 1 else ''} of {where}"
                            + (f" (newest {LIMIT})" if len(rows) >= LIMIT else ""))
        self._selection_changed(auto=False)
        self.listed.emit(len(rows))

    def selected_ids(self) -> list[int]:
        return [int(it.data(0, Qt.UserRole)) for it in self.table.selectedItems()]

    def select_runs(self, ids) -> None:
        """Select these runs in the list (a test's or a script's way to pick two)."""
        want = {int(i) for i in ids}
        self.table.blockSignals(True)
        self.table.clearSelection()
        for i in range(self.table.topLevelItemCount()):
            it = self.table.topLevelItem(i)
            if it.data(0, Qt.UserRole) in want:
                it.setSelected(True)
        self.table.blockSignals(False)
        self._selection_changed()

    def _run(self, run_id: int) -> dict | None:
        return next((r for r in self.runs if r["id"] == run_id), None)

    def _selection_changed(self, auto: bool = True) -> None:
        ids = self.selected_ids()
        kinds = {(self._run(i) or {}).get("kind") for i in ids}
        # two runs of different kinds have nothing to diff: said on the button (tryout 12 got "ValueError: run 19 is
        # a stats run and run 20 a profile run...")
        same = len(ids) == 2 and len(kinds) == 1 and kinds <= set(DIFF_KINDS)
        self.diff_button.setEnabled(same)
        self.diff_button.setToolTip("" if same or len(ids) != 2 else
                                    f"a {' and a '.join(sorted(str(k) for k in kinds))} run: Compare diffs two "
                                    "profiles, two statistics passes, two comparisons or two generations")
        kind = (self._run(ids[0]) or {}).get("kind") if len(ids) == 1 else None
        self.repeat_button.setEnabled(kind in ("profile", "compare"))
        # greyed with no reason on a generate run (helper 105's try)
        self.repeat_button.setToolTip("" if kind in ("profile", "compare") or kind is None else
                                      f"Repeat runs a profile or a comparison again; a {kind} run: its dock runs it "
                                      "(settings in the Settings column)")
        self.delete_button.setEnabled(bool(ids))
        shown = {self.diff["a"]["id"], self.diff["b"]["id"]} if self.diff is not None else None
        if same and shown == set(ids):
            pass  # the diff shown is of these two (a refresh after a job kept them selected: tryout 66 saw the diff
            # cleared to "Select two runs to compare them" with both still selected and Compare enabled)
        elif auto and same:
            self.compare_selected()
        elif self.diff is not None or self.overlay is not None:
            # the diff shown was of two other runs: it goes, with its colours (tryout 11 read runs 6 -> 7's diff with
            # run 2 alone selected)
            self._clear_diff(self.diff_button.toolTip() or "Select two runs to compare them.")

    # ----- diff ----------------------------------------------------------------------------------------
    def compare_selected(self) -> None:
        ids = self.selected_ids()
        if len(ids) != 2:
            self.diff_label.setText("Select two runs to compare them.")
            return
        self.diff_label.setText(f"comparing runs {ids[0]} and {ids[1]}\u2026")
        self._diffs.start(_diff, ids, on_done=self._show_diff, on_fail=self._diff_failed, name="runs diff")

    def _diff_failed(self, msg: str) -> None:
        msg = msg.split(": ", 1)[1] if msg.startswith(("ValueError: ", "UsageError: ")) else msg
        self._clear_diff(msg)
        self.failed.emit(msg)

    def _clear_diff(self, text: str = "Select two runs to compare them.") -> None:
        self.diff = None
        self.overlay = None
        self.overlay_box.setVisible(False)
        self.deltas.clear()
        # the columns of the diffs the list shows: a comparison diff's left over a list of profiles read "a rel_l2"
        # over profiles (helper 111)
        self.deltas.setHeaderLabels(COMPARE_DIFF_COLUMNS if self.kind.currentText() == "compare" else DIFF_COLUMNS)
        self.diff_label.setText(text)
        self._set_overlay(None)

    def _show_diff(self, d: dict) -> None:
        self.diff = d
        a, b = d["a"], d["b"]
        # (rich text: the runs' own words escaped; a tolerance's "rel_l2 <= 1e-06" was read as a tag and vanished)
        lines = [f"<b>a</b> run {a['id']} ({a['when']}, {esc(a['headline_text'])}) \u2192 "
                 f"<b>b</b> run {b['id']} ({b['when']}, {esc(b['headline_text'])})"]
        ran = d.get("precision_ran") or [None, None]

        def value(k, v, side):  # a precision that did not take effect says what ran ("low (ran as high)")
            text = setting_text(k, v)
            return f"{text} (ran as {ran[side]})" if k == "precision" and ran[side] and ran[side] != v else text
        changed = "; ".join(f"{k}: {value(k, va, 0)} \u2192 {value(k, vb, 1)}"
                            for k, (va, vb) in d["settings_changed"].items())
        if a.get("model_sha256") != b.get("model_sha256"):
            changed = "; ".join(x for x in ("another version of the model", changed) if x)
        if changed:
            lines.append(f"changed: {esc(changed)}")
        lines += [f"\u26a0 {esc(w)}" for w in d.get("warnings") or []]
        self.deltas.clear()
        rows = []
        if d["kind"] == "profile":
            what = "ops"
            if d.get("node_deltas") is not None:
                lines.append(f"on the graph: each run's times placed on the ONNX nodes through its conversion's node "
                             f"map ({pct(d.get('placed_a'))} of a's time, {pct(d.get('placed_b'))} of b's)")
            if d.get("matched_by") == "onnx_node" and not d.get("whole_run_only"):
                what = "ONNX nodes"
                lines.append(f"two engines: matched by ONNX node ({pct(d.get('placed_a'))} of a's time, "
                             f"{pct(d.get('placed_b'))} of b's placed on the nodes)")
            lines.append(f"total {num(d['total_ms_a'], '{:.4g}')} ms \u2192 {num(d['total_ms_b'], '{:.4g}')} ms "
                         f"(<b>\u00d7{num(d['total_ratio'])}</b>: {ratio_words(d['total_ratio'])}); {len(d['ops'])} {what} in both"
                         + (f", {len(d['only_a'])} only in a" if d["only_a"] else "")
                         + (f", {len(d['only_b'])} only in b" if d["only_b"] else ""))
            self.deltas.setHeaderLabels(DIFF_COLUMNS)
            for c in d["ops"][:DIFF_ROWS]:
                rows.append(self._delta_item(f"{c['delta_ms']:+.4f}", f"{c['ms_a']:.4f}", f"{c['ms_b']:.4f}",
                                             num(c["ratio"]), c["type"], c["name"], c["delta_ms"]))
            for o in d["only_a"][:DIFF_ROWS]:
                rows.append(self._delta_item(f"{-o['ms']:+.4f}", f"{o['ms']:.4f}", "only in a", "", o["type"],
                                             o["name"], -o["ms"]))
            for o in d["only_b"][:DIFF_ROWS]:
                rows.append(self._delta_item(f"{o['ms']:+.4f}", "only in b", f"{o['ms']:.4f}", "", o["type"],
                                             o["name"], o["ms"]))
            whole = whole_run_text(d)
            if whole:
                lines.append(esc(whole))
            deltas = op_deltas(d)
            self.overlay = Overlay.diverging(deltas_title(d), deltas, "ms") if deltas else None
        elif d["kind"] == "generate":
            self.deltas.setHeaderLabels(("", "a", "b", "", "", ""))
            for r in d["rows"]:
                it = QTreeWidgetItem([r["what"], generate_value(r["a"], r["what"]), generate_value(r["b"], r["what"]),
                                      "", "", ""])
                if r["what"] == "text":
                    it.setToolTip(1, str(r["a"] or ""))
                    it.setToolTip(2, str(r["b"] or ""))
                    it.setToolTip(0, f"a: {r['a'] or ''}\nb: {r['b'] or ''}")
                rows.append(it)
            self.overlay = None
            lines.append(f"two generations: their tokens agree for the first {d['same_tokens']} of {d['tokens']}")
        elif d["kind"] == "convert":
            self.deltas.setHeaderLabels(CONVERT_DIFF_COLUMNS)
            for what, va, vb, ratio in (
                    ("size", fmt_bytes(d["size_a"]), fmt_bytes(d["size_b"]), num(d["size_ratio"])),
                    ("file", os.path.basename(d["output_a"] or "") or "-", os.path.basename(d["output_b"] or "") or "-",
                     ""),
                    ("result", "ok" if d["ok_a"] else "failed", "ok" if d["ok_b"] else "failed", ""),
                    ("kept in float", str(len(d["keep_float_a"])), str(len(d["keep_float_b"])), "")):
                it = QTreeWidgetItem([what, va, vb, ratio, "", ""])
                if what == "file":
                    it.setToolTip(1, d["output_a"] or "")
                    it.setToolTip(2, d["output_b"] or "")
                rows.append(it)
            self.overlay = None
            lines.append("two conversions: the files they wrote")
        else:
            self.deltas.setHeaderLabels(COMPARE_DIFF_COLUMNS)
            for m in d["modes"]:
                va, vb = m["rel_l2_a"], m["rel_l2_b"]
                ratio = vb / va if isinstance(va, float) and isinstance(vb, float) and va else None
                # what each side ran: two checked files read "fp32" (helper 120), and their sizes
                it = QTreeWidgetItem([diff_row_name(m), num(va) if m["in_a"] else "n/a", num(vb) if m["in_b"] else
                                      "n/a", num(ratio), compare_verdicts_text(m), diff_row_sizes(m)])
                it.setToolTip(0, it.text(0))
                rows.append(it)
            self.overlay = None
            fixed = [side for side in ("a", "b") if any(m[f"fixed_{side}"] for m in d["modes"])]
            lines.append("worst output relative L2 error per mode" + (
                f"; {' and '.join(fixed)}: a fix run's mode after the fix (its ops kept in float)" if fixed else ""))
        self.overlay_box.setVisible(self.overlay is not None)
        self.deltas.addTopLevelItems(rows)
        widths = list(DELTA_WIDTHS)
        fm = self.deltas.fontMetrics()
        if d["kind"] == "compare":   # the verdicts whole ("wrong \u2192 m\u2026" at 1024x700)
            widths[4] = max(widths[4], 16 + max((fm.horizontalAdvance(it.text(4)) for it in rows), default=0))
            # what the rows ran ("x.mnn as int8w"): up to 180 px, the figures beside it in view in a 400 px pane at
            # 1024x700 (the tooltip has it whole)
            widths[0] = max(widths[0], min(180, 16 + max((fm.horizontalAdvance(it.text(0)) for it in rows), default=0)))
        if d["kind"] in ("generate", "convert"):   # names and figures whole ("decode …", "1.51e+…" at 1024x700)
            for col in (0, 1, 2):
                widths[col] = max(widths[col], min(300, 16 + max(fm.horizontalAdvance(it.text(col)) for it in rows
                                                                 if col == 0 or it.text(0) != "text")))
        for col, width in enumerate(widths):
            self.deltas.setColumnWidth(col, width)
        for col in range(3, len(DIFF_COLUMNS)):   # a generation diff has no such columns (two empty ones scrolled it)
            self.deltas.setColumnHidden(col, d["kind"] == "generate" or (d["kind"] == "convert" and col > 3))
        self.diff_label.setText("<br>".join(lines))
        self._show_overlay()
        self.diffed.emit(d)

    def _delta_item(self, delta, ms_a, ms_b, ratio, op_type, name, value) -> QTreeWidgetItem:
        it = QTreeWidgetItem([delta, ms_a, ms_b, ratio, op_type or "?", name])
        it.setData(0, Qt.UserRole, name)
        for col in range(4):
            it.setTextAlignment(col, Qt.AlignRight | Qt.AlignVCenter)
        if self.diff is not None and value:
            # mid tones of the diverging ramp's ends: readable on the light and the dark theme
            it.setForeground(0, QBrush(QColor("#d6604d" if value > 0 else "#4393c3")))
        return it

    def _main_view(self):
        pane = getattr(self.window, "pane", None)
        return getattr(pane, "main_view", None)

    def _show_overlay(self) -> None:
        self._set_overlay(self.overlay if self.overlay_box.isChecked() else None)

    def _set_overlay(self, overlay) -> None:
        view = self._main_view()
        if view is None:
            return
        if overlay is not None:
            view.set_overlay(overlay)
        elif view.overlay is not None and view.overlay is self._shown:
            view.set_overlay(None)  # only our own overlay goes: another dock's stays
            if hasattr(self.window, "restore_colours"):
                self.window.restore_colours()  # what the graph showed before the diff (a profile's times) is back
        self._shown = overlay
        self._legend_for(view, overlay)

    def _legend_for(self, view, overlay) -> None:
        """The graph's legend for the diff's colours (tryout 11: the graph turned red, grey and blue with no word of
        what the colours meant; only hovering a node told). Over another dock's colours it stays hidden."""
        from mnnscope.gui.legend import Legend
        if overlay is None:
            if self.legend is not None:
                self.legend.hide()
            return
        if self.legend is None or self.legend.view is not view:
            self.legend = Legend(view)
        self.legend.title, self.legend.unit, self.legend.owner = overlay.name, "ms", overlay
        self.legend.note = "blue: faster in b, red: slower in b"
        self.legend.bring_up()

    def op_index(self, name: str) -> int | None:
        """The op of the shown graph that a run's op name denotes (its name, else its id, else an output tensor)."""
        view = self._main_view()
        table = getattr(view, "table", None)
        if table is None or not name:
            return None
        # a piece MNN split off an op at run time ("/conv1/Conv_output_0_raster_0") denotes that op (its row said
        # "is not an op of the graph shown", and a CI run whose largest change was such a piece failed on it)
        for key in dict.fromkeys((name, RASTER_SUFFIX.sub("", name))):
            for seq in (table.names, table.ids):
                try:
                    return list(seq).index(key)
                except ValueError:
                    pass
            found = Overlay("find", {key: 0.0}, None).node_values(table)
            if found:
                return next(iter(found))
        return None

    def _delta_clicked(self, item, _col=0) -> None:
        name = item.data(0, Qt.UserRole)
        op = self.op_index(name) if name else None
        view = self._main_view()
        if op is not None and view is not None:
            view.reveal(op)
        elif name:
            self.window.statusBar().showMessage(f"{name} is not an op of the graph shown", 4000)

    # ----- repeat --------------------------------------------------------------------------------------
    def repeat_selected(self) -> str:
        ids = self.selected_ids()
        if len(ids) != 1:
            return "select one run"
        run = self._run(ids[0])
        return self.repeat(run) if run else "no such run"

    def repeat(self, run: dict) -> str:
        """Run `run` again with its inputs and settings: through the Profile/Compare dock when it is built and
        shows this model (its settings and the Inputs dock set from the record), else straight through the
        service on the window's work runner. Returns how ("dock", "job") or why not."""
        kind = run.get("kind")
        model = run.get("model_path")
        if kind not in ("profile", "compare"):
            return self._say(f"a {kind} run cannot be repeated from here")
        if not model or not os.path.isfile(model):
            return self._say(f"{model or 'the model'} is gone: the run cannot be repeated")
        dock = "Profile" if kind == "profile" else "Compare"
        panel = self.window.panels.get(dock)
        same = self.path is not None and os.path.realpath(self.path) == os.path.realpath(model)
        # a fix run (ops kept in float) repeats as one through the service (the dock's Run makes no fix)
        fix_run = kind == "compare" and bool((run.get("settings") or {}).get("keep_float"))
        if panel is not None and same and hasattr(panel, "apply_settings") and hasattr(panel, "run") and not fix_run:
            inputs = self.window.panels.get("Inputs")
            if inputs is not None and hasattr(inputs, "restore"):
                before = inputs.spec()
                inputs.restore(run)
                if inputs.spec() != before:   # said where the user looks (helper 105's typed text went unsaid)
                    self.window.notify(f"Repeat of run {run['id']}: the Inputs dock now holds that run's inputs "
                                       f"({inputs_from(inputs.spec())}), in place of what it held", INFO, "Runs")
            self.window.show_dock(dock)
            if kind == "compare":  # a check of a given .mnn on that file; the conversion settings of the run
                panel.repeat_record(run.get("settings") or {})
            else:
                panel.apply_settings(run.get("settings") or {})
                panel.run()
            return "dock"
        job = _repeat_profile(run) if kind == "profile" else _repeat_compare(run)
        self.status.setText(f"repeating run {run['id']}\u2026")
        self.window.runner.run_job(JOB, job, on_done=self._repeated, on_fail=self._repeat_failed)
        return "job"

    def _repeated(self, result) -> None:
        rid = result.get("run_id") if isinstance(result, dict) else None
        self.status.setText(f"repeated: run {rid}" if rid else "repeated (not recorded)")
        self.repeated.emit(result)

    def _repeat_failed(self, msg: str) -> None:
        self._say(f"the repeat failed: {msg}")
        self.failed.emit(msg)

    def _say(self, text: str) -> str:
        self.status.setText(text)
        return text

    # ----- delete --------------------------------------------------------------------------------------
    def delete_selected(self, confirm: bool = True) -> bool:
        ids = self.selected_ids()
        if not ids:
            return False
        if confirm:
            n = len(ids)
            more = " \u2026" if n > 10 else ""
            ask = QMessageBox.question(
                self, "Delete runs", f"Delete {n} run{'s' if n != 1 else ''} ({', '.join(map(str, ids[:10]))}{more})"
                " and the run folders only they use?",
                QMessageBox.Yes | QMessageBox.Cancel, QMessageBox.Cancel)
            if ask != QMessageBox.Yes:
                return False
        self._clear_diff()
        self.status.setText("deleting\u2026")
        self._deletes.start(_delete, ids, on_done=self._deleted, on_fail=self._list_failed, name="runs delete")
        return True

    def _deleted(self, out: dict) -> None:
        if out["errors"]:
            self.window.statusBar().showMessage("; ".join(out["errors"])[:300], 8000)
        self.refresh()


# ----- the headless twin: `mnnscope view MODEL --runs-diff A,B --screenshot OUT.png` (gui/viewcmd.py) --------------
def run_ids(text: str) -> list[int]:
    """argparse type of --runs-diff: "3,5" -> [3, 5]."""
    import argparse
    try:
        ids = [int(t) for t in text.split(",")]
    except ValueError:
        ids = []
    if len(ids) != 2:
        raise argparse.ArgumentTypeError(f"--runs-diff wants two run ids such as 3,5 (`mnnscope runs` lists them), "
                                         f"got '{text}'")
    return ids


def add_view_options(parser) -> None:
    parser.add_argument("--runs-diff", type=run_ids, metavar="ID1,ID2",
                        help="with --screenshot: the Runs dock comparing these two runs, the change per op drawn "
                             "over the graph")


def show_runs_diff(win, ids: list[int], timeout_s: float = 120.0) -> str | None:
    """Drive the window's Runs dock as a user would (list, select the two runs, wait for the diff and its
    overlay); None when shown, else why not."""
    from PySide6.QtCore import QEventLoop
    panel = win.panels.get("Runs")
    if panel is None:
        return "the Runs dock is not built"
    win.show_dock("Runs")
    loop = QEventLoop()
    state: dict = {"error": None, "step": "list"}
    tick = QTimer()
    tick.setInterval(50)

    def step():
        if panel.busy:
            return
        have = {r["id"] for r in panel.runs}
        if state["step"] == "list":
            if not set(ids) <= have and panel.scope.currentIndex() != 2:
                panel.scope.setCurrentIndex(2)  # runs of another model (or another version): list every model
                return
            missing = [i for i in ids if i not in have]
            if missing:
                state["error"] = f"no run {missing[0]} in the run store ({RunStore().path})"
                loop.quit()
                return
            state["step"] = "diff"
            panel.select_runs(ids)
        elif panel.diff is not None or state["error"]:
            loop.quit()

    def failed(msg):
        state["error"] = msg
        loop.quit()

    panel.failed.connect(failed)
    tick.timeout.connect(step)
    tick.start()
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()
    tick.stop()
    panel.failed.disconnect(failed)
    if state["error"]:
        return state["error"]
    return None if panel.diff is not None else "timed out before the diff"
