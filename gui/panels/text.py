"""The Text dock: a prompt through a tokenizer.json, greedy generation of the open decoder model, the generated
text with each token's latency, and with "Compare with ONNX Runtime" the agreement per step (KL and top-1), the
MoE routing heat map (routers x experts, reference vs MNN) and, clicking the first mismatching step, its
layerwise first divergence selected on the graph.

The run is the generate service (inspector/generate/service.py) in a child process of its own
(inspector/generate/genproc.py: the service imports onnx, which holds the GIL for seconds), reached through
the window's work runner job slot (window.runner.run_job). The UI thread only shows results.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QHBoxLayout, QHeaderView,
                               QLabel, QLineEdit, QPushButton, QSpinBox, QSplitter, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from mnnscope.gui import filedialog, focus
from mnnscope.gui.dockheight import is_short, least_height_for_width, scroll_area_of, watch_short
from mnnscope.gui.menus import add_action
from mnnscope.gui.notify import ERROR, WARNING
from mnnscope.gui.panels.inputs import text_tokens
from mnnscope.gui.panels.sweep import themed_plot
from mnnscope.gui.plotaxis import show_empty
from mnnscope.gui.theme import palette
from mnnscope.gui.wraplabel import wrap_tip
from mnnscope.inspector.compare import errormap
from mnnscope.inspector.compare.options import MODES as COMPARE_MODES
from mnnscope.inspector.generate.context import ContextLimit, context_limit
from mnnscope.inspector.generate.decoder import not_a_decoder
from mnnscope.inspector.generate.summary import headline, op_split_summary, reference_speed
from mnnscope.inspector.inputs.sources import tokenizer_beside
from mnnscope.inspector.llm.table import SWEEP_COLUMNS, sweep_rows
from mnnscope.runner import protocol

JOB = "generate"
MODES = ["fp32", "low", "bf16", "fp16w", "int8w", "int4w", "memlow"]  # generate.service.GENERATE_MODES
# "token" is what MNN generated on its own; with a comparison, "MNN forced" is MNN's argmax when fed the
# reference's tokens (teacher forcing), which is what "agree" and "KL" compare with "reference": it stands between
# the two (after "KL" a new user read "agree yes" beside token 77 and reference 41 as a wrong comparison)
STEP_COLUMNS = ["step", "token", "piece", "ms", "reference", "MNN forced", "agree", "KL"]
TOKEN_LEFT = QColor("#b35900")  # MNN's own token where it is not the reference's (its text has left the reference's)
STEPS_TIP = "tokens to generate (greedy)"
MODE_TIP = ("how an .onnx is converted and run for MNN (compare's modes; compare's int8, activations too in 8 bits, "
            "needs calibration data and is not offered here: int8w keeps the weights in 8 bits, the compute float). "
            "The conversion is made for the run, in its run folder; the Convert dock writes an .mnn to keep.")
# (helper 115 looked for the Mode's .mnn beside the model)


ASK_PROMPT, ASK_PROMPT_TOKENIZER = "Give a prompt.", "Give a prompt and a tokenizer.json."


def run_job(request: dict, client, on_event, cancelled, pids: dict | None = None) -> dict:
    """Worker-thread part: the generate service in its own process; returns its result."""
    from mnnscope.inspector.process.childjob import run_service_child
    if os.path.isdir(request["model"]):  # an MNN-LLM export folder: MNN.llm with the folder's own tokenizer
        return run_service_child("mnnscope.inspector.llm.genproc", {
            "folder": request["model"], "text": request["text"], "steps": request["steps"]},
            on_event, cancelled, pids, what="generate")
    result = run_service_child("mnnscope.inspector.generate.genproc", request, on_event, cancelled, pids,
                               what="generate")
    # the token at each position a router flipped on (the prompt's, then the reference's: the teacher-forced run),
    # read with the same load of the tokenizer as the generated tokens
    seq = list(result.get("prompt_ids") or []) + list((result.get("reference") or {}).get("tokens") or [])
    routing = (result.get("routing") or {}).values()
    flips = [[p for p in s.get("flipped_tokens") or [] if p < len(seq)] for s in routing]
    pieces = _pieces(request["tokenizer"], list(result["tokens"]) + [seq[p] for at in flips for p in at])
    result["pieces"], rest = pieces[:len(result["tokens"])], iter(pieces[len(result["tokens"]):])
    for s, at in zip(routing, flips):
        s["flipped_pieces"] = {str(p): next(rest) for p in at}
    return result


def run_sweep_job(request: dict, client, on_event, cancelled, pids: dict | None = None) -> dict:
    """Worker-thread part of the export sweep: inspector/llm/service.sweep_exports in its own process."""
    from mnnscope.inspector.process.childjob import run_service_child
    return run_service_child("mnnscope.inspector.llm.sweepproc", request, on_event, cancelled, pids, what="sweep")


def _pieces(tokenizer: str, ids: list[int]) -> list[str]:
    try:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(tokenizer)
        return [tok.id_to_token(int(i)) or "" for i in ids]
    except Exception:
        return ["" for _ in ids]


class TextPanel(QWidget):
    finished = Signal(dict)   # the service result
    failed = Signal(str)      # the reason a run failed or was cancelled

    def __init__(self, window):
        super().__init__(window)
        self.window_ = window
        self.result: dict | None = None
        self.job_pids: dict = {}
        self._names: dict[str, int] = {}
        self._path: str | None = None
        self.run_action = self.cancel_action = None
        self._not_decoder: str | None = None  # why generate cannot feed the open model (None: it can)
        self._build()
        window.runner.job_event.connect(self._job_event)

    # ----- widgets ---------------------------------------------------------------------------------
    def _build(self) -> None:
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.setSpacing(4)
        row = QHBoxLayout()
        self.tokenizer = QLineEdit()
        self.tokenizer.setPlaceholderText("tokenizer.json")
        browse = QPushButton("Browse\u2026")
        browse.clicked.connect(self._browse)
        self.steps = QSpinBox()
        self.steps.setRange(1, 4096)
        self.steps.setValue(16)
        self.steps.setToolTip(STEPS_TIP)
        self.kv = QComboBox()
        self.kv.addItems(["auto", "on", "off"])
        self.kv.setToolTip("KV cache: auto uses the graph's past/present inputs when it has them")
        self.mode = QComboBox()
        self.mode.addItems(MODES)
        for i, m in enumerate(MODES):  # the Compare dock's words for each mode
            self.mode.setItemData(i, f"{m}: {COMPARE_MODES[m].description}", Qt.ToolTipRole)
        self.mode.currentTextChanged.connect(self._mode_tip)
        self._mode_tip(self.mode.currentText())
        self.compare = QCheckBox("Compare with ONNX Runtime")
        self.compare.setChecked(True)
        for label, w in (("Tokenizer", self.tokenizer), (None, browse), ("Steps", self.steps), ("KV", self.kv),
                         ("Mode", self.mode), (None, self.compare)):
            if label:
                row.addWidget(QLabel(label))
            row.addWidget(w)
        lay.addLayout(row)
        row = QHBoxLayout()
        self.prompt = QLineEdit()
        self.prompt.setPlaceholderText("prompt")
        self.prompt.textChanged.connect(self._prompt_typed)
        self.run_button = QPushButton("Generate")
        self.run_button.clicked.connect(self.run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        # an MNN-LLM export folder: the quantization table of it and the exports of the same model beside it
        self.sweep_button = QPushButton("Sweep exports")
        self.sweep_button.setToolTip("The open export folder and the exports of the same model beside it: bits, "
                                     "block, size, tokens/s, agreement and KL against the 16-bit export "
                                     "(mnnscope llm-sweep)")
        self.sweep_button.clicked.connect(lambda _=False: self.sweep())
        self.sweep_button.setVisible(False)
        row.addWidget(QLabel("Prompt"))
        row.addWidget(self.prompt, 1)
        row.addWidget(self.run_button)
        row.addWidget(self.sweep_button)
        row.addWidget(self.cancel_button)
        lay.addLayout(row)
        self.status = QLabel("Open a decoder model (token ids in, logits out) and give a tokenizer.json.")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.text = QLabel("")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextSelectableByMouse)
        lay.addWidget(self.text)
        self.split = split = QSplitter(Qt.Horizontal)
        self.steps_table = QTableWidget(0, len(STEP_COLUMNS))
        self.steps_table.setHorizontalHeaderLabels(STEP_COLUMNS)
        for col, tip in ((1, "the token MNN generated on its own"),
                         (4, "the token ONNX Runtime (the reference, the .onnx at fp32) generated on its own at this "
                             "step; its text is under MNN's above the table"),
                         (5, "MNN's argmax when fed the reference's tokens (teacher forcing): what agree compares "
                             "with the reference"),
                         (6, "whether MNN, fed the reference's tokens so far, picks the reference's token "
                             "(MNN forced = reference)"),
                         (7, "KL divergence of MNN's next-token distribution (teacher-forced) from the reference's")):
            self.steps_table.horizontalHeaderItem(col).setToolTip(tip)
        self.steps_table.verticalHeader().setVisible(False)
        self.steps_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.steps_table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.steps_table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.steps_table.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
        self.steps_table.cellClicked.connect(lambda r, _c: self.open_step(r))
        split.addWidget(self.steps_table)
        self.plot = themed_plot(palette(self.window_.theme))
        self.plot.setLabel("bottom", "step")
        # short enough for a short plot ("KL(reference || MN" was cut at 1500x950, "KL divergenc" at 1024x700: helper
        # 79's and 83's tries; "KL" as the steps table's column), the rest on hover
        self.plot.setLabel("left", "KL")
        self.plot.setToolTip("KL(reference || MNN) per step: how far MNN's next-token distribution (teacher-forced) "
                             "lies from the reference's; red: the steps whose argmax differs")
        # room above the top decade's label, drawn centred on the plot's top edge ("10⁻¹³" was cut in half)
        self.plot.getPlotItem().layout.setContentsMargins(1, 8, 4, 1)
        # no SI multiplier on the log axis: KL of 1e-14 read "8·10¹ (x1e-15)" (tryout 66)
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.kl_curve = self.plot.plot([], [], pen=pg.mkPen("#4477aa", width=2), symbol="o", symbolSize=6)
        # the steps whose argmax differs (a data item, so the log axis transforms it like the curve)
        self.miss_points = self.plot.plot([], [], pen=None, symbol="o", symbolSize=11,
                                          symbolBrush=pg.mkBrush("#cc3311"), symbolPen=None)
        split.addWidget(self.plot)
        self._plot_empty(True)
        self.routing = QTableWidget(0, 0)
        self.routing.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.routing.setToolTip("expert load per router (tokens routed to each expert), reference vs MNN")
        split.addWidget(self.routing)
        self.routing.hide()   # (until a run of a model with routers: before, an empty white box beside the plot)
        for i, stretch in enumerate((4, 5, 4)):
            split.setStretchFactor(i, stretch)
        lay.addWidget(split, 1)
        self.sweep_table = QTableWidget(0, len(SWEEP_COLUMNS))
        self.sweep_table.setHorizontalHeaderLabels(SWEEP_COLUMNS)
        self.sweep_table.verticalHeader().setVisible(False)
        self.sweep_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.sweep_table.setVisible(False)
        lay.addWidget(self.sweep_table, 1)
        self.sweep_result: dict | None = None
        self._context: ContextLimit | None = None  # the positions the open model holds, where its graph proves it

    def _mode_tip(self, mode: str) -> None:
        m = COMPARE_MODES.get(mode)
        self.mode.setToolTip(f"{MODE_TIP}\n{mode}: {m.description}" if m else MODE_TIP)

    def add_actions(self, menu) -> None:
        w = self.window_
        self.run_action = add_action(w, menu, "&Generate Text", self.run, "F6",
                                     tip="Generate from the Text dock's prompt with the open decoder model")
        self.cancel_action = add_action(w, menu, "Cancel Generate", self.cancel, "Shift+F6",
                                        tip="Stop the running generation")
        self.cancel_action.setEnabled(False)

    def model_changed(self, path, table, tree) -> None:
        self._path = path
        self._names = table.names_index() if table is not None else {}
        if path and not self.tokenizer.text() and not os.path.isdir(path):  # (an export folder brings its own)
            beside = tokenizer_beside(path)   # <stem>.tokenizer.json, else tokenizer.json: as the Inputs dock finds it
            if beside:
                self.tokenizer.setText(beside)
        was = self.compare.isEnabled()
        self.compare.setEnabled(bool(path) and str(path).lower().endswith(".onnx"))
        if not self.compare.isEnabled():
            self.compare.setChecked(False)  # greyed and ticked read as "it compares"
        elif not was:
            self.compare.setChecked(True)  # the default again where a comparison is possible
        folder = bool(path) and os.path.isdir(path)  # an export folder brings its own tokenizer
        self._context = context_limit(table) if path and table is not None and not folder else None
        self.steps.setToolTip(STEPS_TIP if self._context is None else
                              f"{STEPS_TIP}; {self._context.holds()} ({self._context.why()}): the last step feeds "
                              f"prompt + steps - 1 positions, so at most {self._context.positions} - prompt + 1 steps")
        self._clear()
        for w in (self.tokenizer, self.kv, self.mode):
            w.setEnabled(not folder)
        self.sweep_button.setVisible(folder)
        self.sweep_table.setVisible(False)
        # Generate Text greyed for a model generate cannot feed (a CNN: no token ids), with the reason shown
        self._not_decoder = None
        if path and table is not None and not folder:
            def dtype_of(name):
                i = table.tensor_index(name)
                return table.dtypes[i] if i is not None else None
            self._not_decoder = not_a_decoder(list(table.inputs), dtype_of)
        self._set_running(self.window_.runner.job_busy(JOB))
        if self._not_decoder:
            self.status.setText(f"Generate Text needs a decoder LM — {Path(path).name}: {self._not_decoder}.")

    def _clear(self) -> None:
        """Another model: the last results belong to the previous one."""
        self._drop_overlay()
        self.result = self.sweep_result = None
        self._summary = ""
        self.status.setToolTip("")
        self.text.setText("")
        for t in (self.steps_table, self.routing, self.sweep_table):
            t.setRowCount(0)
        self.routing.setColumnCount(0)   # (the last model's expert columns stayed over no rows: helper 116)
        self.routing.hide()
        self._empty_plot()   # (the last model's log axis stayed over the empty plot: helper 115)
        self.status.setText(("Give a prompt and Generate." + (f" Note: {self._context.holds()} (prompt + steps - 1)."
                                                              if self._context else "")) if self._path else
                            "Open a decoder model (token ids in, logits out) and give a tokenizer.json.")

    def _drop_overlay(self) -> None:
        """The graph's colours of a step this dock showed, and their outlines, taken off: a new run (or model) is not
        that step's (helper 115 read an int8w run that matched at every step beside the gate MatMul still red with
        "step 2, int4w: error introduced 0.0711" in Properties). Another dock's colours stay."""
        view = getattr(self.window_.pane, "main_view", None)
        ov = getattr(self, "_overlay", None)
        if view is not None and ov is not None and view.overlay is ov:
            view.set_overlay(None)
            view.canvas.set_marked([])
        self._overlay = None

    def _clear_results(self) -> None:
        """A run starts: the last results are not this run's (a failed run left them under its error)."""
        self._drop_overlay()
        self.result = None
        self._summary = ""
        self.status.setToolTip("")
        self.text.setText("")
        for t in (self.steps_table, self.routing):
            t.setRowCount(0)
        self.routing.setColumnCount(0)
        self.routing.hide()
        self._empty_plot()

    def _empty_plot(self) -> None:
        """The KL plot with nothing on it, on the empty plot's own axes."""
        self.kl_curve.setData([], [])
        self.miss_points.setData([], [])
        # the last run's log axis kept its range and tick labels over the empty plot: back to the empty plot's own
        self.plot.setLogMode(y=False)
        self.plot.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
        self.plot.enableAutoRange()
        self._plot_empty(True)

    def shutdown(self) -> None:
        if self.window_.runner.job_busy(JOB):
            self.window_.runner.cancel_job(JOB)

    def _browse(self) -> None:
        path = filedialog.ask_open_file(self, "Tokenizer", "", "tokenizer.json (*.json)")
        if path:
            self.tokenizer.setText(path)

    # ----- running ---------------------------------------------------------------------------------
    def request(self) -> dict | None:
        path = self._path or getattr(self.window_.pane, "path", None)
        if not path:
            return None
        spec = self.window_.input_spec() if hasattr(self.window_, "input_spec") else {}
        tokenizer = self.tokenizer.text().strip() or spec.get("tokenizer") or ""
        text = self.prompt.text() or spec.get("text") or ""
        compare = self.compare.isChecked() and self.compare.isEnabled()
        return {"model": str(path), "tokenizer": tokenizer, "text": text, "steps": self.steps.value(),
                "kv": self.kv.currentText(), "mode": self.mode.currentText(), "compare": compare,
                "engine": protocol.ENGINE_MNN if compare or str(path).lower().endswith(".mnn") else None,
                "partial": True}  # a run that fails mid-way keeps its tokens, with the error naming the step

    def _prompt_typed(self, text: str) -> None:
        """A prompt typed after "Give a prompt." took that request back (it stayed: helper 116)."""
        if text.strip() and self.status.text() in (ASK_PROMPT, ASK_PROMPT_TOKENIZER):
            self.status.setText("Generate when ready." if self.status.text() == ASK_PROMPT else
                                "Give a tokenizer.json, then Generate.")

    def run(self) -> bool:
        if hasattr(self.window_, "show_dock"):
            self.window_.show_dock("Text")  # F6 / Run > Generate Text with the dock hidden: show what runs
        req = self.request()
        if req is None:
            self.status.setText("Open a model first.")
            return False
        if self._not_decoder:
            return False  # the status says why
        folder = os.path.isdir(req["model"])
        if not req["text"] or (not folder and (not req["tokenizer"] or not os.path.isfile(req["tokenizer"]))):
            self.status.setText(ASK_PROMPT if folder or req["tokenizer"] else ASK_PROMPT_TOKENIZER)
            return False
        why = None if folder else self._too_long(req)
        if why:
            self.status.setText(f"Not generated: {why}."
                                + (" The results below are the previous run's." if self.result else ""))
            return False
        self._clear_results()
        self._set_running(True)
        self.status.setText(f"Generating {req['steps']} tokens with {Path(req['model']).name}\u2026")
        self.job_pids = {}
        self.window_.runner.run_job(JOB, lambda c, ev, cancelled: run_job(req, c, ev, cancelled, self.job_pids),
                                    on_done=self._done, on_fail=self._failed)
        return True

    def _too_long(self, req: dict) -> str | None:
        """Why prompt + steps cannot fit the positions the model holds (None: they fit, or nobody knows), before
        anything runs; the service checks it again (the CLI's refusal)."""
        limit = self._context
        if limit is None:
            return None
        prompt = self._prompt_tokens(req["tokenizer"], req["text"])
        if prompt is None:  # the tokenizer could not say: any prompt has a token
            return (f"{limit.holds()}: steps {req['steps']} would feed more whatever the prompt ({limit.why()})"
                    if req["steps"] > limit.positions else None)
        return None if limit.fits(prompt, req["steps"]) else limit.refusal(prompt, req["steps"])

    def _prompt_tokens(self, tokenizer: str, text: str) -> int | None:
        """The prompt's token count as the service feeds it (encode_text: a tokenizer.json that pads every text to
        128 counted 128 here), through the Inputs dock's cache of loaded tokenizers; None where it cannot say."""
        return text_tokens(text, tokenizer)[0] if tokenizer and text else None

    def sweep(self) -> bool:
        """The open export folder and its siblings of the same model through the sweep (a child process)."""
        path = self._path
        if not path or not os.path.isdir(path):
            self.status.setText("Open an MNN-LLM export folder first.")
            return False
        from mnnscope.inspector.errors import ModelError
        from mnnscope.inspector.llm.service import same_model_exports
        try:
            folders = same_model_exports(path)
        except (ModelError, OSError) as e:
            self.status.setText(str(e))
            return False
        if len(folders) < 2:
            self.status.setText(f"No other export of this model beside {Path(path).name}: a sweep compares several "
                                f"(put them in one folder, or use mnnscope llm-sweep DIR...).")
            return False
        text = self.prompt.text() or "The model runs on the phone"
        req = {"folders": folders, "text": text, "steps": self.steps.value()}
        self._set_running(True)
        self.status.setText(f"Sweeping {len(folders)} exports ({', '.join(Path(f).name for f in folders)})\u2026")
        self.job_pids = {}
        self.window_.runner.run_job(JOB, lambda c, ev, cancelled: run_sweep_job(req, c, ev, cancelled, self.job_pids),
                                    on_done=self._sweep_done, on_fail=self._failed)
        return True

    def _sweep_done(self, r: dict) -> None:
        self._set_running(False)
        self.show_sweep(r)
        self.finished.emit(r)

    def show_sweep(self, r: dict) -> None:
        self.sweep_result = r
        rows = sweep_rows(r)
        t = self.sweep_table
        t.setUpdatesEnabled(False)
        try:
            t.setRowCount(len(rows))
            for i, cells in enumerate(rows):
                for j, v in enumerate(cells):
                    item = QTableWidgetItem(v)
                    if j:
                        item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                    t.setItem(i, j, item)
            t.resizeColumnsToContents()
        finally:
            t.setUpdatesEnabled(True)
        t.setVisible(True)
        self.status.setText(f"{len(rows)} exports, {r['steps']} tokens of {r['prompt']!r}, against "
                            f"{Path(r['reference']).name} (teacher-forced on its greedy tokens)")

    def cancel(self) -> None:
        if self.window_.runner.job_busy(JOB):
            self.window_.runner.cancel_job(JOB)
            self._set_running(False)
            self.status.setText("Generation cancelled.")

    def _set_running(self, on: bool) -> None:
        can = not on and not self._not_decoder
        # (Run's key focus goes to Cancel while it runs, and back)
        focus.set_running(self.run_button, self.cancel_button, on, not self._not_decoder)
        self.run_button.setToolTip(f"Needs a decoder LM: {self._not_decoder}" if not on and self._not_decoder
                                   else "")
        self.sweep_button.setEnabled(not on)
        if self.run_action is not None:
            self.run_action.setEnabled(can)
            self.cancel_action.setEnabled(on)

    def _job_event(self, name: str, kind: str, payload) -> None:
        if name == JOB and kind == "progress" and isinstance(payload, dict) and payload.get("message") \
                and self.cancel_button.isEnabled():
            self.status.setText(str(payload["message"]))

    def _failed(self, msg: str) -> None:
        self._set_running(False)
        self.failed.emit(msg)
        if "cancelled" in msg:
            self.status.setText("Generation cancelled.")
            return
        self.status.setText(f"Generate failed: {msg}")
        self.window_.notify(f"Generate failed: {msg}", ERROR, "Text")

    def _done(self, result: dict) -> None:
        self._set_running(False)
        self.show_result(result)
        QTimer.singleShot(0, self, self._results_in_view)
        self.finished.emit(result)

    def heightForWidth(self, width: int) -> int:
        # the least height, not the preferred one (dockheight.least_height_for_width): the KL plot sat below the fold
        return least_height_for_width(self, width)

    def _results_in_view(self, grown: bool = False) -> None:
        """In a dock that scrolls, the run's summary at its top, the steps and the KL plot under it (the tokenizer and
        prompt rows scroll away): at 1500x950 a new user saw the plot's top edge and one tick, "0.1", under them.
        A short one first grows to the most the graph leaves it (helper 116 read one or two step rows at 1024x700)."""
        area = scroll_area_of(self)
        if area is None or not is_short(self):
            return
        dock = getattr(self.window_, "docks", {}).get("Text")
        if not grown and dock is not None and self.window_.grow_bottom(dock):
            QTimer.singleShot(0, self, lambda: self._results_in_view(grown=True))
            return
        if area.verticalScrollBar().maximum() <= 0:
            return
        top = self.status.mapTo(area.widget(), QPoint(0, 0)).y()
        area.verticalScrollBar().setValue(max(0, top - 2))

    # ----- results ---------------------------------------------------------------------------------
    def show_result(self, r: dict) -> None:
        self.result = r
        line = headline(r)
        err = r.get("error")
        head = (f"\u26a0 {r['steps']} of {r.get('steps_requested')} tokens, kept: {err.get('message')}\n"
                if err else "")
        notes = [w for w in r.get("warnings") or [] if not err or w != err.get("message")]
        # (its parts kept: a short dock shows it without the per-op split, _show_summary)
        ref = reference_speed(r)   # (beside MNN's: helper 115 found no ONNX Runtime speed anywhere)
        self._parts = (head + line + (f"\n{ref}" if ref else ""), op_split_summary(r.get("op_split")),
                       "".join(f"\n\u26a0 {w}" for w in notes))
        self._summary = "\n".join(self._parts[:2]) + self._parts[2]
        # the line a step's note takes, said from the start: a note added by the first click pushed the table down
        # under the pointer, and a double click's second click opened another step (helper 115)
        fd = r.get("first_divergence") or {}
        self._show_summary(f"Click step {fd['step']}'s row: its first divergence on the graph."
                           if fd.get("step") is not None and fd.get("node") else "")
        subject = Path(r.get("model") or "").name
        if err:
            self.window_.notify(f"Generate stopped at step {err.get('step')}: {err.get('message')}", ERROR,
                                "Text")
        for w in notes:
            self.window_.notify(w, WARNING, subject)
        self.text.setText(self._texts(r))
        # Filled with updates off and sized once: per-item resizing cost the UI thread over 100 ms.
        for w in (self.steps_table, self.routing):
            w.setUpdatesEnabled(False)
        try:
            self._fill_steps(r)
            self._fill_routing(r)
            self.steps_table.resizeColumnsToContents()
            self.routing.resizeColumnsToContents()
        finally:
            for w in (self.steps_table, self.routing):
                w.setUpdatesEnabled(True)
        self._fill_plot(r)
        total = sum(self.split.sizes()) or self.width()
        self.split.setSizes([int(total * 0.36), int(total * 0.32), int(total * 0.32)])

    def _texts(self, r: dict) -> str:
        """MNN's text, and with a comparison the reference's under it, the part after where they part in red."""
        prompt = f"<b>{_escape(r.get('prompt') or '')}</b> "
        ref = r.get("reference") or {}
        if "text" not in ref:
            return prompt + _escape(r["text"])
        common = r.get("common_text") or ""

        def marked(text: str) -> str:
            if r.get("free_run_mismatch_step") is None or not text.startswith(common):
                return _escape(text)
            return _escape(common) + f"<span style='color:#cc3311'>{_escape(text[len(common):])}</span>"
        return (f"MNN {_escape(r.get('mode') or '')}: {prompt}{marked(r['text'])}<br>"
                f"ONNX Runtime: {prompt}{marked(ref['text'])}")

    def _fill_steps(self, r: dict) -> None:
        ms = [r["prefill_ms"]] + list(r.get("decode_ms") or [])
        ref = (r.get("reference") or {}).get("tokens") or []
        agree = r.get("agree_per_step") or []
        kl = r.get("kl_per_step") or []
        forced = (r.get("teacher_forced") or {}).get("argmax") or []
        pieces = r.get("pieces") or [""] * len(r["tokens"])
        t = self.steps_table
        t.setRowCount(len(r["tokens"]))
        left = r.get("free_run_mismatch_step")
        opens = (r.get("first_divergence") or {}).get("step")   # the row a click opens on the graph (open_step)
        for i, tok in enumerate(r["tokens"]):
            cells = [i, tok, pieces[i] if i < len(pieces) else "", f"{ms[i]:.3f}" if i < len(ms) else "",
                     ref[i] if i < len(ref) else "", forced[i] if i < len(forced) else "",
                     ("yes" if agree[i] else "NO") if i < len(agree) else "", f"{kl[i]:.3g}" if i < len(kl) else ""]
            for c, v in enumerate(cells):
                item = QTableWidgetItem(str(v))
                if i < len(agree) and not agree[i]:
                    item.setForeground(QBrush(QColor("#cc3311")))
                elif c in (1, 2) and i < len(ref) and tok != ref[i]:
                    # MNN's own token is not the reference's while the step agrees: its text left the reference's
                    # earlier and goes on with other words; agree compares MNN forced
                    item.setForeground(QBrush(TOKEN_LEFT))
                    item.setToolTip("MNN's own token, not the reference's: " + (
                        f"its text left the reference's at step {left}; " if left is not None else "")
                        + "agree compares MNN forced (fed the reference's tokens) with the reference")
                if i == opens and c not in (1, 2):   # (nothing said the rows are clickable: helper 105's try)
                    item.setToolTip("click: this step's first divergence on the graph (its layerwise comparison)")
                t.setItem(i, c, item)

    def _plot_empty(self, empty: bool) -> None:
        """The KL plot before a run (or with no steps): its title alone, no 0-1 axes under nothing (helper 101's
        try)."""
        show_empty(self.plot, "Generate: KL per step, MNN against the reference" if empty else None)

    def _fill_plot(self, r: dict) -> None:
        kl = r.get("kl_per_step") or []
        self._plot_empty(not kl)
        xs = list(range(len(kl)))
        ys = [max(float(v), 1e-16) for v in kl]
        self.plot.setLogMode(y=bool(ys))
        self.kl_curve.setData(xs, ys)
        if ys:  # whole decades at both ends, so the axis labels read as powers of ten (no decade in 4e-14..8e-14)
            lo, hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
            self.plot.setYRange(lo, max(hi, lo + 1), padding=0.02)
        misses = [i for i, a in enumerate(r.get("agree_per_step") or []) if not a]
        self.miss_points.setData([x for x in misses], [ys[i] for i in misses])

    def _fill_routing(self, r: dict) -> None:
        routing = r.get("routing") or {}
        t = self.routing
        experts = max((s.get("experts") or 0 for s in routing.values()), default=0)
        t.setRowCount(len(routing))
        t.setColumnCount(2 * experts)
        t.setVisible(bool(routing))   # (no routers, or no run: no empty box, helper 102's try)
        t.setHorizontalHeaderLabels([f"ref e{e}" for e in range(experts)] + [f"mnn e{e}" for e in range(experts)])
        t.setVerticalHeaderLabels([f"{k.removeprefix('/model/')} ({s.get('flips', 0)} flip"
                                   f"{'' if s.get('flips', 0) == 1 else 's'})"
                                   for k, s in routing.items()])
        for row, s in enumerate(routing.values()):   # ("flips" said nothing of what flipped: helper 105's try)
            t.verticalHeaderItem(row).setToolTip(wrap_tip(   # (a header item's tooltip: wrapped here, helper 116)
                f"{s.get('flips', 0)} of {s.get('tokens', '?')} tokens flipped: MNN chose another set of experts for "
                f"them than the reference did{flip_places(r, s)}; the cells: tokens each expert got (reference e0.., "
                "then MNN's)"))
        for row, s in enumerate(routing.values()):
            ref, mnn = s["load"].get("reference") or [], s["load"].get("mnn") or []
            top = max(ref + mnn + [1])
            for col, v in enumerate(list(ref) + list(mnn)):
                item = QTableWidgetItem(str(v))
                shade = int(255 - 110 * math.sqrt(v / top))
                item.setBackground(QBrush(QColor(shade, shade, 255)))
                item.setForeground(QBrush(QColor("black")))
                if col >= len(ref) and col - len(ref) < len(ref) and v != ref[col - len(ref)]:
                    item.setForeground(QBrush(QColor("#cc3311")))
                t.setItem(row, col, item)

    def _step_note(self, text: str) -> None:
        """A step's note under the run's summary lines (a tester lost the timing lines to a click on a row)."""
        self._show_summary(text)

    def _show_summary(self, note: str = "") -> None:
        """The run's summary in the status line, whole; in a short dock (dockheight.is_short) its warning and headline
        lines only, the per-op split and the notes (each sent as a notification too) in the tooltip."""
        self._note = note
        self._compact = is_short(self)  # what it was drawn for (_fit_summary redraws when that changes)
        summary = getattr(self, "_summary", "")
        whole = "\n".join(x for x in (summary, note) if x)
        if not summary or not self._compact:
            self.status.setText(whole)
            self.status.setToolTip("")
            return
        # the per-op split (two lines at 1024 px) goes to the tooltip; warnings stay in view
        headline, _, warnings = self._parts
        self.status.setText(headline + " (per-op times: hover)" + warnings + (f"\n{note}" if note else ""))
        self.status.setToolTip(whole)

    def showEvent(self, e) -> None:
        super().showEvent(e)
        watch_short(self, self._fit_summary)  # (in its dock's scroll area by now: the viewport is watched too)
        self._fit_summary()

    def _fit_summary(self) -> None:
        if is_short(self) != getattr(self, "_compact", None) and getattr(self, "_summary", ""):
            self._show_summary(getattr(self, "_note", ""))

    def open_step(self, step: int) -> bool:
        """Select the first divergence of `step` on the graph; only the first mismatching step has one."""
        r = self.result or {}
        fd = r.get("first_divergence") or {}
        if fd.get("step") != step:
            if r.get("first_mismatch_step") is not None:
                self._step_note(f"Step {step}: only the first mismatching step ({r['first_mismatch_step']}) "
                                    "has a layerwise comparison.")
            return False
        node = fd.get("node")
        if not node:
            self._step_note(f"Step {step}: the layerwise comparison found no first divergence "
                                f"({fd.get('error') or 'every tensor within tolerance'}).")
            return False
        view = getattr(self.window_.pane, "main_view", None)
        if node not in self._names or view is None or \
                os.path.abspath(self._path or "") != os.path.abspath(r.get("model") or ""):
            self._step_note(f"Step {step}: first divergence at {node} (not on the open graph).")
            return False
        coloured = bool(fd.get("errors"))
        if coloured:
            # the graph in the step's error colours, the first divergence's region outlined, as the Compare dock
            # shows a comparison (the node was selected on a graph left in its op colours: a new-user try)
            ov = errormap.error_overlay(fd["errors"])
            ov.name = f"step {step}, {ov.name}"
            view.set_overlay(ov)
            self._overlay = ov
            view.canvas.set_marked([self._names[n["name"]] for n in (fd.get("first_divergence") or {}).get("region", [])
                                    if n["name"] in self._names])
        view.reveal(self._names[node])
        self._step_note(f"Step {step}: first divergence at {node} "
                        f"({(fd.get('first_divergence') or {}).get('op_type', '?')}), selected on the graph"
                        + (", coloured by the error each op introduces at this step." if coloured else "."))
        return True


def flip_places(r: dict, s: dict, most: int = 8) -> str:
    """Where a router flipped, for its tooltip: "; at positions 3 ('cat', the prompt's) and 12 (step 2's token 'on'):
    the first flip feeds step 0's prediction, the first mismatch is at step 2". Helper 115 could not tell whether the
    router flipped before the tokens parted or after."""
    flipped = s.get("flipped_tokens") or []
    if not flipped:
        return ""
    n = len(r.get("prompt_ids") or [])
    pieces = s.get("flipped_pieces") or {}
    places = []
    for p in flipped[:most]:
        piece = pieces.get(str(p))
        if p < n:
            places.append(f"{p} ({piece!r}, the prompt's)" if piece else f"{p} (the prompt's)")
        else:
            places.append(f"{p} (step {p - n}'s token {piece!r})" if piece else f"{p} (step {p - n}'s token)")
    more = f" and {len(flipped) - most} more" if len(flipped) > most else ""
    fm = r.get("first_mismatch_step")
    mismatch = "" if fm is None else f", the first mismatch is at step {fm}"
    return (f"; at position{'s' if len(flipped) > 1 else ''} {', '.join(places)}{more}: the first flip feeds step "
            f"{max(0, flipped[0] - n + 1)}'s prediction{mismatch}")


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
