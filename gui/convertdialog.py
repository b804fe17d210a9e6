"""Model > Convert to MNN: a modeless dialog with the settings users change most, the conversion running on a
worker thread in a runner of its own, its log streamed live (and read to the end from the log file when the run
ends), and the outcome in the dialog itself (each error's next step, Show node, the bug report in a viewer)
and as a notification.

The default output never replaces a file without saying so (convertoutput.py): a free name, with a Replace
button for the existing one. A failure on the model the window shows selects and centres its node.

The converter can crash (SIGSEGV) on bad graphs: it runs in a runner that is not the window's (that one holds
the loaded model's shapes), started for one conversion and stopped after it, so a crash costs nothing but the
conversion. Cancel ends that runner (native code cannot listen), which takes well under a second.

Why one module past 400 lines: the form, the run's states (idle, converting, cancelling, done) and the
outcome all drive the same widgets; the words of an outcome live in convertoutcome.py, the output's naming in
convertoutput.py, the bug-report viewer in reportviewer.py.
"""
from __future__ import annotations

import collections
import dataclasses
import html
import json
import os
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout,
                               QLabel, QLineEdit, QPlainTextEdit, QProgressBar, QPushButton, QSpinBox, QVBoxLayout,
                               QWidget)

from mnnscope.inspector.process.client import Cancelled, RunnerClient
from mnnscope.inspector.convert.service import new_run_dir, run_convert
from mnnscope.inspector.convert.settings import HELP, ConvertSettings

from mnnscope.gui import settings as cfg
from mnnscope.gui.convertoutcome import log_summary, outcome_html, outcome_text
from mnnscope.gui.convertoutput import OutputChoice
from mnnscope.gui.notify import ERROR, INFO, WARNING
from mnnscope.gui.placement import keep_on_screen
from mnnscope.gui.tasks import TaskSlot

QUANT_BITS = (None, 8, 4)          # the weight-quant choices offered here; the CLI takes 2..8
OPT_LEVELS = (None, 1, 2)
SETTINGS_KEY = "convert/settings"  # the last settings used, as ConvertSettings JSON
UNSEEN_MAX = 2000                   # log-file lines added at the end at most (the widget keeps 5000)


# ----- the worker ----------------------------------------------------------------------------------------------
def _convert(src: str, dst: str, settings: ConvertSettings, bundle: bool, python: str | None, events,
             cancelled=None):
    """Worker-thread body: one conversion in a runner of its own, always stopped before returning."""
    client = RunnerClient(python=python, grace=0.2)

    def on_event(kind, payload):
        events.append((kind, payload))
        if cancelled():
            # A cancel that landed between two runner requests (client.cancel() is a no-op then) stops
            # the operation here, at its next event.
            raise Cancelled()

    cancelled.set_hook(client.cancel)
    try:
        run = new_run_dir("convert")
        return run_convert(src, dst, settings, client=client, on_event=on_event, run_dir=run,
                           bundle_dir=run / "bug-report" if bundle else None)
    finally:
        if cancelled():
            client.kill()
        client.stop()


# ----- the dialog ----------------------------------------------------------------------------------------------
class ConvertDialog(QDialog):
    """Settings, output, Convert/Cancel, live log, outcome. `conversion_done` carries "ok", "failed",
    "cancelled" or "error" (the worker itself failed); `last_result` holds the ConvertResult."""

    conversion_done = Signal(str)

    # Closing the dialog does not stop a conversion: its outcome still arrives as a notification.
    def __init__(self, window):
        super().__init__(window)
        self.window_ = window
        self.setWindowTitle("Convert to MNN")
        self.setModal(False)
        self.src: str | None = None
        self.last_result = None
        self.last_notification = None
        self._slot = TaskSlot(self)
        self._base = ConvertSettings()
        self.choice = OutputChoice()
        self._placed = False
        self.report_viewer = None
        self._events: collections.deque = collections.deque()
        self._drain = QTimer(self)
        self._drain.setInterval(100)
        self._drain.timeout.connect(self._drain_events)
        self._build()
        self._restore()
        self._check()

    # construction
    def _build(self) -> None:
        defaults = ConvertSettings()
        lay = QVBoxLayout(self)
        self.title = QLabel()
        self.title.setTextFormat(Qt.RichText)
        self.title.setWordWrap(True)
        lay.addWidget(self.title)

        box = QGroupBox("Settings", self)
        form = QFormLayout(box)
        self.fp16 = self._check_box("fp16 weights", "fp16", defaults.fp16)
        form.addRow("Weights", self.fp16)
        self.bits = QComboBox()
        for b in QUANT_BITS:
            self.bits.addItem("none (float)" if b is None else f"{b}-bit", b)
        self.bits.setToolTip(HELP["weight_quant_bits"])
        self.block = QSpinBox()
        self.block.setRange(0, 4096)
        self.block.setSingleStep(32)
        self.block.setSpecialValueText("per channel")
        self.block.setToolTip(HELP["weight_quant_block"])
        quant = QWidget()
        ql = QHBoxLayout(quant)
        ql.setContentsMargins(0, 0, 0, 0)
        ql.addWidget(self.bits)
        ql.addWidget(QLabel("block"))
        ql.addWidget(self.block)
        ql.addStretch(1)
        form.addRow("Weight quantization", quant)
        self.opt = QComboBox()
        for lv in OPT_LEVELS:
            self.opt.addItem("converter default" if lv is None else str(lv), lv)
        self.opt.setToolTip(HELP["optimize_level"])
        form.addRow("Optimize level", self.opt)
        self.fuse = self._check_box("fuse transformer blocks", "transformer_fuse", defaults.transformer_fuse)
        self.static = self._check_box("static model (fold shapes)", "save_static_model", defaults.save_static_model)
        self.custom = self._check_box("allow custom ops", "allow_custom_op", defaults.allow_custom_op)
        for w in (self.fuse, self.static, self.custom):
            form.addRow("", w)
        self._set_combo(self.bits, defaults.weight_quant_bits)
        self._set_combo(self.opt, defaults.optimize_level)
        self.block.setValue(defaults.weight_quant_block or 0)
        lay.addWidget(box)

        out = QHBoxLayout()
        self.output = QLineEdit()
        self.output.setToolTip("where the .mnn goes (a failed conversion leaves nothing here)")
        self.browse_btn = QPushButton("Browse\u2026")
        self.browse_btn.clicked.connect(self._browse)
        out.addWidget(QLabel("Output"))
        out.addWidget(self.output, 1)
        out.addWidget(self.browse_btn)
        lay.addLayout(out)
        note = QHBoxLayout()
        self.output_note = QLabel()
        self.output_note.setWordWrap(True)
        self.replace_btn = QPushButton("Replace")
        self.replace_btn.setToolTip("write over the existing file instead")
        self.replace_btn.clicked.connect(self.replace_existing)
        self.replace_btn.hide()
        note.addWidget(self.output_note, 1)
        note.addWidget(self.replace_btn, 0, Qt.AlignTop)
        lay.addLayout(note)
        self.bundle = QCheckBox("Write a bug-report bundle on failure (reduced model, command, log)")
        self.bundle.setChecked(True)
        lay.addWidget(self.bundle)
        self.problems = QLabel()
        self.problems.setWordWrap(True)
        self.problems.setStyleSheet("color: #d64545;")
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
        self.log.setMinimumHeight(120)
        lay.addWidget(self.log, 1)
        self.result_label = QLabel()
        self.result_label.setWordWrap(True)
        self.result_label.setTextFormat(Qt.RichText)
        self.result_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        lay.addWidget(self.result_label)

        buttons = QHBoxLayout()
        self.side_btn = QPushButton("Open side by side")
        self.side_btn.setToolTip("open the converted .mnn beside the ONNX model, with linked selection")
        self.side_btn.clicked.connect(self.open_side_by_side)
        self.side_btn.hide()
        self.node_btn = QPushButton("Show node")
        self.node_btn.setToolTip("select and centre the failing node in the window's graph")
        self.node_btn.clicked.connect(self.show_failing_node)
        self.node_btn.hide()
        self.report_btn = QPushButton("Open bug report")
        self.report_btn.setToolTip("read the bug-report bundle (report, command, logs) and copy its path")
        self.report_btn.clicked.connect(self.open_bug_report)
        self.report_btn.hide()
        self.convert_btn = QPushButton("Convert")
        self.convert_btn.setDefault(True)
        self.convert_btn.clicked.connect(self.start)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.clicked.connect(self.cancel_or_close)
        for b in (self.side_btn, self.node_btn, self.report_btn, self.cancel_btn):
            b.setAutoDefault(False)  # focused by a click, it took Enter from Convert (reopened: Close was default)
        for b in (self.side_btn, self.node_btn, self.report_btn):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(self.convert_btn)
        buttons.addWidget(self.cancel_btn)
        lay.addLayout(buttons)
        self._set_running(False)
        self.progress.hide()
        for sig in (self.fp16.toggled, self.fuse.toggled, self.static.toggled, self.custom.toggled,
                    self.bits.currentIndexChanged, self.opt.currentIndexChanged, self.block.valueChanged,
                    self.output.textChanged):
            sig.connect(self._check)
        self.resize(620, 700)

    def _check_box(self, text: str, field: str, value: bool) -> QCheckBox:
        c = QCheckBox(text)
        c.setChecked(bool(value))
        c.setToolTip(HELP[field])
        return c

    @staticmethod
    def _set_combo(combo: QComboBox, value) -> None:
        i = combo.findData(value)
        combo.setCurrentIndex(i if i >= 0 else 0)

    # settings <-> widgets
    def settings(self) -> ConvertSettings:
        """The settings shown, on top of the last ones used (fields the dialog does not show are kept)."""
        bits = self.bits.currentData()
        return dataclasses.replace(
            self._base, fp16=self.fp16.isChecked(), weight_quant_bits=bits,
            weight_quant_block=(self.block.value() or None) if bits is not None else None,
            optimize_level=self.opt.currentData(), transformer_fuse=self.fuse.isChecked(),
            save_static_model=self.static.isChecked(), allow_custom_op=self.custom.isChecked())

    def set_settings(self, s: ConvertSettings) -> None:
        self._base = s
        self.fp16.setChecked(s.fp16)
        self._set_combo(self.bits, s.weight_quant_bits)
        self.block.setValue(s.weight_quant_block or 0)
        self._set_combo(self.opt, s.optimize_level)
        self.fuse.setChecked(s.transformer_fuse)
        self.static.setChecked(s.save_static_model)
        self.custom.setChecked(s.allow_custom_op)
        self._check()

    def _restore(self) -> None:
        raw = cfg.settings().value(SETTINGS_KEY)
        if raw:
            try:
                self.set_settings(ConvertSettings.from_json(json.loads(raw)))
            except (ValueError, TypeError):
                pass  # settings of another version: start from the defaults

    def set_source(self, path: str) -> None:
        """The .onnx to convert (the window's model, or any file when driven programmatically): the previous
        run's log and outcome go, they were another model's (or an earlier try's)."""
        self.src = os.path.abspath(path)
        self.title.setText(f"<b>{html.escape(Path(self.src).name)}</b> \u2192 MNN<br>"
                           f"<small>{html.escape(self.src)}</small>")
        self._set_choice(OutputChoice.for_source(self.src))
        self._clear_outcome()

    def _clear_outcome(self) -> None:
        self.last_result = None
        self.log.clear()
        self.result_label.clear()
        for b in (self.side_btn, self.node_btn, self.report_btn):
            b.hide()

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
        path, _ = QFileDialog.getSaveFileName(self, "Converted model", self.output.text(), "MNN (*.mnn)")
        if path:
            self.output.setText(path)

    def problems_now(self) -> list[str]:
        problems = list(self.settings().validate())
        out = self.output.text().strip()
        if not self.src:
            problems.append("no .onnx model to convert")
        if not out:
            problems.append("choose an output file")
        elif self.src and os.path.abspath(out) == self.src:
            problems.append("the output must not be the model itself")
        return problems

    def _check(self) -> None:
        self.block.setEnabled(self.bits.currentData() is not None and not self._slot.busy)
        problems = self.problems_now()
        self.problems.setText("\n".join(problems))
        self.problems.setVisible(bool(problems))
        note, offer = self.choice.note(self.output.text())
        self.output_note.setText(note)
        self.output_note.setVisible(bool(note))
        if self.choice.dodged:
            self.replace_btn.setText(f"Replace {Path(self.choice.dodged).name}")
        self.replace_btn.setVisible(offer and not self._slot.busy)
        self.convert_btn.setEnabled(not problems and not self._slot.busy)

    # running
    @property
    def busy(self) -> bool:
        return self._slot.busy

    def start(self) -> bool:
        """Start converting with the settings shown (False when they are unusable)."""
        if self.problems_now() or self._slot.busy:
            return False
        s = self.settings()
        cfg.settings().setValue(SETTINGS_KEY, json.dumps(s.to_json()))
        self._clear_outcome()
        self._events = collections.deque()  # a cancelled worker may still append to the old one
        dst = os.path.abspath(self.output.text().strip())
        self._slot.start(_convert, self.src, dst, s, self.bundle.isChecked(), self.window_.runner.python,
                         self._events, on_done=self._done, on_fail=self._failed, name="convert")
        self._set_running(True, "starting the converter's runner")
        return True

    def cancel_or_close(self) -> None:
        if self._slot.busy:
            self.cancel()
        else:
            self.close()

    def cancel(self) -> None:
        """Stop the conversion: the token ends the runner; the worker thread finishes on its own, shortly."""
        if not self._slot.busy:
            return
        self._slot.cancel()
        self._drain_events()
        self._set_running(False)
        self._show_outcome("Cancelled", "#3f75ad", ["the converter's runner was ended; nothing was written"])
        self.log.appendPlainText("\u2014 cancelled: the converter's runner was ended")
        self.window_.notify("conversion cancelled", INFO, Path(self.src).name)
        self.conversion_done.emit("cancelled")

    def _set_running(self, on: bool, stage: str = "") -> None:
        for w in (self.fp16, self.bits, self.opt, self.fuse, self.static, self.custom, self.output, self.browse_btn,
                  self.bundle):
            w.setEnabled(not on)
        self.replace_btn.setEnabled(not on)
        self.block.setEnabled(not on and self.bits.currentData() is not None)
        self.progress.setVisible(on)
        self.stage.setVisible(on)
        self.stage.setText(stage)
        self.convert_btn.setEnabled(not on)
        self.cancel_btn.setText("Cancel" if on else "Close")
        self.cancel_btn.setToolTip("stop the conversion (ends the converter's runner)" if on else "")
        if on:
            self._drain.start()
        else:
            self._drain.stop()
            self._check()

    def _show_outcome(self, title: str, colour: str, lines: list[str]) -> None:
        self.stage.setText("")
        body = "<br>".join(html.escape(x) for x in lines if x)
        self.result_label.setText(f"<b style='color:{colour}'>{title}</b> \u2014 {body}")

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

    def _done(self, result) -> None:
        self._drain_events()
        self.last_result = result
        self._set_running(False)
        message, severity, hint = outcome_text(result)
        self.stage.setText("")
        self.result_label.setText(outcome_html(result))
        self._complete_log(result)
        actions = []
        if result.ok:
            self.side_btn.show()
            actions.append(("Open side by side", self.open_side_by_side))
            if self.output.text().strip() == self.choice.auto and result.output:
                # the next conversion must not silently replace this one: a fresh name, Replace on offer
                self._set_choice(self.choice.after_success(self.src, result.output))
            else:
                self.choice.written = result.output
                self._check()
        else:
            if self._failing_node(result) is not None:
                actions.append(("Show node", self.show_failing_node))
                self.node_btn.show()
                self.show_failing_node()  # marked on the graph now, not only when asked
            if result.bundle:
                actions.append(("Open bug report", self.open_bug_report))
                self.report_btn.show()
        self.last_notification = self.window_.sink.notify(message, severity, Path(self.src).name, hint,
                                                          detail=result.log_text[-4000:], actions=actions)
        self.conversion_done.emit("ok" if result.ok else "failed")

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
        QTimer.singleShot(0, lambda: bar.setValue(bar.maximum()))  # once the new text is laid out

    def _failed(self, message: str) -> None:
        """The worker itself failed (not the model): still a notification, never a lost error."""
        self._drain_events()
        self._set_running(False)
        self._show_outcome("Could not run", "#d64545", [message])
        self.last_notification = self.window_.sink.notify(
            f"conversion could not run: {message}", ERROR, Path(self.src or "").name,
            "the converter's runner could not be used; check the runner Python")
        self.conversion_done.emit("error")

    def _unstreamed(self, log_text: str) -> list[str]:
        """The log file's lines that never reached the dialog: those after the last line it did show (the
        optimizer's pass log, --dumpPass, left out: noise here, the file has it). A run that streamed
        everything has none."""
        lines = [x for x in log_text.splitlines() if x.strip()]
        shown = set(self.log.toPlainText().splitlines())
        last = max((k for k, x in enumerate(lines) if x in shown), default=-1)
        return [x for x in lines[last + 1:] if not x.startswith("[DumpPass]")][-UNSEEN_MAX:]

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

    def _shows_source(self) -> bool:
        """Whether the window's main model is still the one this dialog converted; says so when it is not
        (a notice's button can outlive the model it was made for)."""
        table = self.window_.pane.table
        if table is not None and self.src and os.path.abspath(table.path) == self.src:
            return True
        self.window_.notify(f"that conversion was of {Path(self.src or '').name}; the window shows another model",
                            WARNING, Path(self.src or "").name, "open that model first")
        return False

    def show_failing_node(self) -> None:
        """Select and centre the failing node in the window's graph (its scopes opened as needed)."""
        r = self.last_result
        if r is None or not self._shows_source():
            return
        op = self._failing_node(r)
        if op is not None:
            self.window_.pane.main_view.reveal(op)

    def open_bug_report(self) -> None:
        """The bundle's report, logs and file list in a viewer of the app's own (no file manager needed)."""
        r = self.last_result
        if r is not None and r.bundle:
            from mnnscope.gui.reportviewer import show_report
            self.report_viewer = show_report(self, r.bundle, Path(self.src or "").name)

    def open_side_by_side(self) -> None:
        r = self.last_result
        if r is not None and r.ok and r.output and os.path.isfile(r.output) and self._shows_source():
            self.window_.open_model(r.output, second=True)

    def shutdown(self) -> None:
        """Stop a running conversion and wait for its thread (window close)."""
        self._slot.shutdown()
        self._drain.stop()


def show_convert_dialog(window, path: str) -> ConvertDialog:
    """The window's one convert dialog, pointed at `path` unless it is busy converting, shown and raised."""
    dlg = getattr(window, "convert_dialog", None)
    if dlg is None:
        dlg = ConvertDialog(window)
    if not dlg.busy and (dlg.src != os.path.abspath(path)):
        dlg.set_source(path)
    if not dlg._placed:
        dlg._placed = True
        _place_beside_graph(window, dlg)
    dlg.convert_btn.setDefault(True)  # Enter converts, whatever had the focus when it was closed
    dlg.show()
    keep_on_screen(dlg, window)  # after show(): the frame's size is known then
    dlg.raise_()
    dlg.activateWindow()
    return dlg


def _place_beside_graph(window, dlg: QDialog) -> None:
    """First show: against the window's right edge, not over the graph's centre, where a failing node is shown."""
    frame = window.frameGeometry()
    if frame.width() < dlg.width() * 1.6:
        return  # a small window: the window manager's placement is as good as any
    dlg.move(frame.right() - dlg.width() - 16, frame.top() + 60)
