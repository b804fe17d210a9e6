"""Every converter setting of ConvertSettings (and its int8 calibration) as a form, grouped: precision and
quantization, optimization and fusion, inputs and shapes, advanced. Each widget carries its help as a tooltip
and as a line under it; the words are the CLI's own (`mnnscope convert --help`), read from its argparse parser,
so the dock and the command line never say different things. OneLineLabel: the line above the form naming what
differs from the defaults."""
from __future__ import annotations

import argparse
import dataclasses
import functools

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QPainter, QValidator
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QGroupBox, QLabel, QLineEdit, QSizePolicy,
                               QSpinBox, QToolTip, QVBoxLayout, QWidget)

from mnnscope.inspector.convert.settings import (FEATURE_METHODS, HELP, IMAGE_FORMATS, INT8_HELP, OPTIMIZE_PREFER,
                                                 WEIGHT_METHODS, ConvertSettings, Int8Settings)

# (group, field, label, kind, choices). Kinds: bool; tri (None/True/False, labelled by choices); choice (values,
# None first = the converter's default); int (0 = unset); text; list (comma separated); floats (comma separated).
# Fields starting with "int8." belong to Int8Settings.
# choices named beside their value where another dock names them otherwise: Compare's modes int8w and int4w are
# these conversions (one setting read as three: "Weight quant bits", "int8w", "8-bit quantized": a new-user try)
CHOICE_WORDS = {("weight_quant_bits", 8): "8 (Compare's int8w)", ("weight_quant_bits", 4): "4 (Compare's int4w)"}
GROUPS = ("Precision and quantization", "Optimization and fusion", "Inputs and shapes", "Advanced")
FIELDS = (
    ("Precision and quantization", "fp16", "fp16 weights", "bool", None),
    ("Precision and quantization", "weight_quant_bits", "Weight quant bits", "choice",
     (None, 8, 7, 6, 5, 4, 3, 2)),
    ("Precision and quantization", "weight_quant_block", "Quant block", "int", None),
    ("Precision and quantization", "weight_quant_asymmetric", "Quant symmetry", "tri",
     ("converter default", "asymmetric", "symmetric")),
    ("Precision and quantization", "hqq", "HQQ quantization", "bool", None),
    ("Precision and quantization", "int8", "int8 (mnnquant)", "bool", None),
    ("Precision and quantization", "int8.feature_method", "int8 feature method", "choice", FEATURE_METHODS[:2]),
    ("Precision and quantization", "int8.weight_method", "int8 weight method", "choice", WEIGHT_METHODS),
    ("Precision and quantization", "int8.samples", "int8 samples", "int", None),
    ("Precision and quantization", "int8.calib_dir", "Calibration folder", "text", None),
    ("Precision and quantization", "int8.calib_files", "Calibration files", "list", None),
    ("Precision and quantization", "int8.calib_random", "Random samples", "int", None),
    ("Precision and quantization", "int8.calib_text", "Calibration text", "text", None),
    ("Precision and quantization", "int8.tokenizer", "Tokenizer", "text", None),
    ("Precision and quantization", "int8.skip_ops", "Skip ops", "list", None),
    ("Precision and quantization", "int8.quant_bits", "int8 bits", "int", None),
    ("Precision and quantization", "int8.seed", "Calibration seed", "int", None),
    ("Optimization and fusion", "optimize_level", "Optimize level", "choice", (None, 1, 2)),
    ("Optimization and fusion", "optimize_prefer", "Optimize for", "choice", (None,) + tuple(OPTIMIZE_PREFER)),
    ("Optimization and fusion", "transformer_fuse", "fuse transformer blocks", "bool", None),
    ("Optimization and fusion", "convert_matmul_to_conv", "MatMul to Conv", "tri",
     ("converter default", "MatMul to Conv", "keep MatMul")),
    ("Optimization and fusion", "gelu_approximation", "GELU", "tri",
     ("converter default (approximate)", "approximate kernel", "exact erf")),
    ("Optimization and fusion", "origin_rnn", "keep LSTM/GRU ops", "bool", None),
    ("Inputs and shapes", "save_static_model", "static model (fold shapes)", "bool", None),
    ("Inputs and shapes", "keep_input_format", "Input layout", "tri",
     ("converter default", "keep NCHW", "NC4HW4")),
    ("Inputs and shapes", "int8.width", "Image width", "int", None),
    ("Inputs and shapes", "int8.height", "Image height", "int", None),
    ("Inputs and shapes", "int8.image_format", "Image format", "choice", IMAGE_FORMATS),
    ("Inputs and shapes", "int8.mean", "Image mean", "floats", None),
    ("Inputs and shapes", "int8.std", "Image std", "floats", None),
    ("Advanced", "external_weights", "external weight file", "bool", None),
    ("Advanced", "allow_custom_op", "allow custom ops", "bool", None),
    ("Advanced", "dump_pass", "log optimizer passes (node map)", "bool", None),
)

# int8 fields whose CLI flag has another dest than the field (convert_cmd._INT8_FLAGS, inverted below)
_NO_FLAG = {"int8.width", "int8.height", "int8.quant_bits", "int8.seed"}


@functools.lru_cache(maxsize=1)
def cli_help() -> dict[str, list[tuple[str, str]]]:
    """{settings field: [(flag, help), ...]} from `mnnscope convert`'s argparse parser (int8 fields as
    "int8.<name>")."""
    from mnnscope.inspector.cli import convert_cmd
    root = argparse.ArgumentParser()
    convert_cmd.add_parser(root.add_subparsers())
    parser = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction)).choices["convert"]
    int8 = {dest: f"int8.{name}" for dest, name in convert_cmd._INT8_FLAGS.items()}
    out: dict[str, list[tuple[str, str]]] = {}
    for action in parser._actions:
        if not action.option_strings or not action.help:
            continue
        key = int8.get(action.dest, action.dest)
        out.setdefault(key, []).append((action.option_strings[-1], action.help))
    return out


_BY_FIELD = {field: (label, kind, choices) for _, field, label, kind, choices in FIELDS}


def settings_words(settings) -> list[str]:
    """The settings that differ from the converter's defaults, named as this form shows them, in describe()'s order:
    a box ticked by its label ("fp16 weights"), one unticked that is on by default as "<label>: off", a choice or a
    number as "<label>: <value>" ("Weight quant bits: 8"), a three-way choice by the choice's text ("GELU: exact
    erf"), int8 in describe()'s words ("int8 (KL/MAX_ABS, calib_dir)"). `settings`: ConvertSettings, its to_json()
    or None ([]). describe() keeps the JSON keys for the CLI; the window said "fp16=True, weight_quant_bits=8",
    words a user could not find in this form (a new user's try at 1024x700)."""
    if not settings:
        return []
    s = settings if isinstance(settings, ConvertSettings) else ConvertSettings.from_json(settings)
    default = ConvertSettings()
    out = []
    for f in dataclasses.fields(s):
        value = getattr(s, f.name)
        if f.name == "int8":
            if value is not None:
                out += ConvertSettings(int8=value).describe()  # describe()'s own words for int8
            continue
        if value == getattr(default, f.name):
            continue
        label, kind, choices = _BY_FIELD.get(f.name, (None, None, None))
        if kind == "bool" and isinstance(value, bool):
            out.append(label if value else f"{label}: off")
        elif kind == "tri" and value in (True, False):
            out.append(f"{label}: {choices[1 if value else 2]}")
        elif kind in ("choice", "int") and value is not None:
            out.append(f"{label}: {value}")
        else:  # not a value the form shows: the key, as describe() names it
            out.append(f"{f.name}={value}")
    return out


def settings_text(settings) -> str:
    """settings_words() joined ("fp16 weights, GELU: exact erf"); "" for the defaults or none."""
    return ", ".join(settings_words(settings))


def help_text(field: str) -> tuple[str, str]:
    """(help line, tooltip) of a field: the CLI's help of its flag(s), or the settings' own for the few
    int8 details that have no flag."""
    flags = cli_help().get(field)
    if flags:
        line = "; ".join(f"{f}: {h}" if len(flags) > 1 or f.startswith("--no-") else h for f, h in flags)
        tip = "\n".join(f"{f}  {h}" for f, h in flags)
        return line, tip
    name = field.split(".", 1)[-1]
    text = INT8_HELP.get(name) if field.startswith("int8.") else HELP.get(name)
    return text or "", text or ""



class UnsetSpinBox(QSpinBox):
    """A number setting whose 0 reads "unset": emptied, it is unset (helper 120 selected the block size and deleted it,
    and 32 came back; only typing 0 unset it, which nothing said)."""

    def validate(self, text: str, pos: int):
        if not text.strip():
            return QValidator.Acceptable, text, pos
        return super().validate(text, pos)

    def valueFromText(self, text: str) -> int:
        return self.minimum() if not text.strip() else super().valueFromText(text)

    def fixup(self, text: str) -> str:
        return self.specialValueText() if not text.strip() else super().fixup(text)

class OneLineLabel(QLabel):
    """A label one line tall whatever it says: text() and the tooltip hold its text whole, the line drawn is `line`
    (set_text; else the text's lines side by side), cut with "\u2026" where the label ends; a click shows the
    tooltip at once. Above the form, word-wrapped, "Changed from the defaults ..." grew from one line to four as
    settings changed and pushed every field down under the pointer (a new user's try at 1024x700)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._line = ""
        self.setTextFormat(Qt.PlainText)
        # its width is what the column gives it: the text's own width would widen the column, its lines heighten it
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self._fix_height()

    def set_text(self, text: str, line: str = "") -> None:
        self._line = line
        self.setText(text)
        self.setToolTip(text)
        self.update()

    def shown(self) -> str:
        """The line as drawn: elided to the label's width."""
        line = self._line or "  ".join(self.text().splitlines())
        return self.fontMetrics().elidedText(line, Qt.ElideRight, max(0, self.contentsRect().width()))

    def _fix_height(self) -> None:
        self.setFixedHeight(self.fontMetrics().lineSpacing() + 4)

    def sizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance(self._line or self.text()), self.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.height())

    def changeEvent(self, e) -> None:
        super().changeEvent(e)
        if e.type() in (QEvent.FontChange, QEvent.StyleChange):
            self._fix_height()

    def paintEvent(self, e) -> None:
        p = QPainter(self)
        self.style().drawItemText(p, self.contentsRect(), int(Qt.AlignLeft | Qt.AlignVCenter), self.palette(),
                                  self.isEnabled(), self.shown(), self.foregroundRole())

    def mousePressEvent(self, e) -> None:
        if self.toolTip():
            QToolTip.showText(e.globalPosition().toPoint(), self.toolTip(), self)
        super().mousePressEvent(e)


class SettingsForm(QWidget):
    """The grouped settings; `changed` on every edit; `settings()` / `set_settings()`."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.widgets: dict[str, QWidget] = {}
        self.help_lines: dict[str, QLabel] = {}
        self.groups: dict[str, QGroupBox] = {}
        self._rows: dict[str, tuple[QFormLayout, QWidget, str, str]] = {}  # field -> (form, row, what it says, group)
        # Random samples holds a stand-in the app put there (Int8Settings.calib_random_default), until edited
        self._random_default = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        forms = {}
        for g in GROUPS:
            box = QGroupBox(g, self)
            forms[g] = QFormLayout(box)
            forms[g].setVerticalSpacing(2)
            # a narrow column (a 1024x700 window) puts a row's field under its label instead of clipping the
            # column behind a horizontal scroll bar ("store float weights as fp..."; tryout 6)
            forms[g].setRowWrapPolicy(QFormLayout.WrapLongRows)
            self.groups[g] = box
            lay.addWidget(box)
        lay.addStretch(1)
        for group, field, label, kind, choices in FIELDS:
            w = self._widget(kind, choices, label, field)
            line, tip = help_text(field)
            w.setToolTip(tip)
            note = QLabel(line)
            note.setWordWrap(True)
            note.setToolTip(tip)
            note.setStyleSheet("color: palette(mid); font-size: 9pt;")
            holder = QWidget()
            v = QVBoxLayout(holder)
            v.setContentsMargins(0, 0, 0, 4)
            v.setSpacing(0)
            v.addWidget(w)
            v.addWidget(note)
            forms[group].addRow("" if kind == "bool" else label, holder)
            self.widgets[field] = w
            self.help_lines[field] = note
            words = " ".join([field, label, line, tip, *(str(c) for c in choices or () if c is not None)])
            self._rows[field] = (forms[group], holder, words.lower(), group)
        self.set_settings(ConvertSettings())

    def filter(self, text: str) -> list[str]:
        """Only the settings whose label, flag or help holds every word of `text` (any case) are shown, and the
        groups that hold one; "" shows them all. At 1024x700 the form's column is ~290 px, and finding "keep
        LSTM/GRU ops" took a new-user try ~20 wheel clicks. Returns the fields shown."""
        words = text.lower().split()
        shown = []
        for field, (form, holder, said, _) in self._rows.items():
            on = all(w in said for w in words)
            form.setRowVisible(holder, on)
            if on:
                shown.append(field)
        for g, box in self.groups.items():
            box.setVisible(any(self._rows[f][3] == g for f in shown))
        return shown

    def _widget(self, kind, choices, label, field: str = "") -> QWidget:
        if kind == "bool":
            w = QCheckBox(label)
            w.toggled.connect(self._edited)
        elif kind in ("tri", "choice"):
            w = QComboBox()
            values = (None, True, False) if kind == "tri" else choices
            for k, v in enumerate(values):
                text = choices[k] if kind == "tri" else ("converter default" if v is None else
                                                         CHOICE_WORDS.get((field, v), str(v)))
                w.addItem(text, v)
            w.currentIndexChanged.connect(self._edited)
        elif kind == "int":
            w = UnsetSpinBox()
            w.setRange(0, 1 << 20)
            w.setSpecialValueText("unset")
            w.valueChanged.connect(self._edited)
        else:
            w = QLineEdit()
            if kind in ("list", "floats"):
                w.setPlaceholderText("comma separated")
            w.textChanged.connect(self._edited)
        w.setProperty("kind", kind)
        return w

    def _edited(self, *_):
        if self.sender() is self.widgets.get("int8.calib_random"):
            self._random_default = False  # the user's own number now: beside a folder it is refused again
        self._enable()
        self.changed.emit()

    def _enable(self) -> None:
        on = self.isEnabled()
        quant = self.value("weight_quant_bits") is not None
        for f in ("weight_quant_block", "weight_quant_asymmetric", "hqq"):
            self.widgets[f].setEnabled(on and quant)
        int8 = bool(self.value("int8"))
        for f, w in self.widgets.items():
            if f.startswith("int8."):
                w.setEnabled(on and int8)

    def changeEvent(self, e) -> None:
        super().changeEvent(e)
        if e.type() == e.Type.EnabledChange:
            self._enable()

    # values
    def value(self, field: str):
        w = self.widgets[field]
        kind = w.property("kind")
        if kind == "bool":
            return w.isChecked()
        if kind in ("tri", "choice"):
            return w.currentData()
        if kind == "int":
            return w.value() or None
        text = w.text().strip()
        if kind == "text":
            return text or None
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if kind == "floats":
            try:
                return [float(p) for p in parts]
            except ValueError:
                return parts  # validate() names the problem
        return parts

    def set_value(self, field: str, v) -> None:
        w = self.widgets[field]
        kind = w.property("kind")
        if kind == "bool":
            w.setChecked(bool(v))
        elif kind in ("tri", "choice"):
            i = w.findData(v)
            w.setCurrentIndex(i if i >= 0 else 0)
        elif kind == "int":
            w.setValue(int(v or 0))
        elif kind == "text":
            w.setText(v or "")
        else:
            w.setText(", ".join(str(x) for x in v or []))

    def settings(self) -> ConvertSettings:
        kw, int8 = {}, {}
        for field in self.widgets:
            if field.startswith("int8."):
                int8[field[5:]] = self.value(field)
            elif field != "int8":
                kw[field] = self.value(field)
        defaults = Int8Settings()
        for k in ("samples", "quant_bits", "seed"):
            if int8[k] is None:
                int8[k] = getattr(defaults, k)
        for k in ("mean", "std"):
            if not int8[k]:
                int8[k] = getattr(defaults, k)
        s = ConvertSettings(**kw)
        if s.weight_quant_bits is None:
            s = dataclasses.replace(s, weight_quant_block=None, weight_quant_asymmetric=None, hqq=False)
        if self.value("int8"):
            s.int8 = Int8Settings(**int8, calib_random_default=self._random_default and bool(int8["calib_random"]))
        return s

    def set_settings(self, s: ConvertSettings) -> None:
        blocker = [w.blockSignals(True) for w in self.widgets.values()]
        self._random_default = bool(s.int8 is not None and s.int8.calib_random_default)
        try:
            for field in self.widgets:
                if field == "int8":
                    self.set_value(field, s.int8 is not None)
                elif field.startswith("int8."):
                    self.set_value(field, getattr(s.int8 or Int8Settings(), field[5:]))
                else:
                    self.set_value(field, getattr(s, field))
        finally:
            for w, _ in zip(self.widgets.values(), blocker):
                w.blockSignals(False)
        self._enable()
        self.changed.emit()
