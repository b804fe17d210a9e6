"""The Inputs dock: what every run of the docks feeds the model, one row per model input.

A row shows the input's name, dtype and shape, with its dynamic dimensions as editable sizes (their defaults
are inspector.inputs' own, and a size edited on one input binds the same named dimension of the others), and
where its data comes from: Random (the dock's seed and a [low, high) range; integer ids that index an
embedding table are bounded by its rows, as `mnnscope profile` bounds them), File (.npy/.npz), Image (resized
to the input's H x W, mean/std on the [0, 1] scale, RGB or BGR, laid out as the input says) or Text (through a
tokenizer.json: the one chosen, else the one beside the model, which the row's tokenizer field then names). A File
row's sizes are its file's, a Text row's its token count ("13 tokens" beside the text; the tokenizer is loaded here,
cached): the inputs sharing their named dims follow. An .npz chosen for one input also feeds the others it has an
array for (by name) that are still on Random by default.
`spec()` is the choice as inputs.data.make_inputs keywords: the docks pass it to the services.

Everything here is checked cheaply on the UI thread (file headers, numbers; never the model): errors show
in the row. For an .mnn model the edited sizes also decide the shapes the graph shows (the window asks the
runner again). `restore(run)` sets the dock from a run-store record; "Restore from run…" lists the model's
recorded runs (read off the UI thread). Each model gets back the inputs last set for it when opened again, also
after a restart (the user's settings keep them, as the Convert dock keeps its own; one that no longer fits is left out).
"""
from __future__ import annotations

import html
import os
import re
import threading
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (QBoxLayout, QCheckBox, QComboBox, QFrame, QGridLayout, QHBoxLayout,
                               QLabel, QLayout, QLineEdit, QMenu, QPushButton, QScrollArea, QSizePolicy, QSpinBox,
                               QStackedWidget, QStyle, QStyleOptionSpinBox, QToolButton, QVBoxLayout, QWidget)

from mnnscope.gui import filedialog
from mnnscope.gui import settings as cfg
from mnnscope.gui.dockheight import least_height_for_width, scroll_area_of, watch_short
from mnnscope.gui.canvas import fmt_shape

from mnnscope.inspector.errors import UsageError
from mnnscope.inspector.inputs.data import (RANDOM_INPUTS, check_range, dim_values, free_input_sizes, inputs_from,
                                             named_dim_conflicts, random_range, rule_words, table_index_bounds,
                                             table_negated_inputs)
from mnnscope.inspector.inputs.sources import IMAGE_SUFFIXES, image_layout, is_free, text_role, tokenizer_beside

from mnnscope.gui.notify import INFO
from mnnscope.gui.tasks import TaskSlot

RANDOM, FILE, IMAGE, TEXT = "Random", "File", "Image", "Text"
# an Image row's usual normalisations: {menu text: (mean, std)} as the fields take them, on the [0, 1] scale
NORMALISATIONS = {"ImageNet (mean 0.485,0.456,0.406 \u00b7 std 0.229,0.224,0.225)": ("0.485,0.456,0.406",
                                                                                  "0.229,0.224,0.225"),
                  "[-1, 1] (mean 0.5 \u00b7 std 0.5)": ("0.5", "0.5"),
                  "[0, 1] (mean 0 \u00b7 std 1)": ("", ""),
                  "0..255 pixels (std 1/255)": ("", "0.00392156862745098")}
SOURCES = (RANDOM, FILE, IMAGE, TEXT)
SPEC_KEYS = ("seed", "shapes", "files", "text", "tokenizer", "image", "ranges")
RUN_KINDS = ("profile", "stats", "sweep", "compare")   # the recorded runs that ran the model on inputs
SHAPE, PAGE = "shape", "page"   # what a row's message is about: it goes under that part of the row (_place_error)
SHAPES_DEBOUNCE_MS = 400   # edited sizes of an .mnn model: ask for its shapes once typing stops
# each model's inputs as set when it was left or the app closed, {absolute path: spec}, the most recent last (as the
# Convert dock keeps its settings): a new user chose Text and typed a prompt, and the app opened again said Random
BY_MODEL_KEY = "inputs/by_model"


def _num(x) -> str:
    return str(int(x)) if float(x) == int(x) else f"{x:g}"


def _floats(text: str) -> list[float] | None:
    text = text.strip()
    if not text:
        return None
    return [float(v) for v in text.replace(" ", ",").split(",") if v.strip()]


def _header_shape(f) -> tuple:
    version = np.lib.format.read_magic(f)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    return tuple(read(f)[0])


def _open_npz(path: str):
    """An .npz as the zip it is (a file that is none: ValueError, which the rows' checks catch; zipfile's BadZipFile
    is no OSError)."""
    import zipfile
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        raise ValueError(f"not a zip archive ({e})") from e


def _npz_names(z) -> list[str]:
    """The array names an open .npz holds (its zip directory only; numpy's keys)."""
    return [n[:-4] for n in z.namelist() if n.endswith(".npy")]


def _npz_keys(path: str) -> list[str]:
    """The array names an .npz holds."""
    with _open_npz(path) as z:
        return _npz_names(z)


def _npy_shape(path: str, name: str) -> tuple | None:
    """The array shape an .npy/.npz file holds for input `name`, read from the headers only (cheap)."""
    if path.lower().endswith(".npy"):
        with open(path, "rb") as f:
            return _header_shape(f)
    with _open_npz(path) as z:
        names = _npz_names(z)
        pick = name if name in names else (names[0] if len(names) == 1 else None)
        if pick is None:
            raise UsageError(f"{Path(path).name} holds {names}, none named '{name}'")
        with z.open(pick + ".npy") as f:
            return _header_shape(f)


_TOKENIZERS: dict[str, tuple] = {}   # tokenizer.json path -> (mtime, Tokenizer or None, why not, {text: ids})
SYNC_TOKENIZER_BYTES = 1 << 20   # a larger tokenizer.json loads on a thread (an LLM's takes 0.1-0.5 s: no UI stall)
_LOADING: set[tuple[str, float]] = set()


class _TokenizerLoads(QObject):
    """Says (path) when a tokenizer.json loaded on a thread is ready: the rows count again (queued to the UI thread)."""
    loaded = Signal(str)


TOKENIZER_LOADS = _TokenizerLoads()


def _load_tokenizer(path: str, mtime: float) -> tuple:
    tok, why = None, ""
    try:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(path)
        tok.no_padding()
        tok.no_truncation()
    except ImportError:
        why = "text needs the 'tokenizers' package (pip install tokenizers)"
    except Exception as e:  # (the library's own errors: a JSON or a model it cannot read)
        tok, why = None, f"{Path(path).name} is not a readable tokenizer.json ({str(e).splitlines()[0][:120]})"
    return mtime, tok, why, {}


def _load_in_background(path: str, mtime: float) -> None:
    try:
        _TOKENIZERS[path] = _load_tokenizer(path, mtime)
    finally:
        _LOADING.discard((path, mtime))
        TOKENIZER_LOADS.loaded.emit(path)


def text_tokens(text: str, tokenizer: str) -> tuple[int | None, str]:
    """How many token ids `text` makes through `tokenizer` (a tokenizer.json) as a run feeds them
    (inputs.sources.encode_text: special tokens added, the file's own padding and truncation off; a file that pads
    every text to 128 would otherwise count 128), with ""; else None and why not, in a few words (text_ids)."""
    ids, why = text_ids(text, tokenizer)
    return (None, why) if ids is None else (len(ids), "")


def text_ids(text: str, tokenizer: str) -> tuple[tuple[int, ...] | None, str]:
    """The token ids `text` makes through `tokenizer` as a run feeds them (text_tokens), with ""; else None and why
    not, in a few words. Nothing raises. The loaded tokenizer is kept per path and mtime, and the ids of its texts
    with it: the rows count on each key. A tokenizer.json over SYNC_TOKENIZER_BYTES loads on a thread: until
    TOKENIZER_LOADS.loaded says its path, the answer is None and "loading <name>…"."""
    path = os.path.abspath(tokenizer)
    try:
        mtime = os.path.getmtime(path)
        size = os.path.getsize(path)
    except OSError:
        return None, f"no such file: {tokenizer}"
    cached = _TOKENIZERS.get(path)
    if cached is None or cached[0] != mtime:
        if size <= SYNC_TOKENIZER_BYTES:
            cached = _TOKENIZERS[path] = _load_tokenizer(path, mtime)
        else:
            if (path, mtime) not in _LOADING:
                _LOADING.add((path, mtime))
                threading.Thread(target=_load_in_background, args=(path, mtime), daemon=True,
                                 name="tokenizer-load").start()
            return None, f"loading {Path(path).name} ({size / 1e6:.1f} MB)\u2026"
    _, tok, why, texts = cached
    if tok is None:
        return None, why
    if text not in texts:
        if len(texts) > 256:   # (one per key typed: kept few)
            texts.clear()
        try:
            texts[text] = tuple(tok.encode(text).ids)
        except Exception as e:
            return None, f"the text does not tokenize with {Path(path).name} ({str(e).splitlines()[0][:120]})"
    if not texts[text]:
        return None, f"the text makes no tokens with {Path(path).name}"
    return texts[text], ""


def spec_of_run(run: dict) -> dict:
    """make_inputs keywords from a run-store record: its settings' "input_spec" (compare), else the input keys
    profile records among its settings (seed, shapes, files, text, tokenizer, image, ranges)."""
    settings = run.get("settings") or {}
    spec = settings.get("input_spec")
    if isinstance(spec, dict):
        return dict(spec)
    return {k: settings[k] for k in SPEC_KEYS if k in settings}


def short_dim(name: str, most: int = 10) -> str:
    """A dim's name for the box that sizes it: whole up to `most` characters, else its start and end."""
    return name if len(name) <= most else f"{name[:4]}\u2026{name[-3:]}"


# names exporters make up for a free dim, which say nothing of what it is (Paddle's "DynamicDimension.1", ONNX shape
# inference's "unk__7", "dim_2")
_MADE_UP = re.compile(r"^(DynamicDimension\.\d+|unk__\d+|dim_?\d+)$")


def dim_role(name: str, axis: int, shape: list) -> str | None:
    """On an image-like input (4-D, 1, 3 or 4 channels fixed at axis 1), a made-up name's role: "batch", "height" or
    "width"; None for any other dim."""
    if _MADE_UP.match(name) and len(shape) == 4 and shape[1] in (1, 3, 4) and axis != 1:
        return ("batch", "", "height", "width")[axis]
    return None


def dim_label(name: str, axis: int, shape: list) -> str:
    """What the box sizing a free dim calls it: a made-up name its role (dim_role: a new-user try read "Dyna…n.1 =
    640" and "Dyna…n.2" and could not tell height from width); else the name, shortened (short_dim)."""
    return dim_role(name, axis, shape) or short_dim(name)


class DimBox(QSpinBox):
    """The box sizing a free dim, tall enough for its text. Under a style sheet (the app sets one) Qt makes a spin
    box 19 px high with a 13 px editor for a 14 px font: the editor clips the text's bottom row, so "tgt_len = 8"
    read "tgt len = 8" (a new user's try) and g lost its tail. The box grows until its editor gets the height
    the editor itself asks for."""

    def _grown(self, size: QSize) -> QSize:
        opt = QStyleOptionSpinBox()
        self.initStyleOption(opt)
        opt.rect = QRect(QPoint(0, 0), size)
        field = self.style().subControlRect(QStyle.CC_SpinBox, opt, QStyle.SC_SpinBoxEditField, self)
        short = self.lineEdit().sizeHint().height() - field.height()
        return QSize(size.width(), size.height() + max(0, short))

    def sizeHint(self) -> QSize:
        return self._grown(super().sizeHint())

    def minimumSizeHint(self) -> QSize:
        return self._grown(super().minimumSizeHint())


class ElidedLabel(QLabel):
    """A one-line label that never widens the dock: a text longer than its room ends in "\u2026", the whole of it in
    the tooltip (the model's name above the narrow dock's rows)."""

    def __init__(self, text: str = ""):
        super().__init__(text)
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.setMinimumWidth(self.fontMetrics().horizontalAdvance("x" * 8))

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def paintEvent(self, event) -> None:
        rect = self.contentsRect()
        text = self.fontMetrics().elidedText(self.text(), Qt.ElideRight, rect.width())
        painter = QPainter(self)
        self.style().drawItemText(painter, rect, Qt.AlignLeft | Qt.AlignVCenter, self.palette(), self.isEnabled(),
                                  text, self.foregroundRole())


class RowMessage(ElidedLabel):
    """A row's problem in one line of fixed height, its space kept while there is none: shown and hidden as the
    user types, a wrapped message moved every row below it up and down (a new user's try). A message longer than
    the line ends in "\u2026", the whole of it in the tooltip."""

    def __init__(self):
        super().__init__("")
        self.setMinimumWidth(0)
        self.setFixedHeight(self.fontMetrics().height())
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)  # a long message does not widen the grid
        policy = self.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.setSizePolicy(policy)


class ShapeFlow(QLayout):
    """A row's shape ("[ batch = 1 × tgt_len = 8 ]"): on one line as a QHBoxLayout lays it out (each part at its size
    hint, left-aligned; the wide dock), or, `wrap` set (the narrow dock), its parts flowing onto more lines where one is
    too short: docked right ~300 px wide, the decoder's rows showed "batch = 1" and the other boxes were out of view."""

    def __init__(self, parent=None, spacing: int = 2):
        super().__init__(parent)
        self._items = []
        self.wrap = False
        self.setContentsMargins(0, 0, 0, 0)
        self.setSpacing(spacing)

    def set_wrap(self, wrap: bool) -> None:
        if wrap != self.wrap:
            self.wrap = wrap
            self.invalidate()

    def addItem(self, item) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, i):
        return self._items[i] if 0 <= i < len(self._items) else None

    def takeAt(self, i):
        return self._items.pop(i) if 0 <= i < len(self._items) else None

    def expandingDirections(self):
        return Qt.Orientation(0)

    def _shown(self):
        return [it for it in self._items if not it.isEmpty()]

    def line_minimum(self) -> int:
        """The width the parts need on one line (the wide dock's minimum)."""
        items = self._shown()
        return sum(it.minimumSize().width() for it in items) + self.spacing() * max(0, len(items) - 1)

    def sizeHint(self) -> QSize:
        items = self._shown()
        return QSize(sum(it.sizeHint().width() for it in items) + self.spacing() * max(0, len(items) - 1),
                     max((it.sizeHint().height() for it in items), default=0))

    def minimumSize(self) -> QSize:
        items = self._shown()
        h = max((it.minimumSize().height() for it in items), default=0)
        if not self.wrap:
            return QSize(self.line_minimum(), h)
        return QSize(max((it.minimumSize().width() for it in items), default=0), h)

    def hasHeightForWidth(self) -> bool:
        return self.wrap

    def heightForWidth(self, width: int) -> int:
        return self._place(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._place(rect, apply=True)

    def _place(self, rect: QRect, apply: bool) -> int:
        """Lay the parts out in `rect` (on one line unless wrapping); the height they take."""
        lines, line, x = [], [], 0
        for it in self._shown():
            w = max(it.minimumSize().width(), min(it.sizeHint().width(), rect.width()))
            if self.wrap and line and x + self.spacing() + w > rect.width():
                lines.append(line)
                line, x = [], 0
            x += (self.spacing() if line else 0) + w
            line.append((it, w))
        if line:
            lines.append(line)
        for n, line in enumerate(lines):   # a line too long for its room shrinks its parts towards their minimum
            over = sum(w for _, w in line) + self.spacing() * (len(line) - 1) - rect.width()
            give = [w - it.minimumSize().width() for it, w in line]
            if over > 0 and sum(give) > 0:
                cut = min(1.0, over / sum(give))
                lines[n] = [(it, w - int(g * cut + 0.999)) for (it, w), g in zip(line, give)]
        y = rect.y()
        for n, line in enumerate(lines):
            h = max(it.sizeHint().height() for it, _ in line)
            if apply:
                x = rect.x()
                for it, w in line:
                    it.setGeometry(QRect(x, y, w, h))   # (a part less tall than the line is centred in it)
                    x += w + self.spacing()
            y += h + (self.spacing() if n < len(lines) - 1 else 0)
        return y - rect.y()


class RowsArea(QScrollArea):
    """The scroll area of the dock's rows: it scrolls them up and down only. The dock's own scroll area
    (window._DockArea) scrolls sideways, so the rows ask for their least width here: docked right ~300 px wide, a
    horizontal bar of this area sat above the dock's, and even scrolled fully right the range's max field needed the
    inner bar."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)

    def setWidget(self, widget) -> None:
        super().setWidget(widget)
        widget.installEventFilter(self)

    def _least_width(self) -> int:
        w = self.widget()
        bar = self.verticalScrollBar().sizeHint().width()   # (room for the bar that scrolls them)
        return (w.minimumSizeHint().width() if w is not None else 0) + bar + 2 * self.frameWidth()

    def minimumSizeHint(self) -> QSize:
        s = super().minimumSizeHint()
        return QSize(max(s.width(), self._least_width()), s.height())

    def sizeHint(self) -> QSize:
        s = super().sizeHint()
        return QSize(max(s.width(), self._least_width()), s.height())

    def eventFilter(self, obj, e) -> bool:
        if obj is self.widget() and e.type() == QEvent.LayoutRequest:
            self.updateGeometry()   # the rows' least width changed: the panel's follows
        return super().eventFilter(obj, e)


class InputRow:
    """The widgets of one model input (placed on the dock's grid)."""

    def __init__(self, panel: "InputsPanel", spec: dict, bound: int | None, default: list | None):
        self.panel = panel
        self.name, self.dtype, self.shape = spec["name"], spec["dtype"], spec["shape"]
        self.spec = spec
        self.bound = bound
        self.edited = False   # the user set the sizes (else they follow the defaults / other inputs)
        self.source_set = False   # the user chose this row's source (else an .npz chosen for another may feed it)
        self.shared: str | None = None   # the .npz this row took from another row's choice, until the user edits it
        self.shared_by: str | None = None   # (that row's name)
        self.range_default = None
        try:
            self.range_default = random_range(spec, bound)
        except Exception:  # a dtype numpy cannot feed: the runner says so at run time
            pass
        self.name_label = QLabel(f"<b>{html.escape(self.name)}</b>")
        self.name_label.setTextFormat(Qt.RichText)
        self.dtype_label = QLabel(self.dtype)
        # shape: fixed dims as text, free dims as spin boxes
        self.shape_box = QWidget()
        self.shape_flow = sl = ShapeFlow(self.shape_box)   # (its parts wrap in the narrow dock)
        self.dims: list[QSpinBox | None] = []
        self.shape_edit: QLineEdit | None = None
        if self.shape is None:
            self.shape_edit = QLineEdit()
            self.shape_edit.setPlaceholderText("rank unknown: dims, e.g. 1,8")
            self.shape_edit.textEdited.connect(self._dims_edited)
            sl.addWidget(self.shape_edit)
        else:
            sl.addWidget(QLabel("["))
            for axis, d in enumerate(self.shape):
                if is_free(d):
                    box = DimBox()
                    box.setRange(1, 1 << 20)
                    box.setMaximumWidth(90)
                    box.setValue(int(default[axis]) if default else 1)
                    box.setToolTip(f"dynamic dimension {d if isinstance(d, str) and d else '(unnamed)'} "
                                   f"of '{self.name}'")
                    box.setProperty("own_tip", box.toolTip())   # (hold_length's tooltip replaces it a while)
                    if isinstance(d, str) and d:
                        # the box says which dim it sizes (a bare "8" could be any of them; the graph's labels and
                        # Properties name them): "seq = 8", a long name shortened ("Dyna…n.1 = 64")
                        box.setPrefix(f"{dim_label(d, axis, self.shape)} = ")
                        box.setMaximumWidth(90 + box.fontMetrics().horizontalAdvance(box.prefix()))
                    box.setObjectName(f"dim_{self.name}_{axis}")
                    box.valueChanged.connect(self._dims_edited)
                    self.dims.append(box)
                    sl.addWidget(box)
                else:
                    self.dims.append(None)
                    sl.addWidget(QLabel(str(d)))
                if axis < len(self.shape) - 1:
                    sl.addWidget(QLabel("\u00d7"))
            sl.addWidget(QLabel("]"))
        self.source = QComboBox()
        self.source.addItems(SOURCES)
        self.source.currentTextChanged.connect(self._source_changed)
        self.details = QStackedWidget()
        self._flips: list[QBoxLayout] = []   # the pages' lines: side by side (wide dock), one under another (narrow)
        self.details.addWidget(self._random_page())
        self.details.addWidget(self._file_page())
        self.details.addWidget(self._image_page())
        self.details.addWidget(self._text_page())
        self._size_by_page()
        self.error = RowMessage()
        self.error.setObjectName("InputError")
        self.error.setStyleSheet("color: #d64545;")
        self.error.hide()
        self.error_on = PAGE   # what the message is about: under the source's page, or under the shape (SHAPE)

    # ----- pages -----------------------------------------------------------------------------------------
    def _page(self, *stretches: int) -> tuple[QWidget, list[QHBoxLayout]]:
        """A source's page: its parts in lines (one per stretch given, with that stretch), side by side as one
        line in the wide dock and one under the other in the narrow one (set_narrow)."""
        w = QWidget()
        outer = QBoxLayout(QBoxLayout.LeftToRight, w)
        outer.setContentsMargins(0, 0, 0, 0)
        lines = []
        for stretch in stretches:
            line = QHBoxLayout()
            line.setContentsMargins(0, 0, 0, 0)
            outer.addLayout(line, stretch)
            lines.append(line)
        self._flips.append(outer)
        return w, lines

    def _random_page(self) -> QWidget:
        w, (lay, below) = self._page(0, 0)
        self.low, self.high = QLineEdit(), QLineEdit()
        for e in (self.low, self.high):
            e.setMaximumWidth(80)
            e.textEdited.connect(lambda _=None: self.panel._changed())
        self.rule_label = QLabel("")
        if self.range_default is None:
            try:
                rule = rule_words(self.spec, self.bound)
            except Exception:  # a dtype numpy cannot feed: the runner says so at run time
                rule = None
            self.rule_label.setText(f"filled by rule: {rule}" if rule else f"no rule for {self.dtype}: give it a file")
            if self.spec.get("negated"):  # why, on hover: in the row it ran past the dock's edge at 1024 (tryout 71)
                self.rule_label.setToolTip(f"all False: True masks out here ({self.spec['negated']})")
            lay.addWidget(self.rule_label, 1)   # (the narrow dock: it wraps in all the line's width)
        else:
            lo, hi = self.range_default
            self.low.setText(_num(lo))
            self.high.setText(_num(hi))
            lay.addWidget(QLabel("range ["))
            lay.addWidget(self.low)
            lay.addWidget(QLabel(","))
            lay.addWidget(self.high)
            lay.addWidget(QLabel(")"))
            if self.bound:
                note = QLabel(f"ids index a table of {self.bound} rows")
                note.setToolTip("integer inputs that feed a Gather on an embedding stay below its row count")
                below.addWidget(note)
            for line in (lay, below):
                line.addStretch(1)   # (the narrow dock: each line left-aligned)
        w.layout().addStretch(1)
        return w

    def _path_field(self, lay, placeholder: str, caption: str, filt: str, changed=None) -> QLineEdit:
        edit = QLineEdit()
        edit.setPlaceholderText(placeholder)
        edit.textChanged.connect(changed or (lambda _=None: self.panel._changed()))
        btn = QToolButton()
        btn.setText("\u2026")
        btn.setToolTip(caption)
        btn.clicked.connect(lambda: self._browse(edit, caption, filt))
        lay.addWidget(edit, 1)
        lay.addWidget(btn)
        return edit

    def _browse(self, edit: QLineEdit, caption: str, filt: str) -> None:
        start = os.path.dirname(edit.text())
        if not start and edit is getattr(self, "tokenizer", None) and self.panel.path:
            start = os.path.dirname(os.path.abspath(self.panel.path))   # (where the one beside it would be)
        path = filedialog.ask_open_file(self.panel, caption, start, filt)
        if path:
            edit.setText(path)

    def _file_page(self) -> QWidget:
        w = QWidget()
        lay = QHBoxLayout(w)
        lay.setContentsMargins(0, 0, 0, 0)
        self.file_path = self._path_field(lay, ".npy or .npz file", f"Data for {self.name}",
                                          "Arrays (*.npy *.npz);;All files (*)", self._file_edited)
        return w

    def _image_page(self) -> QWidget:
        w, (path, lay) = self._page(1, 0)
        self.image_path = self._path_field(path, "image file", f"Image for {self.name}",
                                           "Images (" + " ".join("*" + s for s in sorted(IMAGE_SUFFIXES)) + ")")
        self.mean, self.std = QLineEdit(), QLineEdit()
        self.mean.setPlaceholderText("mean 0")
        self.std.setPlaceholderText("std 1")
        self.mean.setToolTip("per-channel mean on the [0, 1] scale, e.g. 0.485,0.456,0.406")
        self.std.setToolTip("per-channel std on the [0, 1] scale, e.g. 0.229,0.224,0.225; 0.00392 (1/255) feeds the "
                            "pixels as 0..255 values, for a model that scales its input itself")
        for label, e in (("mean", self.mean), ("std", self.std)):
            e.setMaximumWidth(130)
            e.textEdited.connect(lambda _=None: self.panel._changed())
            lay.addWidget(QLabel(label))
            lay.addWidget(e)
        # the usual normalisations a click away (helper 114 typed ImageNet's six numbers from the tooltip's example)
        self.norm_btn = QToolButton()
        self.norm_btn.setText("Preset")
        self.norm_btn.setToolTip("Set mean and std to a usual normalisation")
        self.norm_btn.setPopupMode(QToolButton.InstantPopup)
        menu = QMenu(self.norm_btn)
        for text, (mean, std) in NORMALISATIONS.items():
            menu.addAction(text, lambda m=mean, sd=std: self.set_normalisation(m, sd))
        self.norm_btn.setMenu(menu)
        path.addWidget(self.norm_btn)   # (on the path's row, whose field gives it room: the narrow dock, CI cc26)
        self.bgr = QCheckBox("BGR")
        self.bgr.toggled.connect(lambda _=None: self.panel._changed())
        lay.addWidget(self.bgr)
        self.layout_label = QLabel("")
        lay.addWidget(self.layout_label)
        lay.addStretch(1)   # (the narrow dock: left-aligned)
        return w

    def set_normalisation(self, mean: str, std: str) -> None:
        """Mean and std as a preset gives them ("" leaves a field at its default: mean 0, std 1)."""
        self.mean.setText(mean)
        self.std.setText(std)
        self.panel._changed()

    def _text_page(self) -> QWidget:
        w, (lay, tok) = self._page(2, 1)
        self.text = QLineEdit()
        self.text.setPlaceholderText("text to tokenize")
        self.text.textChanged.connect(lambda _=None: self.panel._changed())
        lay.addWidget(self.text, 1)
        # how many tokens the text makes (its sizes: InputsPanel.text_sizes), beside it: a new user's 13-token prompt
        # ran while the row and Properties still said 1x8, the spin boxes' default
        self.count_label = QLabel("")
        self.count_label.setObjectName("TokenCount")
        # room for a count kept from the start: the text box narrowed under the typing when "34 tokens" came
        self.count_label.setMinimumWidth(self.count_label.fontMetrics().horizontalAdvance("9999 tokens") + 4)
        lay.addWidget(self.count_label)
        self.tokenizer = self._path_field(tok, "tokenizer.json", "A tokenizer.json (HuggingFace tokenizers)",
                                          "tokenizer.json (*.json);;All files (*)")
        self.tokenizer_default: str | None = None   # the tokenizer.json beside the model, used while none is chosen
        return w

    def show_tokenizer_default(self, beside: str | None) -> None:
        """The tokenizer field says which tokenizer.json a Text source uses while the user chose none: the one beside
        the model ("tokenizer.json beside the model", its path in the tooltip). A new user typed a prompt and was told
        "choose a tokenizer.json" with one in the model's folder."""
        self.tokenizer_default = beside
        self.tokenizer.setPlaceholderText(f"{Path(beside).name} beside the model" if beside else "tokenizer.json")
        chosen = bool(self.tokenizer.text().strip())   # (the field then shows the user's choice itself)
        self.tokenizer.setToolTip(f"{beside}\n(used while no other is chosen: type a path, or choose one with "
                                  f"\u2026)" if beside and not chosen else "")

    def tokenizer_path(self) -> str:
        """The tokenizer.json this row's text goes through: the one chosen, else the one beside the model ("": none).
        (Looked up now, not as validate() last showed it: the sizes follow the text before the rows are checked.)"""
        return self.tokenizer.text().strip() or (self.panel.tokenizer_beside() or "")

    def token_count(self) -> tuple[int | None, str]:
        """How many tokens this Text row's text makes, as the run feeds them (text_tokens), and ""; else None and why
        not ("" where the row's check says it: no text, no tokenizer chosen or beside the model)."""
        ids, why = self.token_ids()
        return (None, why) if ids is None else (len(ids), "")

    def token_ids(self) -> tuple[tuple[int, ...] | None, str]:
        """The token ids this Text row's text makes (text_ids), as token_count says it."""
        tok = self.tokenizer_path()
        if self.kind != TEXT or not self.text.text() or not tok:
            return None, ""
        return text_ids(self.text.text(), tok)

    def show_count(self, n: int | None, note: str = "") -> None:
        """The row's token count beside its text ("13 tokens", and how the input holds them where its length is
        fixed); nothing without a count (the row's message line says why)."""
        self.count_label.setText("" if n is None else f"{n} token{'s' if n != 1 else ''}{note}")

    # ----- state -----------------------------------------------------------------------------------------
    def widgets(self) -> list[QWidget]:
        return [self.name_label, self.dtype_label, self.shape_box, self.source, self.details]

    @property
    def kind(self) -> str:
        return self.source.currentText()

    def _size_by_page(self) -> None:
        """The details take the size of the page shown (a QStackedWidget asks for its largest page's: the Image page's
        mean, std and BGR widened every Random row)."""
        for i in range(self.details.count()):
            page = self.details.widget(i)
            shown = i == self.details.currentIndex()
            page.setSizePolicy(QSizePolicy.Preferred if shown else QSizePolicy.Ignored,
                               QSizePolicy.Preferred if shown else QSizePolicy.Ignored)
        self.details.updateGeometry()

    def set_narrow(self, narrow: bool) -> None:
        """Lay the row's parts out for the narrow dock (its shape wrapping, its page's lines one under another) or
        the wide one (on one line)."""
        self.shape_flow.set_wrap(narrow)
        self.rule_label.setWordWrap(narrow)
        for lay in self._flips:
            lay.setDirection(QBoxLayout.TopToBottom if narrow else QBoxLayout.LeftToRight)
            for i in range(lay.count()):   # (their sizes are cached: the panel measures the other layout at once)
                if lay.itemAt(i).layout() is not None:
                    lay.itemAt(i).layout().invalidate()
        for w in (self.shape_box, *(self.details.widget(i) for i in range(self.details.count())), self.details):
            w.updateGeometry()

    def _source_changed(self, kind: str) -> None:
        self.details.setCurrentIndex(SOURCES.index(kind))
        self._size_by_page()
        self.panel.rows_resized()
        if not self.panel._updating:
            self.source_set, self.shared = True, None
            self.panel._share_npz(self)
        self.panel._changed()

    def _file_edited(self, *_) -> None:
        if not self.panel._updating:
            self.shared = None
            self.panel._share_npz(self)
        self.panel._changed()

    def follows(self, by: str) -> bool:
        """This row holds the .npz chosen for input `by` (shared, not edited since)."""
        return self.kind == FILE and self.shared is not None and self.shared_by == by

    def takes_shared(self) -> bool:
        """Whether an .npz chosen for another input may feed this one: it is on its default source (Random at its
        default range, not chosen by the user)."""
        if self.kind != RANDOM or self.source_set:
            return False
        try:
            return self.value_range() is None
        except UsageError:  # a range typed (if not yet a valid one) is the user's
            return False

    def _dims_edited(self, *_) -> None:
        if self.panel._updating:
            return
        self.edited = True
        self.panel._sizes_edited(self)

    def sizes(self) -> list[int] | None:
        """The concrete dims this row shows (None: unknown rank and nothing typed)."""
        if self.shape is None:
            text = self.shape_edit.text().strip()
            if not text:
                return None
            return [int(v) for v in text.replace("x", ",").split(",") if v.strip()]
        return [int(d) if box is None else box.value() for d, box in zip(self.shape, self.dims)]

    def set_sizes(self, dims: list[int]) -> None:
        if self.shape is None:
            self.shape_edit.setText(",".join(str(d) for d in dims))
            return
        if len(dims) != len(self.shape):
            return
        for box, d in zip(self.dims, dims):
            if box is not None:
                box.setValue(int(d))

    def file_shape(self) -> list[int] | None:
        """The shape the chosen .npy/.npz file holds for this input (headers only), None when there is no readable
        file of this input's rank: a File row's sizes are its file's (tryout 14: the row kept showing 1x8 for a
        1x15 file, and the inputs beside it followed 8)."""
        if self.kind != FILE:
            return None
        path = self.file_path.text().strip()
        if not path or not os.path.isfile(path) or Path(path).suffix.lower() not in (".npy", ".npz"):
            return None
        try:
            shape = _npy_shape(path, self.name)
        except (ValueError, OSError, KeyError, UsageError):
            return None
        if shape is None or (self.shape is not None and len(shape) != len(self.shape)):
            return None
        return [int(d) for d in shape]

    def hold_length(self, n: int | None) -> None:
        """The box of the last axis greyed while a text's `n` tokens set it (None: the user's again): typed in, its
        value went back to the count at each key."""
        box = self.dims[-1] if self.dims else None
        if box is None:
            return
        box.setEnabled(n is None)
        box.setToolTip(box.property("own_tip") if n is None else
                       f"{box.property('own_tip')}: the text's {n} token{'s' if n != 1 else ''} (its source is Text)")

    def has_free_dims(self) -> bool:
        return self.shape is None or any(b is not None for b in self.dims)

    def value_range(self) -> tuple | None:
        """The user's range when it differs from the default, checked; None for the default."""
        if self.range_default is None:
            return None
        low, high = self.low.text().strip(), self.high.text().strip()
        try:
            lo, hi = float(low), float(high)
        except ValueError:
            raise UsageError(f"input '{self.name}': the range needs two numbers")
        lo, hi = check_range(self.spec, lo, hi, self.bound)
        if (lo, hi) == tuple(self.range_default):
            return None
        return lo, hi

    def show_error(self, msg: str, on: str = PAGE) -> None:
        """The row's message, under the part of the row it is about (`on`: SHAPE or PAGE)."""
        self.error.setText(msg)
        if on != self.error_on:
            self.error_on = on
            self.panel._place_error(self)
        self.error.setVisible(bool(msg))
        self.details.setToolTip(msg)


class InputsPanel(QWidget):
    """The Inputs dock (see the module docstring)."""

    changed = Signal()   # the spec changed (a dock that shows it can follow)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.rows: list[InputRow] = []
        self.path: str | None = None
        self.table = None
        self._file_shapes: list | None = None   # the .mnn table's own shapes, before the runner filled them
        self._updating = False
        self._kept: dict[str, dict] = {}  # model path -> the inputs set for it (a model opened again gets them back)
        self._runs = TaskSlot(self)
        self._lineage = TaskSlot(self)   # the model a recorded conversion made this file from, looked up at open
        self.runs_found: list[dict] | None = None
        self.restored_from: int | None = None
        self.inputs_of: str | None = None   # the source model whose inputs this file took (_source_found)
        self.errors: list[str] = []
        self.specs: list[dict] = []
        self.narrow = False   # the dock too narrow for a row per input on one line: each input a block (_arrange)
        self._wide_least: int | None = None   # the wide layout's least width (_wide_width)
        self._fitting = False
        self._fit_timer = QTimer(self)
        self._fit_timer.setSingleShot(True)
        self._fit_timer.setInterval(0)
        self._fit_timer.timeout.connect(self._fit_width)
        TOKENIZER_LOADS.loaded.connect(self._tokenizer_loaded)   # (a bound method: queued to this thread)
        self._heads: list[QLabel] = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        # the model, the seed and the buttons: on one line in the wide dock, three in the narrow one (docked right
        # ~300 px wide, "Defaults" read "D" and "Restore from run…" was out of view)
        self.top = top = QBoxLayout(QBoxLayout.LeftToRight)
        named, seeded, buttons = QHBoxLayout(), QHBoxLayout(), QHBoxLayout()
        for line, stretch in ((named, 1), (seeded, 0), (buttons, 0)):
            line.setContentsMargins(0, 0, 0, 0)
            top.addLayout(line, stretch)
        self.model_label = ElidedLabel("no model")
        named.addWidget(self.model_label, 1)
        seeded.addWidget(QLabel("seed"))
        self.seed = QSpinBox()
        self.seed.setRange(0, 2 ** 31 - 1)
        self.seed.setMaximumWidth(110)
        self.seed.setToolTip("seed of the random inputs")
        self.seed.valueChanged.connect(lambda _=None: self._changed())
        seeded.addWidget(self.seed)
        seeded.addStretch(1)   # (the narrow dock: left-aligned)
        self.reset_btn = QPushButton("Defaults")
        self.reset_btn.setToolTip("random inputs at the default sizes")
        self.reset_btn.clicked.connect(self.reset)
        buttons.addWidget(self.reset_btn)
        self.restore_btn = QPushButton("Restore from run\u2026")
        self.restore_btn.setToolTip("use the inputs of an earlier run of this model")
        self.restore_btn.clicked.connect(self.ask_restore)
        self.restore_btn.setEnabled(False)
        buttons.addWidget(self.restore_btn)
        buttons.addStretch(1)
        lay.addLayout(top)
        self.scroll = RowsArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.NoFrame)
        self.body = QWidget()
        self.grid = QGridLayout(self.body)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(10)
        self.grid.setVerticalSpacing(0)   # the line kept under each row for its problem (RowMessage) spaces them
        self.scroll.setWidget(self.body)
        lay.addWidget(self.scroll, 1)
        self.shared_note = QLabel("")   # below the rows: coming and going, it moves none of them
        self.shared_note.setWordWrap(True)
        self.shared_note.setObjectName("InputsShared")
        self.shared_note.hide()
        lay.addWidget(self.shared_note)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setObjectName("InputsStatus")
        lay.addWidget(self.status)
        self._shapes_timer = QTimer(self)
        self._shapes_timer.setSingleShot(True)
        self._shapes_timer.setInterval(SHAPES_DEBOUNCE_MS)
        self._shapes_timer.timeout.connect(self._ask_shapes)
        self._build_rows([])

    # ----- the window's hooks ------------------------------------------------------------------------------
    def preset(self, spec: dict) -> None:
        """Apply `spec` (make_inputs keywords) to the next model as it opens, before its shapes are asked for
        (`mnnscope view MODEL --shape NAME=DIMS`)."""
        self._preset = dict(spec)

    def model_changed(self, path, table, tree) -> None:
        self._keep()
        self.path, self.table = path, table
        self._shapes_timer.stop()
        self.restored_from = None
        self.inputs_of = None
        self.runs_found = None
        self._lineage.cancel()
        self._file_shapes = list(table.shapes) if table is not None and table.format == "mnn" else None
        specs = []
        if table is not None:
            for name in table.inputs:
                t = table.tensor_index(name)
                if t is None or table.is_init[t]:
                    continue
                shape = table.shapes[t]
                specs.append({"name": name, "shape": list(shape) if shape is not None else None,
                              "dtype": table.dtypes[t] or "float32"})
        bounds = table_index_bounds(table) if table is not None else {}
        negated = table_negated_inputs(table) if table is not None else {}
        for spec in specs:  # (the rule the run's inputs follow, inputs/data.py: said in the row)
            spec["negated"] = negated.get(spec["name"])
        self.model_label.setText(f"{Path(path).name}: {len(specs)} input{'s' if len(specs) != 1 else ''}"
                                 if path else "no model")
        self.restore_btn.setEnabled(bool(path))
        self._build_rows(specs, bounds)
        preset, self._preset = getattr(self, "_preset", None), None
        kept = self._kept_for(path) if path and self.rows and not preset else None
        if preset and self.rows:
            self.restore({"settings": {"input_spec": preset}}, follow=False)
        elif kept:
            self.restore({"settings": {"input_spec": kept}}, follow=False)
        elif path and self.rows and self._persists():
            self._find_source(path)

    # ----- an .mnn takes the inputs of the model it was converted from -------------------------------------------
    def _find_source(self, path: str) -> None:
        """Off the UI thread: the model a recorded conversion made `path` from, and the inputs last run on it. Helper
        113 set an image at 640x640 for PP-OCRv6 det's .onnx, converted it, opened the .mnn alone and profiled it at
        the defaults (64x64, random) with nothing saying so."""
        def run(cancelled=None):
            from mnnscope.inspector.store.runs import RunStore
            store = RunStore()
            src = store.converted_from(path)
            if not src:
                return None, None
            last = next((spec for r in store.list_runs(model_path=src, limit=30)
                         if r.get("kind") in RUN_KINDS and (spec := spec_of_run(r))), None)
            return src, last

        # (a store that cannot be read costs the lookup only: nothing to say)
        self._lineage.start(run, on_done=lambda got: self._source_found(path, *got), on_fail=lambda _msg: None,
                            name="lineage")

    def _source_found(self, path: str, src: str | None, last: dict | None) -> None:
        """The source's inputs (those set for it in this dock, else its last run's) for this file, where the user set
        none here meanwhile and they fit; said in the status line and a note."""
        if not src or path != self.path or not self.rows or any(r.edited for r in self.rows):
            return
        spec = next((x for x in (self._kept_for(src), last) if self._fits(x)), None)
        if not spec or not any(spec.get(k) for k in ("shapes", "files", "image", "text")):
            return  # the source ran on the defaults too: nothing to take
        problems = self.restore({"settings": {"input_spec": spec}})
        if problems:
            return
        self.inputs_of = src   # (restore() left restored_from None: no run id)
        self.validate()
        what = "" if inputs_from(spec).startswith(RANDOM_INPUTS) else inputs_from(spec)
        sizes = ", ".join(f"{k} {fmt_shape(v)}" for k, v in (spec.get("shapes") or {}).items())
        self.window.notify(f"{Path(path).name} takes the inputs set for {Path(src).name}, which it was converted from"
                           + f" ({'; '.join(x for x in (sizes, what) if x)})", INFO, Path(path).name,
                           "the Inputs dock: Defaults puts them back to the file's own")

    def shutdown(self) -> None:
        self._keep()   # (the app closing: the model open keeps its inputs for the next start)
        self._shapes_timer.stop()
        self._runs.shutdown()
        self._lineage.shutdown()

    # ----- each model's inputs, kept -----------------------------------------------------------------------
    def _persists(self) -> bool:
        """Whether the user's settings keep the inputs (not for a headless render: its window neither reads nor
        writes them)."""
        return getattr(self.window, "persist", True)

    def _keep(self) -> None:
        """The inputs set for the open model, kept for it: while the window is open (tryout 12: reopening PP-OCRv6
        det put x back to 64x64 after 256x256 had been set; only "Restore from run..." brought it back), and in the
        user's settings for the next start (a new user's Text source and prompt came back as Random, seq = 8)."""
        if not (self.path and self.rows):
            return
        spec = self.spec()
        # (sizes a text set are not kept as typed: the text sets them again, and they go with its source)
        text = self.text_sizes()
        shapes = {k: v for k, v in (spec.get("shapes") or {}).items() if not (k in text and not self.row(k).edited)}
        spec["shapes"] = shapes or None
        # the text as typed, also where its row has a problem (a foreign tokenizer: spec() leaves such a row out; its
        # red line shows again), and the tokenizer as chosen: none for the one beside the model, which then follows the
        # model's folder (a moved folder left a kept path to nothing, and the whole entry was left out with it)
        r = next((r for r in self.rows if r.kind == TEXT and r.text.text()), None)
        if r is not None:
            chosen = r.tokenizer.text().strip()
            spec["text"], spec["tokenizer"] = r.text.text(), os.path.abspath(chosen) if chosen else None
        path = os.path.abspath(self.path)
        if not any(spec.get(k) for k in ("shapes", "files", "text", "image", "ranges")):  # (the seed is the dock's)
            spec = None
        if spec:
            self._kept[path] = spec
        else:
            self._kept.pop(path, None)
        if self._persists():
            try:
                cfg.set_by_model(BY_MODEL_KEY, path, spec)
            except TypeError:   # (a value JSON cannot hold: the session keeps it still)
                pass

    def _kept_for(self, path: str) -> dict | None:
        """The inputs kept for the model at `path`: this session's, else those of an earlier one where they still
        fit the model (_fits: a model changed since, a file moved; such a one is left out, nothing said)."""
        path = os.path.abspath(path)
        if path in self._kept:
            return self._kept[path]
        spec = cfg.by_model(BY_MODEL_KEY).get(path) if self._persists() else None
        return spec if self._fits(spec) else None

    def _fits(self, spec) -> bool:
        """Whether a spec kept in the settings (JSON written by an earlier start, maybe by an older version) applies
        to the rows as restore() takes it: its inputs are the model's, its files are there, its values of their
        types."""
        rows = {r.name: r for r in self.rows}

        def number(v) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool)

        def count(v) -> bool:   # (what a spin box holds: a larger int overflows it)
            return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2 ** 31

        try:
            if not isinstance(spec, dict) or not count(spec.get("seed") or 0):
                return False
            for name, dims in (spec.get("shapes") or {}).items():
                r = rows.get(name)
                if r is None or not isinstance(dims, list) or not dims or \
                        not all(count(d) and d > 0 for d in dims) or \
                        (r.shape is not None and len(dims) != len(r.shape)):
                    return False
            for name, path in (spec.get("files") or {}).items():
                if (name != "*" and name not in rows) or not isinstance(path, str) or not os.path.isfile(path):
                    return False
            image = spec.get("image") or {}
            if image:
                if not isinstance(image.get("path"), str) or not os.path.isfile(image["path"]) or \
                        (image.get("input") is not None and image["input"] not in rows) or \
                        not all(number(v) for k in ("mean", "std") for v in image.get(k) or []):
                    return False
            text, tok = spec.get("text"), spec.get("tokenizer") or ""
            if text is not None:
                if not isinstance(text, str) or not isinstance(tok, str) or (tok and not os.path.isfile(tok)) or \
                        not any(r.dtype.startswith(("int", "uint")) for r in self.rows):
                    return False
            for name, bounds in (spec.get("ranges") or {}).items():
                r = rows.get(name)
                if r is None or r.range_default is None or not isinstance(bounds, list) or len(bounds) != 2 or \
                        not all(number(v) for v in bounds):
                    return False
        except (AttributeError, TypeError):   # (a table or list where JSON held something else)
            return False
        return True

    # ----- rows ------------------------------------------------------------------------------------------
    def _build_rows(self, specs: list[dict], bounds: dict | None = None) -> None:
        while self.grid.count():
            item = self.grid.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        self.rows = []
        self.specs = specs
        self._files_seen = ((), ())   # (the files' shapes and the text's sizes _changed last followed)
        defaults, _ = free_input_sizes([s for s in specs if s["shape"] is not None])
        self._updating = True
        try:
            self._heads = []
            for head in ("input", "dtype", "shape", "source", ""):
                lbl = QLabel(f"<i>{head}</i>" if head else "")
                lbl.setTextFormat(Qt.RichText)
                lbl.setContentsMargins(0, 0, 0, 4)   # (no message line under the heads)
                self._heads.append(lbl)
            for spec in specs:
                row = InputRow(self, spec, (bounds or {}).get(spec["name"]), defaults.get(spec["name"]))
                if spec["shape"] is not None and len(spec["shape"]) == 4:
                    row.layout_label.setText(image_layout(spec["shape"]))
                self.rows.append(row)
        finally:
            self._updating = False
        if self.rows:  # nothing below the last row to move: its line is not kept (a short dock shows all rows)
            policy = self.rows[-1].error.sizePolicy()
            policy.setRetainSizeWhenHidden(False)
            self.rows[-1].error.setSizePolicy(policy)
        self._arrange(self.narrow)
        self._wide_least = None
        self._fit_width()
        guard = getattr(self.window, "wheel_guard", None)
        if guard is not None:  # the rows' boxes are new: the window guarded the dock's boxes of its first build only,
            # and the wheel scrolling the dock past "src_len = 8" made it 6 (helper 82's try)
            guard.guard(self)
        if not specs:
            self.status.setText("Open a model to choose its inputs." if self.path is None else
                                "The model has no runtime inputs.")
        else:
            self.validate()

    def _arrange(self, narrow: bool) -> None:
        """Place the heads and rows on the grid: a row per input in the wide dock (input, dtype, shape, source, its
        page; its message line under the last three), or in the narrow one each input a block of lines (name and
        dtype; shape, wrapping; source; its page, a line per part; its message line), the heads hidden."""
        self.narrow = narrow
        g = self.grid
        for w in self._heads + [w for r in self.rows for w in (*r.widgets(), r.error)]:
            g.removeWidget(w)
        for i in range(max(g.rowCount(), 1)):  # (a model with fewer inputs before left its stretch on a row)
            g.setRowStretch(i, 0)
        for i in range(max(g.columnCount(), 5)):
            g.setColumnStretch(i, 0)
        for col, lbl in enumerate(self._heads):
            g.addWidget(lbl, 0, col)
            lbl.setVisible(not narrow)
        for i, r in enumerate(self.rows):
            r.set_narrow(narrow)
            if narrow:
                at = 1 + 5 * i
                g.addWidget(r.name_label, at, 0)
                g.addWidget(r.dtype_label, at, 1)
                g.addWidget(r.shape_box, at + 1, 0, 1, 2)
                g.addWidget(r.source, at + 2, 0, 1, 2, Qt.AlignLeft)
                g.addWidget(r.details, at + 3, 0, 1, 2)
                g.addWidget(r.error, at + 4, 0, 1, 2)
            else:
                for col, w in enumerate(r.widgets()):
                    g.addWidget(w, 1 + 2 * i, col)
                self._place_error(r, i)
        g.setColumnStretch(1 if narrow else 4, 1)
        g.setRowStretch(1 + (5 if narrow else 2) * len(self.rows), 1)
        self._fit_top()
        self.body.updateGeometry()
        self.scroll.updateGeometry()
        self.updateGeometry()

    def _place_error(self, r: InputRow, i: int | None = None) -> None:
        """In the wide dock a row's message starts under the part it is about: the shape's column for its sizes,
        the source's page for the rest. Under the shape box, "type the text to tokenize" was read as being about the
        shape by a new user (1024x700), the text box empty beside it. (The narrow dock: under the page already.)"""
        if self.narrow:
            return
        i = self.rows.index(r) if i is None else i
        col = 2 if r.error_on == SHAPE else 4
        self.grid.removeWidget(r.error)
        self.grid.addWidget(r.error, 2 + 2 * i, col, 1, 5 - col)

    def _fit_top(self) -> None:
        """The model, the seed and the buttons on one line where it fits (the wide dock, or a narrow one wide enough),
        else one under another."""
        top = self.top
        lines = [top.itemAt(i) for i in range(top.count())]
        m = self.layout().contentsMargins()
        need = (sum(it.minimumSize().width() for it in lines) + top.spacing() * (len(lines) - 1) + m.left() + m.right()
                + self.style().pixelMetric(QStyle.PM_ScrollBarExtent))
        one_line = not self.narrow or self._room() >= need
        top.setDirection(QBoxLayout.LeftToRight if one_line else QBoxLayout.TopToBottom)

    def _room(self) -> int:
        """The width the dock gives the panel (its scroll area's, a vertical bar or not), else the panel's own."""
        area = scroll_area_of(self)
        return area.contentsRect().width() if area is not None else self.width()

    def _wide_width(self) -> int:
        """The least width of the wide layout (a row per input on one line) without a horizontal scroll bar; while
        narrow, measured once (laid out wide and back) until the rows change."""
        if not self.narrow:
            self._wide_least = self.minimumSizeHint().width()
        elif self._wide_least is None:
            self._arrange(False)
            try:
                self._wide_least = self.minimumSizeHint().width()
            finally:
                self._arrange(True)
        return self._wide_least + self.style().pixelMetric(QStyle.PM_ScrollBarExtent)   # (the dock's vertical bar)

    def rows_resized(self) -> None:
        """A row's parts changed their size (another source's page): the layout for the dock's width again."""
        self._wide_least = None
        self._fit_timer.start()

    def _fit_width(self) -> None:
        """The layout for the dock's width: the wide one where it fits, else the narrow one."""
        if self._fitting:
            return
        self._fitting = True
        try:
            narrow = self._room() < self._wide_width()
            if narrow != self.narrow:
                self._arrange(narrow)
            elif narrow:
                self._fit_top()
        finally:
            self._fitting = False

    def showEvent(self, e) -> None:
        super().showEvent(e)
        watch_short(self, self._fit_width)   # (in its dock's scroll area by now: its viewport is watched too)
        self._fit_width()

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self._fit_width()

    def heightForWidth(self, width: int) -> int:
        # the narrow dock's rows scroll in their own area: the panel asks its dock for its least height (at the
        # preferred one the dock's scroll area scrolled the whole panel, a second vertical bar around the rows')
        return least_height_for_width(self, width) if self.narrow else super().heightForWidth(width)

    def row(self, name: str) -> InputRow | None:
        return next((r for r in self.rows if r.name == name), None)

    def tokenizer_beside(self) -> str | None:
        """The tokenizer.json beside the open model (inputs.sources.tokenizer_beside: its own folder only), which a
        Text source uses while the user chose none."""
        return tokenizer_beside(self.path) if self.path else None

    def reset(self) -> None:
        """Random inputs at the default sizes, seed 0."""
        self._updating = True
        try:
            self.seed.setValue(0)
            self._default_rows()
            self._follow_sizes()
        finally:
            self._updating = False
        self.restored_from = self.inputs_of = None
        self._changed()
        self._shapes_follow()

    def _default_rows(self) -> None:
        for r in self.rows:
            r.source.setCurrentText(RANDOM)
            r.edited = r.source_set = False
            r.shared = None
            if r.range_default is not None:
                r.low.setText(_num(r.range_default[0]))
                r.high.setText(_num(r.range_default[1]))

    def _sizes_edited(self, row: InputRow) -> None:
        self._follow_quietly()
        self._changed()
        self._shapes_follow()

    def _follow_quietly(self) -> None:
        """_follow_sizes without the rows' edits it makes counting as the user's."""
        self._updating = True
        try:
            self._follow_sizes()
        finally:
            self._updating = False

    def sizes_now(self) -> dict[str, list[int]]:
        """{input: dims} at the sizes the rows show (a File row: its file's; a text's token ids: its count,
        text_sizes); rows whose sizes do not read are left out."""
        sizes = {}
        text = self.text_sizes()
        for r in self.rows:
            try:
                dims = text.get(r.name) or r.file_shape() or r.sizes()
            except ValueError:
                continue
            if dims:
                sizes[r.name] = [int(d) for d in dims]
        return sizes

    def file_sizes(self) -> dict[str, list[int]]:
        """{input: dims} of the File rows, as their files hold them (what runs feed; the spec leaves them out)."""
        return {r.name: [int(d) for d in shape] for r in self.rows if r.kind == FILE and (shape := r.file_shape())}

    def dim_values(self) -> dict[str, int]:
        """{dimension name: size} of the inputs' named free dims at the sizes the rows show (a File row: its file's; a
        text: its token count): what the model summary counts FLOPs at."""
        return dim_values([s for s in self.specs if s["shape"] is not None], self.sizes_now())

    def _edited_sizes(self) -> dict[str, list[int]]:
        """The sizes the user set: typed in a row, or held by a row's file or by the text (which is what runs feed)."""
        out = self.text_sizes()
        for r in self.rows:
            if r.name in out:
                continue
            fs = r.file_shape()
            if fs is not None:
                out[r.name] = fs
                continue
            if r.edited:
                try:
                    dims = r.sizes()
                except ValueError:
                    continue
                if dims:
                    out[r.name] = dims
        return out

    def _follow_sizes(self) -> None:
        """Rows the user did not edit show the sizes the edited ones bind (same named dims), else the defaults; the
        input a text's ids go into shows its token count whatever was typed before (its length box held)."""
        specs = [s for s in self.specs if s["shape"] is not None]
        sizes, _ = free_input_sizes(specs, self._edited_sizes())
        text = self.text_sizes()
        for r in self.rows:
            if r.name in text or (not r.edited and r.name in sizes):
                r.set_sizes(text.get(r.name) or sizes[r.name])
            r.hold_length(text[r.name][-1] if r.name in text else None)

    def _text_feed(self) -> tuple[InputRow, int, InputRow | None] | None:
        """The Text row, how many tokens its text makes, and the input its ids go into; None while there is no count
        (no text, no readable tokenizer, more than one Text row, a row that is no integer input: the row says why)."""
        texts = [r for r in self.rows if r.kind == TEXT]
        if len(texts) != 1 or not texts[0].dtype.startswith(("int", "uint")):
            return None
        n, _ = texts[0].token_count()
        return None if n is None else (texts[0], n, self._text_target())

    def _text_target(self) -> InputRow | None:
        """The input a text's token ids go into, as make_inputs picks it: the one named like input_ids, else the first
        that indexes an embedding table (inputs fed by a file or an image aside). Usually the Text row itself."""
        free = [r for r in self.rows if r.kind not in (FILE, IMAGE)]
        return (next((r for r in free if text_role(r.spec) == "input_ids"), None)
                or next((r for r in free if r.bound is not None), None))

    def text_sizes(self) -> dict[str, list[int]]:
        """{input: dims} a Text row's text sets, as a File row's file sets its sizes: the token count on the last axis
        of the input its ids go into (make_inputs binds that axis to it; inputs sharing the dim name, attention_mask
        and position_ids, follow as for a file), its other axes as the row shows them. {} without a count, or where
        that axis is fixed (the run pads or cuts the ids to it: the row's count says so)."""
        feed = self._text_feed()
        target = feed[2] if feed else None
        if target is None or not target.shape or not is_free(target.shape[-1]):
            return {}
        try:
            dims = target.sizes()
        except ValueError:
            return {}
        return {target.name: dims[:-1] + [feed[1]]} if dims else {}

    def _show_counts(self) -> None:
        """Each row's token count: the Text row's, with how the input holds it where its length is fixed."""
        feed = self._text_feed()
        for r in self.rows:
            if feed is None or r is not feed[0]:
                r.show_count(None)
                continue
            n, target, note = feed[1], feed[2], ""
            last = target.shape[-1] if target is not None and target.shape else None
            if last is not None and not is_free(last) and last != n:
                note = f", {'cut' if n > last else 'padded'} to {last}"   # (make_inputs' text_array)
            r.show_count(n, note)

    def _shapes_follow(self) -> None:
        """An .mnn model's shapes depend on the input sizes: ask the runner again once typing stops (the .mnn
        beside the model too)."""
        second = getattr(self.window, "second", None)
        beside = second is not None and second.table is not None and second.table.format == "mnn"
        if self.table is not None and self.path and (self.table.format == "mnn" or beside):
            self._shapes_timer.start()

    def _ask_shapes(self) -> None:
        w = self.window
        if self.table is None or w.pane.table is not self.table or not hasattr(w, "_request_shapes"):
            return
        if hasattr(w, "refresh_second_shapes"):
            w.refresh_second_shapes()
        if self.table.format != "mnn":
            return
        if self._file_shapes is not None and len(self._file_shapes) == len(self.table.shapes):
            self.table.shapes[:] = self._file_shapes   # the file's own shapes: MNN's fill them again
            props = getattr(w, "properties", None)
            if props is not None and props.table is self.table and props.item < 0:
                props.show_item(-1, auto=False)   # the summary counts known shapes: it is redone when they return
        w._request_shapes(self.path, self.table.format, "main")

    def _share_npz(self, row: InputRow) -> None:
        """An .npz chosen for `row` also feeds the other inputs it has an array for (its keys are input names) that
        are still on their default source (InputRow.takes_shared), each as if the file had been chosen for it: a
        new user chose one .npz four times, once for each of a decoder's inputs. The rows that took it follow
        `row`'s next choice: another .npz that names them, else their default again."""
        path = row.file_path.text().strip()
        keys: set[str] = set()
        if row.kind == FILE and Path(path).suffix.lower() == ".npz" and os.path.isfile(path):
            try:
                keys = set(_npz_keys(path))
            except (ValueError, OSError):  # the row says so (validate)
                pass
        self._updating = True
        try:
            for r in self.rows:
                if r is row:
                    continue
                follows = r.follows(row.name)
                if r.name in keys and (follows or r.takes_shared()):
                    r.source.setCurrentText(FILE)
                    r.file_path.setText(path)
                    r.shared, r.shared_by = path, row.name
                elif follows:
                    r.source.setCurrentText(RANDOM)
                    r.shared = None
        finally:
            self._updating = False

    def _shared_text(self) -> str:
        """What the rows took from an .npz chosen for another: "also used for memory, hidden (their names are in
        dec.npz)"."""
        by_file: dict[str, list[str]] = {}
        for r in self.rows:
            if r.shared is not None and r.kind == FILE and r.file_path.text().strip() == r.shared:
                by_file.setdefault(r.shared, []).append(r.name)
        return "; ".join(f"also used for {', '.join(names)} ({'their names are' if len(names) > 1 else 'its name is'}"
                         f" in {Path(path).name})" for path, names in by_file.items())

    # ----- the choice ------------------------------------------------------------------------------------
    def _tokenizer_loaded(self, path: str) -> None:
        """A tokenizer.json loaded on a thread: the Text rows that go through it count, and the sizes follow."""
        if any(r.kind == TEXT and r.tokenizer_path() and os.path.abspath(r.tokenizer_path()) == path
               for r in self.rows):
            self._changed()

    def _sizes_set(self) -> tuple:
        """What sets sizes besides the user's typing: the File rows' files' shapes, a text's count."""
        return (tuple((r.name, tuple(r.file_shape() or ())) for r in self.rows if r.kind == FILE),
                tuple((k, tuple(v)) for k, v in self.text_sizes().items()))

    def _changed(self) -> None:
        if self._updating:
            return
        files = self._sizes_set()
        if files != getattr(self, "_files_seen", ((), ())):  # a file chosen or changed, a text's count: sizes follow
            self._files_seen = files
            self._follow_quietly()
            self._shapes_follow()
        self.validate()
        self.changed.emit()

    def validate(self) -> list[str]:
        """Check every row cheaply (no model execution); errors show in their rows. Returns them."""
        errors = []
        images = [r for r in self.rows if r.kind == IMAGE]
        texts = [r for r in self.rows if r.kind == TEXT]
        # inputs that share a named dimension must agree on it: a file beside another file, or beside sizes typed
        given = {}
        text = self.text_sizes()
        for r in self.rows:
            fs = r.file_shape()
            if r.name in text:
                given[r.name] = (text[r.name], f"the text ({text[r.name][-1]} tokens)")
            elif fs is not None:
                given[r.name] = (fs, Path(r.file_path.text().strip()).name)
            elif r.edited:
                try:
                    dims = r.sizes()
                except ValueError:
                    dims = None
                if dims:
                    given[r.name] = (dims, "the sizes typed")
        clash = named_dim_conflicts([s for s in self.specs if s["shape"] is not None], given)
        beside = self.tokenizer_beside() if any(r.kind == TEXT for r in self.rows) else None
        for r in self.rows:
            r.show_tokenizer_default(beside if r.kind == TEXT else None)
            msg, on = "", SHAPE
            try:
                self._check_dims(r)
                on = PAGE
                self._check_row(r)
                on = SHAPE
                if r.name in clash:
                    raise UsageError(clash[r.name])
                on = PAGE
                if r.kind == IMAGE and len(images) > 1:
                    raise UsageError("one image input per run: choose Image for one input only")
                if r.kind == TEXT and len(texts) > 1:
                    raise UsageError("one text per run: it fills every token input (ids, mask, positions)")
            except (UsageError, ValueError, OSError) as e:
                msg = str(e)
            r.show_error(msg, on if msg else r.error_on)   # (no message: the line stays where it is)
            if msg:
                errors.append(msg)
        self._show_counts()
        self.errors = errors
        shared = self._shared_text()
        self.shared_note.setText(shared)
        self.shared_note.setVisible(bool(shared))
        self.status.setText(f"{len(errors)} problem{'s' if len(errors) != 1 else ''}: runs refuse these inputs"
                            if errors else self._summary())
        return errors

    def _summary(self) -> str:
        if not self.rows:
            return ""
        parts = [f"seed {self.seed.value()}"]
        edited = self._edited_sizes()
        if edited:
            parts.append("sizes " + ", ".join(f"{k}={v}" for k, v in edited.items()))
        if self.restored_from is not None:
            parts.append(f"restored from run {self.restored_from}")
        if self.inputs_of:
            parts.append(f"the inputs of {Path(self.inputs_of).name}, which this file was converted from")
        return " \u00b7 ".join(parts)

    @staticmethod
    def _check_dims(r: InputRow) -> None:
        """The dims typed for an input of unknown rank (the row's shape)."""
        if r.shape is None and r.kind != FILE:
            try:
                dims = r.sizes()
            except ValueError:
                raise UsageError(f"input '{r.name}': dims must be whole numbers, e.g. 1,8")
            if not dims or any(d <= 0 for d in dims):
                raise UsageError(f"input '{r.name}' has no known rank: give its dims, e.g. 1,8")

    def _check_row(self, r: InputRow) -> None:
        """The row's source: its page's fields and files."""
        if r.kind == RANDOM:
            r.value_range()
        elif r.kind == FILE:
            path = r.file_path.text().strip()
            if not path:
                raise UsageError("choose an .npy or .npz file")
            if Path(path).suffix.lower() not in (".npy", ".npz"):
                raise UsageError(f"{Path(path).name}: an .npy or .npz file (images: choose Image)")
            if not os.path.isfile(path):
                raise UsageError(f"no such file: {path}")
            try:
                shape = _npy_shape(path, r.name)
            except (ValueError, OSError, KeyError) as e:
                raise UsageError(f"{Path(path).name} is not a readable .npy/.npz file ({e})")
            if r.shape is not None and shape is not None and (
                    len(shape) != len(r.shape) or any(not is_free(d) and d != n for d, n in zip(r.shape, shape))):
                raise UsageError(f"{Path(path).name} holds shape {list(shape)}, the input is "
                                 f"{[d if not is_free(d) else '?' for d in r.shape]}")
        elif r.kind == IMAGE:
            path = r.image_path.text().strip()
            if not path:
                raise UsageError("choose an image file")
            if Path(path).suffix.lower() not in IMAGE_SUFFIXES:
                raise UsageError(f"{Path(path).name}: not an image ({', '.join(sorted(IMAGE_SUFFIXES))})")
            if not os.path.isfile(path):
                raise UsageError(f"no such file: {path}")
            if r.shape is None or len(r.shape) not in (3, 4):
                raise UsageError(f"input '{r.name}' is not image-like: an image needs a rank-3/4 input")
            for field, label in ((r.mean, "mean"), (r.std, "std")):
                try:
                    vals = _floats(field.text())
                except ValueError:
                    raise UsageError(f"{label}: numbers separated by commas")
                if vals is not None and len(vals) not in (1, 3, 4):
                    raise UsageError(f"{label}: 1 value or one per channel")
            std = _floats(r.std.text())
            if std and any(v == 0 for v in std):
                raise UsageError("std: values must not be 0")
        elif r.kind == TEXT:
            if not r.text.text():
                raise UsageError("type the text to tokenize")
            tok = r.tokenizer_path()
            if not tok:
                raise UsageError("choose a tokenizer.json")
            if not os.path.isfile(tok):
                raise UsageError(f"no such file: {tok}")
            if not r.dtype.startswith(("int", "uint")):
                raise UsageError(f"input '{r.name}' is {r.dtype}: text feeds integer token inputs")
            ids, why = r.token_ids()   # (a tokenizer that does not load: the run would fail on it)
            if ids is None and why:
                raise UsageError(why)
            if ids:
                self._check_ids(ids)

    def _check_ids(self, ids: tuple[int, ...]) -> None:
        """The text's ids must index the embedding table the input they go into feeds (its rows: the bound the Random
        row shows), as make_inputs checks them: a tokenizer.json of another model (moonshine's, ids to 29916, for a
        96-row table) showed "13 tokens" and the run then failed on it. Where the input's length is fixed, the ids
        past it are cut (make_inputs' text_array) and not checked."""
        target = self._text_target()
        bound = target.bound if target is not None else None
        if not bound:
            return
        last = target.shape[-1] if target.shape else None
        fed = ids[:last] if last is not None and not is_free(last) else ids
        top = max(fed, default=0)
        if top >= bound:
            # (the likely cause early: the row's line is cut at 1024 px)
            raise UsageError(f"ids up to {top}, but the model's table has {bound} rows: a tokenizer.json of another "
                             f"model? (input '{target.name}' indexes an embedding table: ids must lie in [0, {bound}))")
        # the positions 0..n-1 the run feeds an input of learned positions sharing the ids' length index a table too:
        # a text longer than it failed only in the run, as above
        if target.shape and is_free(target.shape[-1]):
            for r in self.rows:
                if r is not target and r.bound and r.kind not in (FILE, IMAGE) and \
                        text_role(r.spec) == "position_ids" and r.shape and r.shape[-1] == target.shape[-1] and \
                        len(ids) > r.bound:
                    raise UsageError(f"{len(ids)} tokens, but input '{r.name}' (positions 0..{len(ids) - 1}) indexes "
                                     f"a table of {r.bound} rows: at most {r.bound} tokens")

    def spec(self) -> dict:
        """The dock's choice as inputs.data.make_inputs keywords (seed, shapes, files, text, tokenizer, image;
        plus ranges when a random range differs from the default). The shapes are those typed, and a text's
        (text_sizes: the run binds the same from it, and an .mnn's shapes are asked at the spec's; a file's are not
        held, the file says them). Rows with errors fall back to random data at their sizes (validate() says which);
        the window's runs wait while there are any (MainWindow.inputs_refused)."""
        self.validate()
        bad = {r.name for r in self.rows if r.error.text()}
        shapes = self.text_sizes()   # (what the run binds from the text anyway; an .mnn's shapes are asked at these)
        for r in self.rows:
            if r.name in shapes:
                continue
            if r.edited or (r.shape is None and r.kind != FILE):
                try:
                    dims = r.sizes()
                except ValueError:
                    dims = None
                if dims:
                    shapes[r.name] = dims
        spec: dict = {"seed": self.seed.value(), "shapes": shapes, "files": {}, "text": None, "tokenizer": None,
                      "image": None}
        ranges = {}
        for r in self.rows:
            if r.name in bad:
                continue
            if r.kind == RANDOM:
                vr = r.value_range()
                if vr is not None:
                    ranges[r.name] = list(vr)
            elif r.kind == FILE:
                spec["files"][r.name] = os.path.abspath(r.file_path.text().strip())
            elif r.kind == IMAGE:
                spec["image"] = {"path": os.path.abspath(r.image_path.text().strip()), "input": r.name,
                                 "mean": _floats(r.mean.text()), "std": _floats(r.std.text()),
                                 "bgr": r.bgr.isChecked()}
            elif r.kind == TEXT:
                spec["text"] = r.text.text()
                spec["tokenizer"] = os.path.abspath(r.tokenizer_path())
        if ranges:
            spec["ranges"] = ranges
        return spec

    # ----- restoring -------------------------------------------------------------------------------------
    def restore(self, run: dict, follow: bool = True) -> list[str]:
        """Set the dock from a run-store record (its settings' input keys, or "input_spec"); returns what
        could not be applied (inputs this model does not have), also shown in the status line. `follow`: ask
        for an .mnn model's shapes at the restored sizes."""
        spec = spec_of_run(run)
        problems = []
        self._updating = True
        try:
            self.seed.setValue(int(spec.get("seed") or 0))
            self._default_rows()
            for name, dims in (spec.get("shapes") or {}).items():
                r = self.row(name)
                if r is None:
                    problems.append(f"the run sized '{name}', which is not an input of this model")
                    continue
                r.set_sizes(list(dims))
                r.edited = True
            for name, path in (spec.get("files") or {}).items():
                if name == "*":  # an .npz feeding inputs by array name
                    for r in self.rows:
                        r.source.setCurrentText(FILE)
                        r.file_path.setText(path)
                    continue
                r = self.row(name)
                if r is None:
                    problems.append(f"the run fed '{name}' from {path}, which is not an input of this model")
                    continue
                if Path(path).suffix.lower() in IMAGE_SUFFIXES:
                    r.source.setCurrentText(IMAGE)
                    r.image_path.setText(path)
                else:
                    r.source.setCurrentText(FILE)
                    r.file_path.setText(path)
            image = spec.get("image") or {}
            if image.get("path"):
                target = image.get("input") or next(
                    (r.name for r in self.rows if r.shape is not None and len(r.shape) == 4), None)
                r = self.row(target) if target else None
                if r is None:
                    problems.append("the run's image input is not an input of this model")
                else:
                    r.source.setCurrentText(IMAGE)
                    r.image_path.setText(image["path"])
                    r.mean.setText(",".join(_num(v) for v in image.get("mean") or []))
                    r.std.setText(",".join(_num(v) for v in image.get("std") or []))
                    r.bgr.setChecked(bool(image.get("bgr")))
            if spec.get("text") is not None:
                r = next((r for r in self.rows if text_role(r.spec) == "input_ids"), None) or next(
                    (r for r in self.rows if r.dtype.startswith(("int", "uint"))), None)
                if r is None:
                    problems.append("the run's text has no token input in this model")
                else:
                    r.source.setCurrentText(TEXT)
                    r.text.setText(spec["text"])
                    tok = spec.get("tokenizer") or ""
                    beside = self.tokenizer_beside()
                    if tok and beside and os.path.abspath(tok) == beside:
                        tok = ""   # the one beside the model: the row says so (and follows the model's folder)
                    r.tokenizer.setText(tok)
            for name, (lo, hi) in (spec.get("ranges") or {}).items():
                r = self.row(name)
                if r is None or r.range_default is None:
                    problems.append(f"the run's value range for '{name}' does not apply to this model")
                    continue
                r.low.setText(_num(lo))
                r.high.setText(_num(hi))
            self._follow_sizes()
            self._files_seen = self._sizes_set()   # (what the sizes now follow: a source changed later re-follows)
        finally:
            self._updating = False
        self.restored_from = run.get("id")
        self.validate()
        if problems:
            self.status.setText("; ".join(problems))
        self.changed.emit()
        if follow:
            self._shapes_follow()
        return problems

    def ask_restore(self) -> None:
        """List this model's recorded runs (hash and query off the UI thread), then offer them in a menu."""
        if not self.path:
            return
        path = self.path
        self.restore_btn.setEnabled(False)
        self.status.setText("reading the run store \u2026")

        def run(cancelled=None):
            from mnnscope.inspector.store.runs import RunStore
            store = RunStore()
            # (and those of the model it was converted from: the .mnn of an .onnx run with an image, helper 113)
            return store.lineage_runs(path, limit=30, every_version=False)

        self._runs.start(run, on_done=lambda runs: self._runs_listed(path, runs),
                         on_fail=self._runs_failed, name="runs")

    def _runs_failed(self, msg: str) -> None:
        self.restore_btn.setEnabled(bool(self.path))
        self.status.setText(f"the run store could not be read: {msg}")

    def _runs_listed(self, path: str, runs: list[dict]) -> None:
        self.restore_btn.setEnabled(bool(self.path))
        if path != self.path:
            return
        usable = [r for r in runs if r.get("kind") in RUN_KINDS and spec_of_run(r)]
        self.runs_found = usable
        self.validate()
        if not usable:
            self.status.setText("no recorded run of this model has inputs to restore")
            return
        self.runs_menu = menu = QMenu(self)
        for r in usable:
            of = r.get("model_path")
            other = f" (of {Path(of).name}, which this file was converted from)" \
                if of and os.path.realpath(of) != os.path.realpath(path) else ""
            menu.addAction(self._run_label(r) + other, lambda r=r: self.restore(r))
        menu.popup(self.restore_btn.mapToGlobal(self.restore_btn.rect().bottomLeft()))

    @staticmethod
    def _run_label(r: dict) -> str:
        when = time.strftime("%m-%d %H:%M", time.localtime(r.get("time") or 0))
        spec = spec_of_run(r)
        bits = [f"seed {spec.get('seed', 0)}"]
        if spec.get("shapes"):
            bits.append(", ".join(f"{k}={v}" for k, v in spec["shapes"].items()))
        if spec.get("files"):
            bits.append("files " + ", ".join(Path(p).name for p in spec["files"].values()))
        if spec.get("image"):
            bits.append("image " + Path(spec["image"].get("path") or "").name)
        if spec.get("text") is not None:
            text = spec["text"] if len(spec["text"]) <= 24 else spec["text"][:24] + "\u2026"
            bits.append(f"text \u201c{text}\u201d")
        return f"#{r.get('id')} {r.get('kind')} {when} \u2014 " + " \u00b7 ".join(bits)


# ----- the headless twin: mnnscope view MODEL --shape NAME=DIMS ------------------------------------------------
def apply_view_arguments(win, args) -> None:
    """Before the model opens: `mnnscope view`'s input options (inspector/inputs/options.py) go into the Inputs
    dock, the window's own path (UsageError on bad syntax)."""
    from mnnscope.inspector.inputs.options import input_spec
    spec = input_spec(args)
    panel = win.panels.get("Inputs")
    if panel is not None and (spec["seed"] or any(v for k, v in spec.items() if k != "seed")):
        panel.preset(spec)
        win.show_dock("Inputs")
