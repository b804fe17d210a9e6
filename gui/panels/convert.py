"""The Convert dock (Model > Convert to MNN shows it): every converter setting, grouped, with its help
(convertform.py); pre-flight; the conversion with its log streamed live (and read to the end from the log
file when the run ends); the diagnostics as a list whose items select their node on the graph; the bug-report
bundle in a viewer of its own; on success the .mnn opened side by side, node map linked. "Reconvert and
re-run" converts again with the settings shown and repeats the Profile or Compare dock's last run, showing
the deltas against the run before (convertrerun.py).

The default output never replaces a file without saying so (gui/convertoutput.py): a free name, with a
Replace button for the existing one. A failure on the model the window shows selects and centres its node.

The converter can crash (SIGSEGV) on bad graphs: a conversion runs as a job of the window's runner host
(`run_job`: events, cancel) but in a runner process of its own, started for it and stopped after it, so a
crash costs nothing but the conversion. Cancel ends that runner (native code cannot listen), which takes
well under a second.

Why one module past 400 lines (as the dialog it replaces): the form, the run's states (idle, converting,
cancelling, done) and the outcome all drive the same widgets; the settings form lives in convertform.py, the
words of an outcome in gui/convertoutcome.py, the output's naming in gui/convertoutput.py, the bug-report
viewer in gui/reportviewer.py, Reconvert and re-run in convertrerun.py, the headless twin in convertview.py.
"""
from __future__ import annotations

import collections
import html
import os
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFontDatabase, QKeySequence, QShortcut
from PySide6.QtWidgets import (QCheckBox, QHBoxLayout, QLabel, QLineEdit, QListWidget, QListWidgetItem,
                               QPlainTextEdit, QProgressBar, QPushButton, QScrollArea, QSplitter, QVBoxLayout,
                               QWidget)

from mnnscope.gui import filedialog
from mnnscope.gui import settings as cfg
from mnnscope.gui.convertoutcome import log_summary, outcome_html, outcome_text
from mnnscope.gui.convertoutput import OutputChoice, conflict_note, output_name, settings_tag
from mnnscope.gui.dockheight import LeastHeightColumn, grow_bottom_dock
from mnnscope.gui.menus import add_action
from mnnscope.gui.shelf import Shelf
from mnnscope.gui.notify import ERROR, INFO, WARNING
from mnnscope.gui.panels.convertrerun import PANELS, Rerun
from mnnscope.gui.panels.convertform import OneLineLabel, SettingsForm, settings_words
from mnnscope.gui.wraplabel import WrappedLabel
from mnnscope.inspector.convert.checks import warning_node
from mnnscope.inspector.convert.service import new_run_dir, preflight, run_convert
from mnnscope.inspector.convert.settings import ConvertSettings, settings_without_effect
from mnnscope.inspector.process.client import Cancelled, RunnerClient

# each model's own settings, as {absolute path: ConvertSettings JSON}, the most recently set last (until 2026-12-04
# one set for every model, under "convert/settings", no longer read: two new-user tries ticked fp16 to convert one
# model, and every later model's profiles, comparisons and sweeps ran fp16 conversions)
BY_MODEL_KEY = "convert/by_model"
BY_MODEL_MAX = 200  # models remembered
UNSEEN_MAX = 2000                   # log-file lines added at the end at most (the widget keeps 5000)
NODE = Qt.UserRole
LOG_LINES = 5  # lines of the log a finished conversion makes room for, as far as the window lets its dock grow
MID_SPACING = 3  # px between the middle column's rows (the style's 6 left the log two lines at 1024x700)
# where the reconversion goes as the Output line says (over the profiled .mnn when the profile to repeat timed that
# file): "over the last output" contradicted "the next conversion writes cnn.1.mnn" just above it (a new-user try)
RERUN_TIP = ("convert again with these settings (to the Output file; over the profiled .mnn when the last profile "
             "timed that file), repeat the last profile or comparison, and show what changed")


def convert_job(src: str, dst: str, settings: ConvertSettings, bundle: bool, python: str | None, sink):
    """The body of a conversion job (`run_job`): one conversion in a runner of its own, always stopped
    before returning. Its events go to `sink` (a deque the dock drains every 100 ms: a big model's log is
    thousands of lines, and a queued signal per line kept the UI thread so busy that a cancelled job took
    4 s to end); all but the log lines also go to the runner host (its status line)."""
    def job(_work, on_event, cancelled):
        client = RunnerClient(python=python, grace=0.2)

        def event(kind, payload):
            sink.append((kind, payload or {}))
            if kind != "log":
                on_event(kind, payload)
            if cancelled():
                # A cancel that landed between two runner requests (client.cancel() is a no-op then) stops
                # the operation here, at its next event.
                raise Cancelled()

        cancelled.set_hook(client.cancel)
        try:
            run = new_run_dir("convert")
            return run_convert(src, dst, settings, client=client, on_event=event, run_dir=run,
                               bundle_dir=run / "bug-report" if bundle else None)
        finally:
            if cancelled():
                client.kill()
            client.stop()
    return job


class ConvertPanel(QWidget):
    """`conversion_done` carries "ok", "failed", "cancelled" or "error" (the job itself failed);
    `converted(dict)` the ConvertResult's JSON plus "output"; `rerun_done(dict)` the deltas of a Reconvert and
    re-run. `last_result` holds the ConvertResult."""

    conversion_done = Signal(str)
    converted = Signal(dict)
    rerun_done = Signal(dict)

    # Hiding the dock does not stop a conversion: its outcome still arrives as a notification.
    def __init__(self, window):
        super().__init__(window)
        self.window_ = window
        self.src: str | None = None
        self.last_result = None
        self._marked: list[int] = []  # the failing nodes this dock outlined on the graph
        self.last_notification = None
        self.last_preflight = None
        self.last_deltas = None
        self.choice = OutputChoice()
        self._kept = Shelf()  # source -> its last conversion's result, shown again when it is opened again
        self._shown_tag: str | None = ""  # settings_tag of the output name the dock chose (None: it chose none)
        self._named: OutputChoice | None = None  # the dock's last named choice, while conflicting settings name none
        self.report_viewer = None
        self._converting = False
        self._gen = 0
        self._events: collections.deque = collections.deque()
        self._drain = QTimer(self)
        self._drain.setInterval(100)
        self._drain.timeout.connect(self._drain_events)
        self.rerun = Rerun(window, self)
        self.rerun.say.connect(self._show_deltas)
        self.rerun.done.connect(self._rerun_finished)
        self.rerun.changed.connect(self._check)
        self._build()
        if hasattr(window, "panes_changed"):
            window.panes_changed.connect(self._sync_side_btn)
            window.load_failed.connect(lambda *_: self._sync_side_btn())
        QTimer.singleShot(0, self, self.rerun.watch)
        self.set_source(None)

    # construction
    def _build(self) -> None:
        split = QSplitter(Qt.Horizontal, self)
        self.form = SettingsForm()
        self.form_scroll = scroll = QScrollArea()
        scroll.setWidget(self.form)
        scroll.setWidgetResizable(True)
        scroll.setMinimumWidth(300)
        # Each model keeps its own settings (BY_MODEL_KEY; tryout 8: GELU = exact erf, set for PP-OCR, was still on for
        # the decoder without a word): what differs from the defaults is named above the form, with a reset.
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        kept = QHBoxLayout()
        # one line whatever it names (the whole of it in its tooltip): word-wrapped in a room of two lines, it grew to
        # four as settings changed and pushed the form down under the pointer, a click aimed at a field landing on
        # the next one (a new user at 1024x700; tryout 71 before it, see _check)
        self.not_default = OneLineLabel()
        self.not_default.setStyleSheet("color: #8a5a00;")
        self.defaults_btn = QPushButton("Defaults")
        self.defaults_btn.setToolTip("set every conversion setting back to the converter's defaults")
        self.defaults_btn.clicked.connect(lambda: self.set_settings(ConvertSettings()))
        kept.addWidget(self.not_default, 1)
        kept.addWidget(self.defaults_btn, 0)
        ll.addLayout(kept)
        self.find_setting = QLineEdit()
        self.find_setting.setPlaceholderText("Find a setting: lstm, fp16, gelu, block \u2026")
        self.find_setting.setClearButtonEnabled(True)
        self.find_setting.setToolTip("Show only the settings whose name, flag or help holds these words")
        self.find_setting.textChanged.connect(self._find_setting)
        ll.addWidget(self.find_setting)
        ll.addWidget(scroll, 1)
        split.addWidget(left)
        # aliases for the settings changed most (and the tests that change them)
        w = self.form.widgets
        self.fp16, self.bits, self.block, self.opt = (w["fp16"], w["weight_quant_bits"], w["weight_quant_block"],
                                                      w["optimize_level"])
        self.fuse, self.static, self.custom = w["transformer_fuse"], w["save_static_model"], w["allow_custom_op"]

        mid = LeastHeightColumn()
        lay = QVBoxLayout(mid)
        lay.setContentsMargins(4, 0, 4, 0)
        lay.setSpacing(MID_SPACING)
        self.title = QLabel()
        self.title.setTextFormat(Qt.RichText)
        self.title.setWordWrap(True)
        lay.addWidget(self.title)
        out = QHBoxLayout()
        self.output = QLineEdit()
        self.output.setToolTip("where the .mnn goes (a failed conversion leaves nothing here)")
        self.browse_btn = QPushButton("Browse\u2026")
        self.browse_btn.clicked.connect(self._browse)
        out.addWidget(QLabel("Output"))
        out.addWidget(self.output, 1)
        out.addWidget(self.browse_btn)
        lay.addLayout(out)
        # The output's note and the problems come and go as the Output field is edited: they sit below the
        # buttons, so that nothing above the buttons changes height and the buttons stay where they are (above
        # them, a note that went away moved Convert up ~20 px under a click aimed at it; tryout 8)
        # the note the column's whole width, its Replace button under it at the right: beside it at 1024x700 the
        # note had a third of the column, wrapped to six lines and was cut at the top and bottom (tryout 19)
        note = QVBoxLayout()
        note.setSpacing(2)
        self.output_note = WrappedLabel()
        self.output_note.setWordWrap(True)
        self.replace_btn = QPushButton("Replace")
        self.replace_btn.setToolTip("write over the existing file instead")
        self.replace_btn.clicked.connect(self.replace_existing)
        self.replace_btn.hide()
        note.addWidget(self.output_note)
        note.addWidget(self.replace_btn, 0, Qt.AlignRight)
        self.bundle = QCheckBox("Write a bug-report bundle on failure (reduced model, command, log)")
        self.bundle.setChecked(True)
        lay.addWidget(self.bundle)
        self.problems = QLabel()
        self.problems.setWordWrap(True)
        self.problems.setStyleSheet("color: #d64545;")
        buttons = QHBoxLayout()
        self.preflight_btn = QPushButton("Pre-flight")
        self.preflight_btn.setToolTip("check the model against this MNN without converting: unsupported ops by "
                                      "node, custom domains, external data, undefined inputs")
        self.preflight_btn.clicked.connect(self.run_preflight)
        self.convert_btn = QPushButton("Convert")
        self.convert_btn.setDefault(True)  # Return in the dock converts too (the shortcut below)
        self.convert_btn.setToolTip("convert with the settings shown (Return)")
        self.convert_btn.clicked.connect(self.start)
        self.rerun_btn = QPushButton("Reconvert and re-run")
        self.rerun_btn.setToolTip(RERUN_TIP)
        self.rerun_btn.clicked.connect(self.reconvert_and_rerun)
        # "Hide", not "Close": beside Convert, "Close" read as closing the model (a new-user try); it hides the dock
        self.cancel_btn = QPushButton("Hide")
        self.cancel_btn.setToolTip("hide the Convert dock (Model \u25b8 Convert to MNN brings it back)")
        self.cancel_btn.clicked.connect(self.cancel_or_close)
        for b in (self.preflight_btn, self.convert_btn, self.rerun_btn):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_btn)
        lay.addLayout(buttons)
        lay.addLayout(note)
        lay.addWidget(self.problems)
        prog = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(140)
        self.stage = QLabel("")
        prog.addWidget(self.progress)
        prog.addWidget(self.stage, 1)
        lay.addLayout(prog)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(5000)
        self.log.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.log.setPlaceholderText("converter log")
        # the log follows its end while it is shown there (as `tail -f`), through resizes too: laid out again after
        # the last lines came (the column in its scroll area settles later), it stopped short of the outcome
        bar = self.log.verticalScrollBar()
        self._log_at_end = True
        bar.valueChanged.connect(lambda v, b=bar: setattr(self, "_log_at_end", v >= b.maximum()))
        bar.rangeChanged.connect(lambda lo, hi, b=bar: self._log_at_end and b.setValue(hi))
        lay.addWidget(self.log, 1)
        # in a scroll area: at 1024x700 the column's words and buttons need more height than the dock has, and
        # squeezed, the output's note was cut at the top and bottom (tryout 19); the log gives up its room first
        self.log.setMinimumHeight(self.log.fontMetrics().lineSpacing() * 3)
        self.mid_scroll = mid_scroll = QScrollArea()
        mid_scroll.setWidget(mid)
        mid_scroll.setWidgetResizable(True)
        mid_scroll.setFrameShape(QScrollArea.NoFrame)
        mid_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        split.addWidget(mid_scroll)

        # the Diagnostics header, under it the diagnostics above the outcome and the deltas; without diagnostics
        # their pane is hidden, the splitter's handle with it (_diagnostics_shown)
        column = QWidget()
        cl = QVBoxLayout(column)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.setSpacing(2)
        self.diag_head = QLabel()
        self.diag_head.setContentsMargins(4, 0, 0, 0)
        cl.addWidget(self.diag_head)
        self.right_split = right = QSplitter(Qt.Vertical)
        cl.addWidget(right, 1)
        self.diag_pane = top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(4, 0, 0, 0)
        # the column as wide with or without diagnostics (its header's words set it; shorter ones gave its width to
        # the middle column, and Close left a 1024 px window on an 800 px screen)
        self.diag_head.setText("<b>Diagnostics</b> <small>(click one: its node on the graph)</small>")
        self.diag_head.setMinimumWidth(self.diag_head.sizeHint().width())
        self.diagnostics = QListWidget()
        self.diagnostics.setWordWrap(True)
        self.diagnostics.setSpacing(3)
        self.diagnostics.setAlternatingRowColors(True)
        self.diagnostics.itemClicked.connect(self._diagnostic_clicked)
        self.diagnostics.itemActivated.connect(self._diagnostic_clicked)
        self.diagnostics.setMinimumHeight(12)  # (a scroll area's own minimum kept an empty list ~70 px tall)
        dm = self.diagnostics.model()
        for sig in (dm.rowsInserted, dm.rowsRemoved, dm.modelReset):
            sig.connect(lambda *_: self._diagnostics_shown())
        tl.addWidget(self.diagnostics, 1)
        right.addWidget(top)
        self._diagnostics_shown()
        bottom = QWidget()
        rl = QVBoxLayout(bottom)
        rl.setContentsMargins(4, 0, 0, 0)
        self.result_label = QLabel()
        self.result_label.setWordWrap(True)
        self.result_label.setTextFormat(Qt.RichText)
        self.result_label.setTextInteractionFlags(Qt.TextSelectableByMouse | Qt.LinksAccessibleByMouse)
        self.result_label.linkActivated.connect(
            lambda href: href.startswith("node:") and self.select_node(href[len("node:"):]))
        self.result_label.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.deltas = QLabel()
        self.deltas.setWordWrap(True)
        self.deltas.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.deltas.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.deltas.hide()
        outcome = QWidget()
        ol = QVBoxLayout(outcome)
        ol.setContentsMargins(0, 0, 0, 0)
        ol.addWidget(self.result_label)
        ol.addWidget(self.deltas)
        ol.addStretch(1)
        self.outcome_scroll = scroll_out = QScrollArea()
        scroll_out.setWidget(outcome)
        scroll_out.setWidgetResizable(True)
        scroll_out.setFrameShape(QScrollArea.NoFrame)
        rl.addWidget(scroll_out, 1)
        acts = QHBoxLayout()
        self.side_btn = QPushButton("Open side by side")
        self.side_btn.setToolTip("open the converted .mnn beside the ONNX model, with linked selection")
        self.side_btn.clicked.connect(self.open_side_by_side)
        self.node_btn = QPushButton("Show node")
        self.node_btn.setToolTip("select and centre the failing node in the window's graph")
        self.node_btn.clicked.connect(self.show_failing_node)
        self.report_btn = QPushButton("Open bug report")
        self.report_btn.setToolTip("read the bug-report bundle (report, command, logs) and copy its path")
        self.report_btn.clicked.connect(self.open_bug_report)
        for b in (self.side_btn, self.node_btn, self.report_btn):
            acts.addWidget(b)
            b.hide()
        acts.addStretch(1)
        rl.addLayout(acts)
        right.addWidget(bottom)
        split.addWidget(column)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setStretchFactor(2, 2)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.addWidget(split)
        # Return converts (a dock has no default button of its own), only with the focus inside this dock.
        # setContext, not the constructor's context=: PySide6 6.11 drops that keyword with a callable, leaving a
        # window-wide shortcut that took Return from the Find bar and reconverted (tryout 6).
        self.return_key = QShortcut(QKeySequence(Qt.Key_Return), self, self._return_pressed)
        self.return_key.setContext(Qt.WidgetWithChildrenShortcut)
        self._set_running(False)
        self.form.changed.connect(self._check)
        self.form.changed.connect(self._retag)
        self.output.textChanged.connect(self._check)

    def add_actions(self, menu) -> None:
        self.rerun_action = add_action(self.window_, menu, "Reconvert and Re-run", self.reconvert_and_rerun,
                                       tip="convert again with the Convert dock's settings and repeat the last "
                                           "profile or comparison, showing the deltas")
        self._sync_rerun_action()

    def _sync_rerun_action(self) -> None:
        """Run > Reconvert and Re-run as the dock's button: greyed with an .mnn open (nothing to convert, tryout 11)
        and until a profile or comparison ran (two new users found it enabled beside the greyed button)."""
        action = getattr(self, "rerun_action", None)
        if action is not None:
            action.setEnabled(bool(self.src) and self.rerun_btn.isEnabled())
            action.setToolTip(self.rerun_btn.toolTip())

    def _return_pressed(self) -> None:
        if self.convert_btn.isEnabled():
            self.start()

    def _find_setting(self, text: str) -> None:
        shown = self.form.filter(text)
        self.find_setting.setStyleSheet("" if shown or not text.strip() else "color: #b00020;")  # none: red text

    # settings <-> widgets
    def settings(self) -> ConvertSettings:
        return self.form.settings()

    def set_settings(self, s: ConvertSettings) -> None:
        self.form.set_settings(s)
        self._check()
        self.remember()

    @classmethod
    def settings_for(cls, path: str | None) -> ConvertSettings:
        """The settings last set for the model at `path`; the converter's defaults for one never set (or of an
        older version)."""
        raw = cfg.by_model(BY_MODEL_KEY).get(os.path.abspath(path)) if path else None
        try:
            return ConvertSettings.from_json(raw) if raw else ConvertSettings()
        except (ValueError, TypeError):
            return ConvertSettings()

    def remember(self) -> None:
        """The form's settings, as this model's (nothing while no .onnx is open); the defaults are forgotten."""
        if not self.src:
            return
        try:
            s = self.settings()
        except (ValueError, TypeError):
            return  # a field the form cannot read yet: kept as last remembered
        cfg.set_by_model(BY_MODEL_KEY, self.src, s.to_json() if s.describe() else None, most=BY_MODEL_MAX)

    def set_source(self, path: str | None) -> None:
        """The .onnx to convert (None: nothing to convert): the previous run's log, outcome, diagnostics and
        Reconvert and re-run's deltas go, they were another model's (or an earlier try's). For another model the
        run to repeat goes too: it measured the previous model (tryout 8: decoder.onnx's dock still showed
        PP-OCR's "fp32: worst output rel_l2 0.00333 → 0.00333")."""
        new = os.path.abspath(path) if path else None
        if new != self.src:
            self.rerun.forget()
            self.remember()  # the model left keeps what was set for it
            self.src = None  # (nothing remembered while the form changes over)
            # this one gets its own (the defaults for a model never set); no model, the defaults (after File > Close
            # Model the form said "Changed from the defaults (for this model): int8" with no model open)
            self.form.set_settings(self.settings_for(new) if new else ConvertSettings())
            # from the top: the form kept the place the other model's was scrolled to (a new-user try), and the
            # other model's search over the settings (helper 117)
            self.find_setting.clear()
            self.form_scroll.verticalScrollBar().setValue(0)
        self.src = new
        if self.src:
            # the source's folder beside its name, before the arrow: after "-> MNN" its path read as the output's
            # (tryout 18)
            self.title.setText(f"<b>{html.escape(Path(self.src).name)}</b> <small>in "
                               f"{html.escape(str(Path(self.src).parent))}</small> \u2192 MNN")
            self.title.setToolTip(f"converting {self.src}; the output is the Output field's")
            self._shown_tag, self._named = self._tag(), None
            self._set_choice(OutputChoice.for_source(self.src, self._shown_tag) if self._shown_tag is not None else
                             OutputChoice())  # settings kept for it in conflict: no name until one is chosen
        else:
            self.title.setText("<i>Open an .onnx model to convert it</i>")
            self._set_choice(OutputChoice())
        self._clear_outcome()
        kept = self._kept.get(new)
        if kept is not None:  # its last conversion's outcome, log and diagnostics come back with the model (a
            # new user reopened the det model and read "none so far" over an empty log)
            self._show_kept(kept)
        self.deltas.clear()
        self.deltas.hide()
        self.last_deltas = None
        self._sync_rerun_action()

    def model_changed(self, path, table, tree) -> None:
        """The window shows another model: an idle dock follows it (a running conversion keeps its model)."""
        self.rerun.watch()
        if self._converting:
            return
        self.set_source(path if table is not None and table.format == "onnx" else None)

    def _clear_outcome(self) -> None:
        self.last_result = None
        self.last_preflight = None
        self.log.clear()
        self.result_label.clear()
        self.diagnostics.clear()
        for b in (self.side_btn, self.node_btn, self.report_btn):
            b.hide()

    def _tag(self) -> str | None:
        """settings_tag of the settings in the form ("" while they cannot be read, None while they ask for two
        precisions)."""
        try:
            return settings_tag(self.settings())
        except (ValueError, TypeError):
            return ""

    def _conflict(self) -> str:
        """conflict_note of the settings in the form: what the Output field says while they name no output."""
        try:
            return conflict_note(self.settings())
        except (ValueError, TypeError):
            return ""

    def _retag(self) -> None:
        """The dock's own output name follows the precision chosen (<stem>.fp16.mnn, <stem>.int8w.mnn): a user's
        conversions were <stem>.1.mnn and .2.mnn, nothing saying which was fp16 and which int8. A name the user
        typed or browsed to stays. Settings that ask for two precisions (fp16 ticked beside int8w) name none: the
        field is emptied, saying why (it kept "<stem>.int8w.mnn", named from the earlier setting: a new user's try),
        and the name comes back with the precision kept."""
        if not self.src or self._converting or self.output.text().strip() != self.choice.auto:
            return
        tag = self._tag()
        if tag == self._shown_tag:
            return
        self._shown_tag = tag
        if tag is None:
            if self.choice.auto:
                self._named = self.choice  # its folder, for the name after the conflict
            self._set_choice(OutputChoice("", "", None, self.choice.written))
            return
        was = self.choice if self.choice.auto or self._named is None else self._named
        if was.fixed_note:  # a run folder (a sample, a read-only folder): the same folder, the name follows
            choice = OutputChoice(str(Path(was.auto).parent / output_name(Path(self.src).stem, tag)),
                                  was.fixed_note, None, self.choice.written)
        else:
            choice = OutputChoice.for_source(self.src, tag)
            choice.written = self.choice.written
        self._set_choice(choice)

    def _set_choice(self, choice: OutputChoice) -> None:
        self.choice = choice
        self.output.setText(choice.auto)
        self._check()

    def replace_existing(self) -> None:
        """The user's explicit choice: write over the existing file the default stepped over."""
        if self.choice.dodged:
            self.output.setText(self.choice.dodged)

    def _browse(self) -> None:
        # Qt's save dialog asks before choosing an existing file: that is the user's explicit "replace"
        path = filedialog.ask_save_file(self, "Converted model", self.output.text(), "MNN (*.mnn)")
        if path:
            self.output.setText(path)

    def _source_op_types(self) -> set:
        """The op types of the model to convert, where it is the one open in the window (else none known)."""
        t = getattr(self.window_.pane, "table", None)
        if t is None or not self.src or os.path.abspath(t.path) != self.src:
            return set()
        return set(t.op_types)

    def problems_now(self) -> list[str]:
        problems = list(self.settings().validate())
        out = self.output.text().strip()
        if not self.src:
            problems.append("no .onnx model to convert")
        if not out and not self._conflict():  # (conflicting settings name no output: validate() says why)
            problems.append("choose an output file")
        elif self.src and os.path.abspath(out) == self.src:
            problems.append("the output must not be the model itself")
        return problems

    def _check(self) -> None:
        try:
            # named as the form shows them ("fp16 weights", not "fp16=True": a new user could not find the raw keys)
            changed = settings_words(self.settings())
            types = self._source_op_types()
            idle = settings_without_effect(self.settings(), types) if types else []
        except (ValueError, TypeError):
            changed, idle = [], []
        # the row stays, "the converter's defaults" when nothing differs: appearing on the first change, it moved the
        # form down under the pointer, and the path meant for Calibration folder went into int8 samples (tryout 71)
        head = ("Changed from the defaults (for this model): " + ", ".join(changed) if changed
                else "The converter's defaults (for this model)")
        # the line drawn leaves the words its tooltip has out (at 1024x700 the column shows ~35 characters, and
        # the head alone took them): what changed first, a warning marked at its start
        line = ("\u26a0 " if idle else "") + ("Changed: " + ", ".join(changed) if changed else
                                             "The converter's defaults")
        self.not_default.set_text(head + "".join(f"\n\u26a0 {x}" for x in idle),
                                  line + "".join(f"  \u26a0 {x}" for x in idle))
        self.not_default.setStyleSheet("color: #8a5a00;" if changed or idle else "color: palette(mid);")
        self.defaults_btn.setEnabled(bool(changed))
        problems = self.problems_now()
        self.problems.setText("\n".join(problems))
        self.problems.setVisible(bool(problems))
        note, offer = self.choice.note(self.output.text())
        if note and self._same_as_written():
            # converting again gives the same file under a new name (a new-user try ended with cnn.1.mnn, a copy)
            note = note.rstrip().rstrip(".") + ". The settings are those it was converted with: converting again " \
                "would give the same file."
        self.output_note.setText(note)
        self.output_note.setVisible(bool(note))
        self.output.setPlaceholderText(self._conflict())
        if self.choice.dodged:
            self.replace_btn.setText(f"Replace {Path(self.choice.dodged).name}")
        self.replace_btn.setVisible(offer and not self._converting)
        self.convert_btn.setEnabled(not problems and not self._converting)
        # nothing to repeat yet: greyed, the tooltip says what to run first (a new user clicked it before any run and
        # read only "run a profile or a comparison first" in the Diagnostics column)
        self.rerun.watch()
        repeatable = self.rerun.last_run is not None
        self.rerun_btn.setEnabled(not problems and not self._converting and repeatable)
        self.rerun_btn.setToolTip(RERUN_TIP if repeatable else
                                  f"{RERUN_TIP}\n\nNot yet: run a profile (Run \u25b8 Profile) or a comparison (the "
                                  f"Compare dock) of this model first; that run is what gets repeated")
        self._sync_rerun_action()
        self.preflight_btn.setEnabled(bool(self.src) and not self._converting)

    # running
    @property
    def busy(self) -> bool:
        return self._converting

    def convert(self) -> bool:
        return self.start()

    def start(self) -> bool:
        """Start converting with the settings shown (False when they are unusable)."""
        if self.problems_now() or self._converting:
            return False
        s = self.settings()
        self.remember()
        self._clear_outcome()
        self._unmark()
        if self.rerun.pending is None:  # a plain Convert: an earlier Reconvert and re-run's before/after is not its
            self.deltas.clear()         # outcome (tryout 18 read it under a plain conversion)
            self.deltas.hide()
            self.last_deltas = None
        self._gen += 1
        self._events = collections.deque()  # a cancelled job may still append to the old one
        dst = os.path.abspath(self.output.text().strip())
        self._converting = True
        self.window_.runner.run_job("convert", convert_job(self.src, dst, s, self.bundle.isChecked(),
                                                           self.window_.runner.python, self._events),
                                    on_done=lambda r, g=self._gen: self._done(r, g),
                                    on_fail=lambda m, g=self._gen: self._failed(m, g))
        self._set_running(True, "starting the converter's runner")
        return True

    def _same_as_written(self) -> bool:
        """Whether the last conversion (of this model: another model clears it) succeeded with the settings shown now."""
        r = self.last_result
        if r is None or not r.ok or not r.output or r.settings is None or not self.choice.written:
            return False
        try:
            return self.settings().to_json() == r.settings.to_json()
        except (ValueError, TypeError):
            return False

    def cancel_or_close(self) -> None:
        if self._converting:
            self.cancel()
        else:
            dock = self.window_.docks.get("Convert")
            if dock is not None:
                dock.hide()

    def cancel(self) -> None:
        """Stop the conversion: the job's token ends its runner; the worker thread finishes on its own, shortly."""
        if not self._converting:
            return
        self.window_.runner.cancel_job("convert")
        self._drain_events()
        self._converting = False
        self._gen += 1  # the cancelled job's result is dropped
        self._events = collections.deque()  # and whatever it still says
        self.rerun.cancel()
        self._set_running(False)
        self._show_outcome("Cancelled", "#3f75ad", ["the converter's runner was ended; nothing was written"])
        self.log.appendPlainText("\u2014 cancelled: the converter's runner was ended")
        self.window_.notify("conversion cancelled", INFO, Path(self.src).name)
        self.conversion_done.emit("cancelled")

    def _set_running(self, on: bool, stage: str = "") -> None:
        for w in (self.form, self.output, self.browse_btn, self.bundle, self.replace_btn):
            w.setEnabled(not on)
        self.progress.setVisible(on)
        self.stage.setVisible(on)
        self.stage.setText(stage)
        self.cancel_btn.setText("Cancel" if on else "Hide")
        self.cancel_btn.setToolTip("stop the conversion (ends the converter's runner)" if on else
                                   "hide the Convert dock (Model \u25b8 Convert to MNN brings it back)")
        if on:
            self._drain.start()
            self.convert_btn.setEnabled(False)
            self.rerun_btn.setEnabled(False)
            self._sync_rerun_action()
            self.preflight_btn.setEnabled(False)
        else:
            self._drain.stop()
            self._check()

    def _show_outcome(self, title: str, colour: str, lines: list[str]) -> None:
        self.stage.setText("")
        body = "<br>".join(html.escape(x) for x in lines if x)
        self.result_label.setText(f"<b style='color:{colour}'>{title}</b> \u2014 {body}")
        self._outcome_in_view()
        QTimer.singleShot(0, self, self._room_for_outcome)

    def _diagnostics_shown(self) -> None:
        """An empty Diagnostics list is hidden, its header saying "none": the outcome takes the room (it sat in a box
        of three lines under an empty list at 1024x700: tryout 20). Shrunk to a sliver instead, the empty list was
        drawn as a thin empty bar under "Diagnostics none" (a new user at 1024x700); before any run, an empty box.
        The header's least width keeps the column as wide without the list."""
        try:
            n = self.diagnostics.count()
        except RuntimeError:  # (the list's model says it is emptied while the dock is destroyed)
            return
        self.diag_pane.setVisible(bool(n))
        self.diagnostics.setVisible(bool(n))
        if not n:  # (a hidden widget keeps the geometry it was last laid out at: nothing of it is in the column)
            self.diagnostics.resize(self.diagnostics.width(), 0)
        # "none so far" above a finished conversion's outcome read as if more were to come (a new-user try)
        done = (self.last_result is not None or self.last_preflight is not None) and not self._converting
        self.diag_head.setText("<b>Diagnostics</b> <small>(click one: its node on the graph)</small>" if n else
                               "<b>Diagnostics</b> <small>none</small>" if done else
                               "<b>Diagnostics</b> <small>none so far</small>")
        QTimer.singleShot(0, self, self._room_for_outcome)

    def _room_for_outcome(self) -> None:
        """No diagnostics: their pane is hidden and the outcome takes the column (it sat in a box of three lines under
        an empty Diagnostics list: tryout 20); with some again, they get half of it back, else share it as the user
        left it."""
        if self.right_split.count() != 2:
            return
        top, bottom = self.right_split.sizes()
        if not top + bottom:
            return
        if self.diagnostics.count() and top <= self.diagnostics.minimumHeight() + 2:  # diagnostics again: half back
            self.right_split.setSizes([(top + bottom) // 2, (top + bottom) - (top + bottom) // 2])

    def _log_height(self, lines: int) -> int:
        """The log's height that shows `lines` lines of it."""
        log = self.log
        return (log.fontMetrics().lineSpacing() * lines + 2 * log.frameWidth()
                + int(2 * log.document().documentMargin()) + 2)

    def _room_for_log(self) -> None:
        """After a conversion the bottom dock grows until the log shows LOG_LINES lines, as far as the window lets a
        bottom dock grow (the graph keeps its share; as the Profile dock makes room for its rows): at 1024x700 the
        output's note and its Replace button came under the buttons and left the log at one line of height, the
        column scrolling (a new user's try)."""
        mid = self.mid_scroll
        least = mid.widget().heightForWidth(mid.viewport().width())  # the column with the log at its least
        grow_bottom_dock(self.window_, "Convert", self,
                         least - self.log.minimumHeight() + self._log_height(LOG_LINES) - mid.viewport().height())

    def _outcome_in_view(self) -> None:
        """The outcome just written is at the top of its scroll area: scroll there (Pre-flight's answer went
        above the deltas scrolled to, out of view, and the button seemed to do nothing; tryout 8)."""
        self.outcome_scroll.verticalScrollBar().setValue(0)

    def _drain_events(self) -> None:
        lines = []
        while self._events:
            kind, payload = self._events.popleft()
            if kind == "log" and payload.get("text"):
                lines.append(str(payload["text"]))
            elif kind == "progress" and payload.get("message"):
                self.stage.setText(str(payload["message"]))
                lines.append(f"\u2014 {payload['message']}")
        if lines:
            self.log.appendPlainText("\n".join(lines))

    def _done(self, result, gen: int) -> None:
        if gen != self._gen:
            return  # a cancelled conversion's result
        self._drain_events()
        self._converting = False
        self.last_result = result
        if self.src:  # shown again when this model is opened again (gui/shelf.py)
            self._kept.put(self.src, result)
        self._set_running(False)
        message, severity, hint = outcome_text(result)
        self.stage.setText("")
        self.result_label.setText(outcome_html(result))
        self._outcome_in_view()
        self._complete_log(result)
        self._list_diagnostics(result.errors, result.unsupported_ops, result.warnings)
        actions = []
        beside = bool(result.ok and result.output and self._shows_source(quiet=True))  # opened beside below
        if result.ok:
            if not beside:  # the pane beside shows it already: a button to open it again only misleads
                actions.append(("Open side by side", self.open_side_by_side))
            tag = self._tag()
            if self.output.text().strip() == self.choice.auto and result.output and tag is not None:
                # the next conversion must not silently replace this one: a fresh name, Replace on offer
                self._shown_tag = tag
                self._set_choice(self.choice.after_success(self.src, result.output, tag))
            else:
                self.choice.written = result.output
                self._check()
        else:
            if self._failing_node(result) is not None:
                actions.append(("Show node", self.show_failing_node))
                self.node_btn.show()
                self.show_failing_node()  # marked on the graph now, not only when asked
            if result.bundle:
                # this conversion's bundle, whatever converts later (helper 117 pressed the button on the card of a
                # failed conversion after a later one had succeeded: nothing opened)
                actions.append(("Open bug report", lambda b=result.bundle: self.open_bug_report(b)))
                self.report_btn.show()
        if result.ok and self.last_notification is not None and hasattr(self.window_, "notes"):
            # the earlier failure's card goes: it stayed over the pane beside a successful conversion (tryout 15)
            self.window_.notes.dismiss_notification(self.last_notification)
        self.last_notification = self.window_.sink.notify(message, severity, Path(self.src).name, hint,
                                                          detail=result.log_text[-4000:], actions=actions)
        self.conversion_done.emit("ok" if result.ok else "failed")
        self.converted.emit(dict(result.to_json(), output=result.output))
        if beside:
            # the result beside its model, node map linked; not into File > Open Recent (every conversion pushed the
            # user's own models out of it, a new-user try): the dock reopens it, and the user's own Open adds it
            self.window_.not_recent.add(result.output)
            self.window_.open_model(result.output, second=True)
        self._sync_side_btn()
        if beside:
            self.side_btn.hide()  # (until the pane beside has it, or its load failed: panes_changed, load_failed)
        self._diagnostics_shown()
        QTimer.singleShot(0, self, self._room_for_log)  # once the note and the outcome are laid out
        self.rerun.converted(result)

    def _show_kept(self, result) -> None:
        """A model's last conversion in the dock again (no notification, nothing opened): outcome, log, diagnostics
        and the buttons that act on it."""
        self.last_result = result
        self.result_label.setText(outcome_html(result))
        self.log.appendPlainText(result.log_text.rstrip("\n"))
        self.log.appendPlainText("\n".join(f"\u2014 {x}" for x in log_summary(result)))
        self._list_diagnostics(result.errors, result.unsupported_ops, result.warnings)
        if not result.ok:
            self.node_btn.setVisible(self._failing_node(result) is not None)
            self.report_btn.setVisible(bool(result.bundle))
        self._sync_side_btn()
        self._diagnostics_shown()
        QTimer.singleShot(0, self, self._room_for_log)

    def _sync_side_btn(self) -> None:
        """"Open side by side" while the converted .mnn is not what the pane beside shows: hidden while it is
        (the button stayed beside the opened .mnn and did nothing new: a new-user try, 2026-12-04), back after
        Close Side by Side or another model beside."""
        r = self.last_result
        second = getattr(self.window_, "second", None)
        shown = bool(r is not None and r.output and second is not None and second.path and
                     os.path.abspath(second.path) == os.path.abspath(r.output))
        self.side_btn.setVisible(bool(r is not None and r.ok and r.output) and not shown)

    def _complete_log(self, result) -> None:
        """The log up to the end: the lines of the log file never streamed (a crash cuts them off; the
        converter holds the GIL, so a slow end may not have streamed), then how the run ended."""
        unseen = self._unstreamed(result.log_text)
        if unseen:
            crashed = (result.signature or [""])[0] == "crash"
            head = "what the converter said before it died" if crashed else "the rest of the converter's log"
            self.log.appendPlainText(f"\u2014 {head} (from {result.log_path}):\n" + "\n".join(unseen))
        self.log.appendPlainText("\n".join(f"\u2014 {x}" for x in log_summary(result)))
        bar = self.log.verticalScrollBar()  # the end of the log is where the outcome is
        QTimer.singleShot(0, bar, lambda: bar.setValue(bar.maximum()))  # once the new text is laid out

    def _failed(self, message: str, gen: int) -> None:
        """The job itself failed (not the model): still a notification, never a lost error."""
        if gen != self._gen:
            return
        self._drain_events()
        self._converting = False
        self.rerun.cancel()
        self._set_running(False)
        self._show_outcome("Could not run", "#d64545", [message])
        self.last_notification = self.window_.sink.notify(
            f"conversion could not run: {message}", ERROR, Path(self.src or "").name,
            "the converter's runner could not be used; check the runner Python")
        self.conversion_done.emit("error")

    def _unstreamed(self, log_text: str) -> list[str]:
        """The log file's lines that never reached the dock: those after the last line it did show (the
        optimizer's pass log, --dumpPass, left out: noise here, the file has it). A run that streamed
        everything has none."""
        lines = [x for x in log_text.splitlines() if x.strip()]
        shown = set(self.log.toPlainText().splitlines())
        last = max((k for k, x in enumerate(lines) if x in shown), default=-1)
        return [x for x in lines[last + 1:] if not x.startswith("[DumpPass]")][-UNSEEN_MAX:]

    # pre-flight and diagnostics
    def run_preflight(self) -> bool:
        """Check the model against this MNN without converting; the findings fill the diagnostics list."""
        if not self.src or self._converting:
            return False
        src = self.src
        self.preflight_btn.setEnabled(False)
        self.stage.setVisible(True)
        self.stage.setText("pre-flight check")
        self.window_.runner.run_job("preflight", lambda client, on_event, cancelled: preflight(src, client),
                                    on_done=lambda r: self._preflight_done(src, r),
                                    on_fail=lambda m: self._preflight_done(src, None, m))
        return True

    def _preflight_done(self, src: str, report: dict | None, message: str = "") -> None:
        self.stage.setText("")
        self._check()
        if src != self.src:
            return  # another model by now
        self.last_preflight = report
        if report is None:
            self._show_outcome("Pre-flight could not run", "#d64545", [message])
            return
        errors = report.get("errors") or []
        self._list_diagnostics(errors, report.get("unsupported_ops") or [], report.get("warnings") or [])
        if report.get("ok"):
            self._show_outcome("Pre-flight", "#3f9a4a", [f"no problems predicted ({report.get('nodes')} nodes, "
                                                         f"MNN {report.get('mnn_version') or '?'})"])
        else:
            self._show_outcome("Pre-flight", "#d64545", [f"{len(errors)} problem(s) predicted"])

    def _list_diagnostics(self, errors, unsupported, warnings) -> None:
        """Every error (with its node and next step), each unsupported op's nodes, every warning."""
        self.diagnostics.clear()
        listed = set()
        for e in errors:
            text = f"{e['kind']}: {e['message']}"
            if e.get("next_step"):
                text += f"\n  next: {e['next_step']}"
            self._add_diagnostic(text, e.get("node"), "#d64545")
            listed.add(e.get("node"))
        for u in unsupported:
            for node in (u.get("nodes") or [])[:20]:
                if node not in listed:
                    self._add_diagnostic(f"unsupported {u.get('op_type')}: {node}", node, "#d64545")
                    listed.add(node)
        for w in warnings:  # a converter warning that names its node selects it too ("click one: its node on the
            # graph" over "... op name:Add.131 (node Add.130)" did nothing: a new-user try)
            self._add_diagnostic(f"warning: {w}", warning_node(w), "#c08a1e")

    def _add_diagnostic(self, text: str, node: str | None, colour: str) -> None:
        item = QListWidgetItem(text + (f"\n  node {node}" if node and node not in text else ""))
        item.setData(NODE, node)
        item.setForeground(QColor(colour))
        if node:
            item.setToolTip("click: select this node on the graph")
        self.diagnostics.addItem(item)

    def _diagnostic_clicked(self, item: QListWidgetItem) -> None:
        node = item.data(NODE)
        if node:
            self.select_node(node)

    def select_node(self, node: str) -> bool:
        """Select and centre `node` of the converted model in the window's graph (its scopes opened)."""
        if not self._shows_source():
            return False
        table = self.window_.pane.table
        if node not in table.ids:
            self.window_.notify(f"node {node} is not in the graph shown", WARNING, Path(self.src).name)
            return False
        self.window_.pane.main_view.reveal(table.ids.index(node))
        return True

    # the outcome's actions
    def _failing_node(self, result) -> int | None:
        """Index of the first named failing node in the window's graph, when the window shows the converted model."""
        table = self.window_.pane.table
        node = next((e["node"] for e in result.errors if e.get("node")), None)
        if not node or table is None or os.path.abspath(table.path) != self.src:
            return None
        try:
            return table.ids.index(node)
        except ValueError:
            return None

    def _shows_source(self, quiet: bool = False) -> bool:
        """Whether the window's main model is still the one this dock converted; says so when it is not
        (a notice's button can outlive the model it was made for)."""
        table = self.window_.pane.table
        if table is not None and self.src and os.path.abspath(table.path) == self.src:
            return True
        if not quiet:
            self.window_.notify(f"that conversion was of {Path(self.src or '').name}; the window shows another "
                                "model", WARNING, Path(self.src or "").name, "open that model first")
        return False

    def show_failing_node(self) -> None:
        """Select and centre the failing node in the window's graph (its scopes opened as needed)."""
        r = self.last_result
        if r is None or not self._shows_source():
            return
        op = self._failing_node(r)
        if op is not None:
            view = self.window_.pane.main_view
            view.reveal(op)
            # every failing node stays outlined after the selection moves on (two new-user tries, 2026-12-04:
            # one click on the canvas and Hardmax looked like any other node; Mish was never marked)
            table = self.window_.pane.table
            self._marked = sorted({table.ids.index(e["node"]) for e in r.errors if e.get("node") in table.ids})
            view.canvas.set_failed(self._marked)

    def _unmark(self) -> None:
        """The failing nodes' red goes when another conversion starts (every one does through start())."""
        view = self.window_.pane.main_view
        if self._marked and view is not None and view.canvas.failed.tolist() == self._marked:
            view.canvas.set_failed([])
        self._marked = []

    def open_bug_report(self, bundle: str | None = None) -> None:
        """The bundle's report, logs and file list in a viewer of the app's own (no file manager needed): `bundle`'s,
        else the last conversion's."""
        r = self.last_result
        bundle = bundle or (r.bundle if r is not None else None)
        if not bundle:
            return
        if not os.path.isdir(bundle):
            self.window_.notify(f"the bug-report bundle is gone: {bundle}", WARNING, Path(self.src or "").name)
            return
        from mnnscope.gui.reportviewer import show_report
        self.report_viewer = show_report(self, bundle, Path(self.src or "").name)

    def open_side_by_side(self) -> None:
        r = self.last_result
        if r is not None and r.ok and r.output and os.path.isfile(r.output) and self._shows_source():
            self.window_.open_model(r.output, second=True)

    # reconvert and re-run (convertrerun.py)
    def _show_deltas(self, head: str, lines: list) -> None:
        self.deltas.setText("\n".join([head] + lines))
        self.deltas.show()
        # in view: the before/after lines sat in a box four lines tall under an empty Diagnostics list, below the
        # outcome (tryout 10 dragged the splitter to read them)
        top, bottom = self.right_split.sizes() if self.right_split.count() == 2 else (0, 0)
        if top + bottom and bottom < 0.6 * (top + bottom) and self.diagnostics.count() == 0:
            self.right_split.setSizes([int(0.3 * (top + bottom)), int(0.7 * (top + bottom))])
        QTimer.singleShot(0, self, lambda: self.outcome_scroll.ensureWidgetVisible(self.deltas))

    def _rerun_finished(self, d: dict) -> None:
        self.last_deltas = d
        # the repeated run raised its own dock: the deltas come back to the front, and as a notice
        self.window_.show_dock("Convert")
        text = self.deltas.text().strip()
        if text:
            head, _, rest = text.partition("\n")
            self.window_.notify(head, INFO, Path(self.src or "").name, rest.replace("\n", "; "))
        self.rerun_done.emit(d)

    def reconvert_and_rerun(self) -> bool:
        """Convert again with the settings shown (over the file the last conversion wrote when the last run measured
        that file, else where Output says), then repeat the last profile or comparison and show the deltas."""
        self.window_.show_dock("Convert")
        if self._converting:
            return False
        r = self.last_result
        if r is not None and r.ok and r.output and self._last_run_measured(r.output):
            self.output.setText(r.output)  # the file the run measured: the user asked to redo it
        if self.problems_now():
            return False
        out = os.path.abspath(self.output.text().strip())
        if not self.rerun.begin(os.path.getsize(out) if os.path.isfile(out) else None):
            return False
        return self.start()

    def _last_run_measured(self, path: str) -> bool:
        """Whether the run to repeat measured the file `path` itself (a profile of that .mnn: its repeat profiles the
        same path, so the reconversion must land there). A comparison, or a profile of the .onnx, converts for
        itself: the reconversion goes where the Output field says (tryout 10: the dock promised "the next
        conversion writes PP-OCRv6_det_small.1.mnn beside it", and Reconvert and re-run wrote over the .mnn)."""
        last = self.rerun.last_run
        panel = self.window_.panels.get(PANELS.get(last[0], "")) if last is not None else None
        measured = getattr(panel, "measured_file", None)
        model = measured() if measured is not None else None
        return bool(model) and os.path.abspath(str(model)) == os.path.abspath(path)

    def shutdown(self) -> None:
        """Stop a running conversion (window close); the runner host waits for the job's thread. The settings set
        for the open model are kept for it."""
        self.remember()
        if self._converting:
            self.window_.runner.cancel_job("convert")
            self._converting = False
        self._drain.stop()
