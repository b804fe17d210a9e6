"""The Compare dock: MNN against ONNX Runtime per precision mode (compare.service.compare_model, as the CLI runs it),
or, with an .mnn open, that .mnn against another .mnn or under another runtime configuration (compare/mnnpair.py),
shown per mode: the outputs table, the operators ranked by the error they add, harmless divergences, nodes without
an MNN counterpart, an error-against-depth plot; on the graph the first divergence selected and centred, its
region outlined and the error each node introduces as an overlay (grey: no counterpart). The fix loop reconverts
the shown quantized mode with its top-ranked operators kept in float (compare's fix, as `mnnscope compare` runs
it) and shows the error and size before and after.

Every run goes through window.runner.run_job (a worker thread and the work runner); the UI thread only fills
widgets. The result's per-mode view data (overlay, points, rows) are plain data from compare.errormap.
"""
from __future__ import annotations

import dataclasses
import html
import json
import math
import os
import shutil
import threading

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPoint, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QLinearGradient, QPainter, QPalette, QTextLayout, QTextOption
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QCheckBox, QComboBox, QHBoxLayout,
                               QHeaderView, QLabel, QLineEdit, QProgressBar, QPushButton, QScrollArea, QSizePolicy,
                               QSplitter, QTabBar, QTableWidget, QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget)

from mnnscope.inspector.compare import errormap
from mnnscope.inspector.compare.fix import (beaten, divergence_text, inputs_random, milder_text, next_step,
                                            reach_text)
from mnnscope.inspector.compare.job import options_to_json, run_in_child
from mnnscope.inspector.compare.options import MODES, QUANTIZED, CompareOptions
from mnnscope.inspector.compare.tolerance import METRICS, Tolerance
from mnnscope.inspector.compare.verdict import decisive, judged_cell
from mnnscope.inspector.convert.settings import ConvertSettings
from mnnscope.inspector.history import worst_rel_l2
from mnnscope.inspector.inputs.data import given_inputs
from mnnscope.inspector.process.client import owned_tempdir

from mnnscope.gui import filedialog, focus
from mnnscope.gui import settings as cfg
from mnnscope.gui.dockheight import is_short, least_height_for_width, scroll_area_of, watch_short
from mnnscope.gui.menus import add_action
from mnnscope.gui.shelf import Shelf
from mnnscope.gui.notify import ERROR, INFO, WARNING, saved_message
from mnnscope.gui.panels.convertform import settings_words
from mnnscope.gui.panels.convertrerun import dock_mode, row_label
from mnnscope.gui.plotaxis import FittedAxis, title_room
from mnnscope.gui.wraplabel import ElidedLabel

JOB = "compare"
FIX_TEXT = "Keep these operators in float and reconvert"


def _two_line(header: list[str]) -> list[str]:
    """The Ranking's metric headers on two lines ("error introduced", the name Properties and the cause line give that
    number, is wider than its numbers: on one line the columns after it left the dock at 1024 px)."""
    return [h.replace(" ", "\n", 1) if h in ("error introduced", "op's rel L2") else h for h in header]
RUN_TIP = "Compare MNN against ONNX Runtime in the chosen modes (Ctrl+F5)"
SIDE_TIP = "Open this mode's converted .mnn beside the ONNX model (selection linked)"
# One .mnn under two runtime configurations (the first is side A): the dock's choices (the CLI takes any).
MNN_CONFIG_PAIRS = [
    ("precision high vs low", [{"precision": "high"}, {"precision": "low"}]),
    ("precision high vs low_bf16", [{"precision": "high"}, {"precision": "low_bf16"}]),
    ("memory normal vs low", [{"memory": "normal"}, {"memory": "low"}]),
    ("threads 1 vs 2", [{"threads": 1}, {"threads": 2}]),  # (tryout 11: 1 vs 4 only, on a 2-core machine)
    ("threads 1 vs 4", [{"threads": 1}, {"threads": 4}]),
    ("backend CPU vs OpenCL", [{"backend": "CPU"}, {"backend": "OPENCL"}]),
    ("backend CPU vs Vulkan", [{"backend": "CPU"}, {"backend": "VULKAN"}]),
]
DEFAULT_CHECKED = ("fp32", "int8w")
MODES_KEY = "compare/modes"  # the modes ticked last (QSettings)
OVER, PASS, FIRST, HARMLESS = "#c62828", "#2e7d32", "#1565c0", "#f9a825"
CLOSE = "#a15c00"  # a mode whose only divergences are known approximations (verdict "close")
# why a tensor over tolerance is "harmless", said wherever the dock says it: the word alone read as unbelievable for an
# attention Transpose at rel L2 0.0548 (a new-user try, int8 on encoder_block)
HARMLESS_WHY = "its error dies out before the outputs in this run"
UNREAD_WHY = "nothing in the model reads it (an output of its op that the model does not use)"
# what a comparison shown leaves in the dock, put away with it (gui/shelf.py) when another model's comparison replaces it
_SHELVED = ("result", "mode", "fix_result", "_result_text", "_last", "_fix_mode", "_settings_note", "_fix_tries",
            "_next_skip", "_result_inputs", "_last_inputs", "_result_tol")
FLOAT_MOSTLY = 0.5  # a quantizing mode's conversion that left this share of its weights in float32 says so on its tab
NAME_CAP = 260  # the widest a table's name column gets: longer names are elided in the middle, whole in the tooltip


def _num(v, fmt="{:.3g}") -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return fmt.format(v) if isinstance(v, (int, float)) else str(v)


def _top1(v) -> str:
    """A scores output's top-1 agreement as a share ("100%", "87.5%"); blank for other outputs."""
    return "" if v is None else f"{100 * v:.3g}%"


def _unread_names(unread: list[dict]) -> str:
    names = [h["tensor"] for h in unread]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


class ErrorLegend(QWidget):
    """The overlay's colour ramp (log scale) with its ends, and the grey of nodes without a counterpart."""

    clicked = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.overlay = None
        self.elsewhere: str | None = None  # what the graph shows instead of this overlay (another dock's colours)
        self.other_model: str | None = None  # the model these colours belong to, when another one is open
        self.setMinimumHeight(34)

    def set_overlay(self, overlay) -> None:
        self.overlay = overlay
        self.elsewhere = self.other_model = None
        self.setToolTip(self.tolerance_tip())
        self.setCursor(Qt.ArrowCursor)
        self._fit_height()
        self.update()

    def set_elsewhere(self, what: str | None) -> None:
        """The graph shows `what` (another dock's colours), not this legend's overlay: said instead of a scale that
        no longer describes the graph (tryout 10 read Compare's error scale over the Runs dock's time deltas)."""
        self.elsewhere = what
        self.setCursor(Qt.PointingHandCursor if what else Qt.ArrowCursor)
        self.setToolTip("click: show this comparison's colours on the graph again" if what else self.tolerance_tip())
        self._fit_height()
        self.update()

    def set_other_model(self, name: str | None) -> None:
        """Another model is open (`name`: the one these colours belong to; None: theirs is open again): said,
        with nothing to click (its colours cannot go on this graph)."""
        self.other_model = name
        self.set_elsewhere(None)

    def tolerance_tip(self) -> str:
        level = None if self.overlay is None else self.overlay.meta.get("tolerance_at")
        return (f"the tick: this mode's tolerance, rel. L2 {level:.3g}; an op adding that much or more is red, one "
                f"adding a thousandth of it green" if level else "")

    def mousePressEvent(self, e) -> None:
        if self.elsewhere and e.button() == Qt.LeftButton:
            self.clicked.emit()
        super().mousePressEvent(e)

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self._fit_height()

    def _fit_height(self) -> None:
        """As tall as its lines wrapped at its width (at least the two lines it had)."""
        h = max(34, self.laid_out(self.width())[1])
        if h != self.minimumHeight():
            self.setMinimumHeight(h)

    def _parts(self) -> list:
        """What the legend says, in order: (kind, what) with kind "text" (one piece, wrapped before it where it does
        not fit), "words" (a sentence, wrapped between words), "scale" (the ramp with its ends), "swatch" (the
        no-counterpart grey and its words) or "break" (a new line)."""
        if self.overlay is None:
            return [("words", "error overlay: run a comparison")]
        if self.other_model:
            return [("words", f"error overlay: {self.other_model}'s, not the open model's"), ("break", None),
                    ("words", "Run compares the open model")]
        if self.elsewhere:
            return [("words", f"the graph shows {self.elsewhere} (another dock's colours)"), ("break", None),
                    ("words", "click here to show this comparison's colours again")]
        timing = self.overlay.meta.get("kind") == errormap.TIME_KIND
        label = self.overlay.meta.get("legend") or "error introduced per node (log):"
        parts = [("text", label), ("scale", None)]
        if timing:
            # the totals beside the per-op colours: on a model of a fraction of a millisecond the per-op changes
            # are mostly timer noise, and a tester read them as real without the whole run's figure
            t = self.overlay.meta.get("time") or {}
            noise = ", within run-to-run noise" if t.get("within_noise") else ""
            total = (f"whole run A {_num(t.get('a_ms'))} ms \u2192 B {_num(t.get('b_ms'))} ms "
                     f"({_num(t.get('ratio'), '{:.2f}')}x, median of {t.get('runs', '?')} runs{noise}); "
                     if t.get("a_ms") else "")
            # wrapped: on one line it ran past the dock's right edge (tryout 11)
            return parts + [("break", None), ("words", total + "red: slower in B, blue: faster; changes of a few "
                                                         "microseconds are timer noise")]
        # wrapped where the dock is narrow: on one line "no MNN counterpart" ran past the dock's edge at 1024 px,
        # cut to "nc" (a new-user try)
        amber = [("amber", "harmless")] if self.overlay.meta.get("harmless") else []
        return parts + [("swatch", "no MNN counterpart")] + amber + [("break", None),
                        ("words", "outlined: the first divergence's region (ONNX ops fused into one MNN op)")]

    LINE = 16  # one line of the legend: text baseline at 14, the ramp from 4 to 16
    RAMP = 160

    def laid_out(self, width: int) -> tuple[list, int]:
        """The legend's pieces placed at `width`: [(kind, what, x, line)] and the height they take. A piece goes on
        the next line where it would cross the right edge (a sentence word by word)."""
        fm = self.fontMetrics()
        sc = self.overlay.scale if self.overlay is not None else None
        right = max(40, width - 4)
        placed, x, line = [], 4, 0

        def put(kind, what, w, gap):
            nonlocal x, line
            if x > 4 and x + w > right:
                x, line = 4, line + 1
            placed.append((kind, what, x, line))
            x += w + gap

        for kind, what in self._parts():
            if kind == "break":
                if x > 4:
                    x, line = 4, line + 1
            elif kind == "scale":
                lo, hi = _num(sc.vmin), _num(sc.vmax)
                put(kind, (lo, hi), fm.horizontalAdvance(lo) + 4 + self.RAMP + 4 + fm.horizontalAdvance(hi), 16)
            elif kind in ("swatch", "amber"):
                put(kind, what, 20 + fm.horizontalAdvance(what), 8)
            elif kind == "text" and 4 + fm.horizontalAdvance(what) <= right:
                put(kind, what, fm.horizontalAdvance(what), 8)
            else:  # a sentence (or a label too wide for one line): word by word
                words = what.split(" ")
                for k, word in enumerate(words):
                    last = k == len(words) - 1
                    put("text", word, fm.horizontalAdvance(word), 8 if last and kind == "text" else
                        fm.horizontalAdvance(" "))
        return placed, (line + 1) * self.LINE + 2 if placed else 0

    def paintEvent(self, _e) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        pal = self.palette()
        p.setPen(pal.windowText().color())
        fm = p.fontMetrics()
        timing = self.overlay is not None and self.overlay.meta.get("kind") == errormap.TIME_KIND
        for kind, what, x, line in self.laid_out(self.width())[0]:
            y = line * self.LINE  # the line's top: text on 14, the ramp on 4..16
            if kind == "text":
                p.drawText(x, y + 14, what)
            elif kind in ("swatch", "amber"):
                colour = errormap.NO_COUNTERPART_COLOUR if kind == "swatch" else errormap.HARMLESS_COLOUR
                p.fillRect(x, y + 4, 16, 12, QColor(colour))
                p.drawText(x + 20, y + 14, what)
            elif kind == "scale":
                sc, (lo, hi) = self.overlay.scale, what
                p.drawText(x, y + 14, lo)
                x += fm.horizontalAdvance(lo) + 4
                grad = QLinearGradient(x, 0, x + self.RAMP, 0)
                for stop in sc.gradient():
                    grad.setColorAt(stop["stop"], QColor(stop["bgColor"]))
                p.fillRect(x, y + 4, self.RAMP, 12, grad)
                level = self.overlay.meta.get("tolerance_at")
                if level and not timing:
                    # the mode's tolerance: red from there on (a passing mode's worst op was red for being the worst)
                    tx = x + sc.position(level) * self.RAMP
                    p.fillRect(QRectF(tx - 1, y + 1, 2, 18), QColor("#1d2430"))
                p.drawText(x + self.RAMP + 4, y + 14, hi)


class DepthViewBox(pg.ViewBox):
    """The error-against-depth plot's view: the wheel scrolls the dock it sits in; Ctrl+wheel zooms. A tester
    scrolling the dock had the plot take the wheel and zoom to an empty corner (depth -500..3000, rel L2 1e-40)."""

    def wheelEvent(self, ev, axis=None):
        if ev.modifiers() & Qt.ControlModifier:
            super().wheelEvent(ev, axis)
        else:
            ev.ignore()  # the view passes it on: the dock's scroll area scrolls


class DepthAxis(FittedAxis):
    """An axis of that plot: the wheel over it scrolls the dock too (pyqtgraph's axis zooms its own direction).
    Its labels never overlap on a short plot (FittedAxis: "10^-1" ran into "10^-10" at the dock's default height)."""

    def wheelEvent(self, ev):
        if ev.modifiers() & Qt.ControlModifier:
            super().wheelEvent(ev)
        else:
            ev.ignore()


class DepthPlot(pg.PlotWidget):
    """The error-against-depth plot: a double-click fits every point again (the way back from a zoom or pan)."""

    fitted = Signal()  # by a double-click: a point click just before it was its first half, not a choice

    HELP = "Click a point to select its node; double-click: fit all points; Ctrl+wheel: zoom"
    TITLE_PT = 9

    def __init__(self):
        super().__init__(background="w", viewBox=DepthViewBox(),
                         axisItems={"left": DepthAxis("left"), "bottom": DepthAxis("bottom")})
        self._title_parts: tuple[str, list[tuple[str, str, str]]] | None = None  # (head, key: (symbol, colour, words))
        self.setToolTip(self.HELP)

    def set_title(self, head: str, key: list[tuple[str, str, str]]) -> None:
        """The title `head` and the points' key, fitted to the plot's width (fit_title); whole in the tooltip."""
        self._title_parts = (head, key)
        self.setToolTip(f"{head} ({', '.join(f'{sym} {words}' for sym, _c, words in key)})\n{self.HELP}")
        self.fit_title()

    def fit_title(self) -> None:
        """One line where the title and key fit, else the key on a second line, each line elided to fit. Where the
        key does not fit whole, its words in brackets go first (why: "harmless (its error dies out ...)")."""
        if getattr(self, "_title_parts", None) is None:  # (a resize from pyqtgraph's own __init__)
            return
        head, key = self._title_parts
        font = QFont(self.font())
        font.setPointSizeF(self.TITLE_PT)
        fm, room = QFontMetrics(font), max(40, title_room(self))  # (whole at 1024 px, it cut the x axis at depth 100)
        text, whole = self._title_text(head, key, fm, room)
        short = [(sym, c, words.split(" (")[0]) for sym, c, words in key]
        if not whole and short != key:
            text, _ = self._title_text(head, short, fm, room)
        if text != getattr(self.getPlotItem().titleLabel, "text", None):
            self.setTitle(text, size=f"{self.TITLE_PT}pt")

    @staticmethod
    def _title_text(head: str, key: list[tuple[str, str, str]], fm: QFontMetrics, room: int) -> tuple[str, bool]:
        """The title's HTML in `room` px, and whether the whole key is in it."""
        items = [f"{sym} {words}" for sym, _c, words in key]
        html_items = [f"<span style='color: {c}'>{sym}</span> {html.escape(words)}" for sym, c, words in key]
        whole = f"{head} ({', '.join(items)})"
        if fm.horizontalAdvance(whole) <= room:
            return f"{html.escape(head)} ({', '.join(html_items)})", True
        n = len(items)  # the key's items that fit on the second line, then an ellipsis
        while n and fm.horizontalAdvance(", ".join(items[:n]) + ("" if n == len(items) else ", \u2026")) > room:
            n -= 1
        line2 = ", ".join(html_items[:n]) + ("" if n == len(items) else (", " if n else "") + "\u2026")
        return f"{html.escape(fm.elidedText(head, Qt.ElideRight, room))}<br>{line2}", n == len(items)

    def resizeEvent(self, ev):
        super().resizeEvent(ev)
        self.fit_title()

    def mouseDoubleClickEvent(self, ev):
        if ev.button() == Qt.MouseButton.LeftButton:
            box = self.getViewBox()
            box.enableAutoRange()
            box.updateAutoRange()  # now, not at the next paint (the plot may be scrolled half out of the dock)
            self.fitted.emit()
            ev.accept()
            return
        super().mouseDoubleClickEvent(ev)


class StatusLine(ElidedLabel):
    """The Compare dock's status: at most LINES lines at its width, the rest elided, the whole text in its tooltip and
    from text() (what the dock and its callers read). It sits in the Run row pinned at the dock's top
    (ComparePanel._pin_run_row): word-wrapped in full, a long status ("done in 6.2 s: over tolerance in fp32 (close);
    int8w is within its own, looser tolerance ... (saved as run #56)", and the Convert dock's settings after it) made
    that row five lines tall at 1024x700, and the dock scrolled past it to the mode tabs (a new-user try)."""

    LINES = 2

    def __init__(self, text: str = ""):
        super().__init__(QSizePolicy.Fixed)
        self.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.setText(text)

    def sizeHint(self) -> QSize:
        m = self.contentsMargins()
        return QSize(super().sizeHint().width(), self.LINES * self.fontMetrics().lineSpacing() + m.top() + m.bottom())

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.sizeHint().height())

    def _fit(self) -> None:
        lines, elided = self._lines(" ".join(self._full.split("\n")), self.contentsRect().width())
        QLabel.setText(self, "\n".join(lines))
        self.setToolTip(self._full if elided else "")

    def _lines(self, text: str, width: int) -> tuple[list[str], bool]:
        """`text` broken into lines of `width` px as a word-wrapped label breaks it, the last of LINES elided; and
        whether it was."""
        if width < 20:  # not laid out yet: fitted at its first resize
            return [text], False
        layout = QTextLayout(text, self.font())
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapAtWordBoundaryOrAnywhere)
        layout.setTextOption(option)
        spans = []
        layout.beginLayout()
        while True:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(width)
            spans.append((line.textStart(), line.textLength()))
        layout.endLayout()
        lines = [text[start:start + n].strip() for start, n in spans[:self.LINES]]
        if len(spans) > self.LINES:
            rest = text[spans[self.LINES - 1][0]:].strip()
            lines[-1] = self.fontMetrics().elidedText(rest, Qt.ElideRight, width)
        return lines, len(spans) > self.LINES


class SteadyLabel(QLabel):
    """A word-wrapped label as tall as the tallest of its `alternatives` (set_text) at its width: the mode tabs'
    headline, so that what is under it sits at one height on every mode's tab. Each mode's headline wraps into its
    own number of lines, and the action buttons under it moved when the tab changed (a new user's click aimed at
    "Side by side" after switching tabs hit nothing). Its text sits at the top of the height it has."""

    def __init__(self, text: str = ""):
        super().__init__(text)
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        self._alternatives: list[str] = []
        self._heights: dict[tuple, int] = {}  # (width, font) -> the tallest alternative's height
        self._probe: QLabel | None = None  # measures an alternative's lines (never shown)

    def set_text(self, text: str, alternatives=()) -> None:
        """Show `text`, as tall as the tallest of it and `alternatives` (what the other tabs show here)."""
        self._alternatives = [a for a in alternatives if a and a != text]
        self._heights = {}
        self.setText(text)
        self.updateGeometry()

    def heightForWidth(self, width: int) -> int:
        h = super().heightForWidth(width)
        if not self._alternatives or width <= 0:
            return h
        key = (width, self.font().key())
        if key not in self._heights:  # (asked again and again by the layouts)
            if self._probe is None:
                self._probe = QLabel()
                self._probe.setWordWrap(True)
            probe = self._probe
            probe.setFont(self.font())
            probe.setTextFormat(self.textFormat())
            probe.setContentsMargins(self.contentsMargins())
            probe.setMargin(self.margin())
            probe.setIndent(self.indent())
            tallest = 0
            for text in self._alternatives:
                probe.setText(text)
                tallest = max(tallest, probe.heightForWidth(width))
            self._heights[key] = tallest
        return max(h, self._heights[key])


class RunRow(QWidget):
    """The Compare dock's Run row. Pinned over the results scrolled under it (ComparePanel._pin_run_row), a line
    under it: without one, the half line of text cut at its edge read as part of the row."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.pinned = False
        self.setAutoFillBackground(True)  # (the results scroll under it)
        # the line, over the row's own widgets: painted by the row itself it lay under the status label and never
        # showed, and the headline's half-hidden line under the pinned status read as two texts overlapping
        # (helper 107)
        self.edge = QWidget(self)
        self.edge.setAutoFillBackground(True)
        self.edge.setBackgroundRole(QPalette.Dark)
        self.edge.hide()

    def set_pinned(self, pinned: bool) -> None:
        if pinned != self.pinned:
            self.pinned = pinned
            self._place_edge()

    def _place_edge(self) -> None:
        self.edge.setGeometry(0, self.height() - 2, self.width(), 2)
        self.edge.setVisible(self.pinned)
        self.edge.raise_()

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self._place_edge()


class ComparePanel(QWidget):
    finished = Signal(dict)      # the compare result (compare_model's, with run_id)
    fixed = Signal(dict)         # the fix result's summary (errormap.fix_summary) or {"note": ...}
    reproduced = Signal(dict)    # the shown mode's repro (compare --repro: modes[i].repro) or {"note": ...}
    failed = Signal(str)
    mode_shown = Signal(str)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.result: dict | None = None
        self.mode: dict | None = None        # the mode row shown
        self.overlay = None
        self.fix_result: dict | None = None
        self._result_text: str | None = None  # the status line of the result shown (said again when its model returns)
        self._path = self._table = None
        self._names: dict[str, int] = {}
        self._blamed: int | None = None  # the op this dock selected last (the op a verdict named), if any
        self._last: tuple | None = None      # (path, options, inputs) of the last run
        self.repeat_why = ""   # why the last repeat_last() was refused
        self._job_kind = None
        self._running: list[str] = []
        self._steps: list[tuple[str, ...]] = []  # the progress messages that start each counted step
        self._work_dirs: list[str] = []
        self._job_work: str | None = None  # the folder of the latest job
        self._ended: set[str] = set()  # folders whose job has ended (a folder dropped after that is removed at once)
        self._work_lock = threading.Lock()
        self._settings_note = ""  # " (converting with the Convert dock's ...)" of the last comparison started
        self._fix_mode: str | None = None  # the mode the fix line and table (a fix's, a repro's) are about
        self._then_fix: str | None = None  # a comparison started to fix a given .mnn's mode: the fix follows it
        self._given_conv: dict = {}        # (file, mtime) -> the settings a recorded conversion of the model
        #                                    wrote it with
        self._points: list[dict] = []
        self._shelf = Shelf()  # other models' last comparisons put away (_shelve), with their folders
        self._opened_as: dict[str, str] = {}  # a comparison's conversion opened beside -> its mode ("int8w fixed")
        # the Inputs dock as it was when the shown result's inputs were taken from it (_inputs_state), to say when it
        # has changed since (a new user changed the inputs and read the previous results as theirs); None: the
        # inputs were given to the run (the headless twin), not the dock's
        self._result_inputs: dict | None = None
        self._last_inputs: dict | None = None  # the same for the last comparison with ONNX Runtime (repeat_last)
        self._job_inputs: dict | None = None
        # the Tolerance box as it was when the shown result ran (_tol_state), to say when it has changed since: a new
        # user's arrow key changed it during a run and the verdicts below read as judged with the new one
        self._result_tol: tuple | None = None
        self._job_tol: tuple | None = None
        self._inputs_hooked = False
        self._build()
        self._hook_inputs()
        window.runner.job_event.connect(self._event)
        window.runner.job_finished.connect(lambda name, _ok, _msg: name == JOB and self._enable())
        if hasattr(window, "panes_changed"):  # an .mnn opened beside the .onnx, or closed: Check it, or not
            window.panes_changed.connect(self._enable)

    # ----- widgets ---------------------------------------------------------------------------------------
    def _build(self) -> None:
        top = QHBoxLayout()
        top.addWidget(QLabel("Modes:"))
        self.mode_boxes: dict[str, QCheckBox] = {}
        for name, m in MODES.items():
            box = QCheckBox(name + (" (emulated)" if m.emulate else ""))  # no MNN run: ONNX Runtime, rounded
            box.setToolTip(m.description + ("\nEmulated: a prediction of fp16/bf16 compute on a device, not a "
                                            "measurement of MNN (see the README)" if m.emulate else ""))
            box.setChecked(name in DEFAULT_CHECKED)
            self.mode_boxes[name] = box
            top.addWidget(box)
        # the modes ticked last, after a restart too (helper 120 found the defaults back, the Convert dock's settings
        # and the inputs kept)
        persist = bool(getattr(self.window, "persist", False))
        saved = cfg.settings().value(MODES_KEY) if persist else None
        if isinstance(saved, str):
            saved = [saved]
        if isinstance(saved, list) and any(m in self.mode_boxes for m in saved):
            self.set_modes([m for m in saved if m in self.mode_boxes])
        if persist:
            for box in self.mode_boxes.values():
                box.toggled.connect(lambda _=False: cfg.settings().setValue(MODES_KEY, self.modes() or [""]))
        top.addStretch(1)
        # Run and the tolerance start the second row: at 1024 px the ten mode boxes fill the first, and a
        # tester found Run past the window's right edge when it ended that row
        tol = QHBoxLayout()
        tol.addWidget(QLabel("Tolerance:"))
        self.tol_kind = QComboBox()
        self.tol_kind.addItems(["default per mode", "atol / rtol", "metric"])
        self.atol, self.rtol, self.threshold = QLineEdit("1e-5"), QLineEdit("1e-4"), QLineEdit("0.999")
        for w, tip in ((self.atol, "absolute tolerance"), (self.rtol, "tolerance relative to max|reference|"),
                       (self.threshold, "the metric's threshold")):
            w.setMaximumWidth(70)
            w.setToolTip(tip + ("; blank: each mode's default" if w is not self.threshold else ""))
            if w is not self.threshold:
                w.setPlaceholderText("default")
        self.metric_box = QComboBox()
        self.metric_box.addItems(list(METRICS))
        for w in (self.tol_kind, self.atol, self.rtol, self.metric_box, self.threshold):
            tol.addWidget(w)
        self.tol_kind.currentIndexChanged.connect(self._tol_fields)
        self.tol_kind.currentIndexChanged.connect(lambda _=None: self._check_inputs())
        self.metric_box.currentIndexChanged.connect(lambda _=None: self._check_inputs())
        for w in (self.atol, self.rtol, self.threshold):
            w.textChanged.connect(lambda _=None: self._check_inputs())
        self._tol_fields()
        self.run_btn = QPushButton("Run")
        self.run_btn.setToolTip(RUN_TIP)
        self.run_btn.clicked.connect(lambda: self.run())  # clicked(bool) would arrive as `inputs`
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setEnabled(False)
        self.cancel_btn.clicked.connect(self.cancel)
        # the Run row: pinned at the top of what the dock shows once it scrolls (_pin_run_row), never scrolled away. A
        # new user at 1024x700 found no Run button after a 3-mode comparison (fp32, low, int8w), the dock scrolled
        # past it to the mode tabs; the mode ticks above it may scroll away, it and its status may not
        self.run_row = RunRow(self)
        prog = QHBoxLayout(self.run_row)
        prog.setContentsMargins(0, 0, 0, 0)
        prog.addWidget(self.run_btn)
        prog.addWidget(self.cancel_btn)
        prog.addSpacing(8)
        prog.addLayout(tol)
        prog.addSpacing(8)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setFormat("%v / %m modes")
        self.progress.hide()  # until a first run: an empty bar read as a text field beside the status
        # two lines at most, elided, whole on hover: clipped at one, "...int8 (ru" hid the run; wrapped in full, the
        # row grew five lines tall (StatusLine)
        self.status = StatusLine("Open an .onnx model, choose modes and Run.")
        prog.addWidget(self.progress)
        prog.addWidget(self.status, 1)
        # its place in the column, as tall and at least as wide as the row (the row itself is laid over it)
        self._run_slot = QWidget()
        self._run_slot.installEventFilter(self)
        self.run_row.installEventFilter(self)

        # Without ONNX (an .mnn open): against another .mnn, or one configuration against another (mnnpair.py)
        mnn_row = QHBoxLayout()
        # a condition, not a state: "An .mnn open:" beside greyed buttons read as a claim while an .onnx was open
        # (tryout 20)
        self.mnn_row_label = QLabel("With an .mnn open:")
        self.mnn_row_label.setToolTip("These compare an open .mnn (no ONNX reference): open one with File > Open, "
                                      "e.g. the Convert dock's output")
        mnn_row.addWidget(self.mnn_row_label)
        self.mnn_pair_btn = QPushButton("Compare with another .mnn\u2026")
        self.mnn_pair_tip = ("Every tensor of another .mnn of the same network (fp32 and int8, two conversions) "
                             "against the open one, on the Inputs dock's inputs")
        self.mnn_pair_btn.clicked.connect(lambda _=False: self.compare_with_mnn(None))
        self.config_pair = QComboBox()
        for label, _configs in MNN_CONFIG_PAIRS:
            self.config_pair.addItem(label)
        self.config_btn = QPushButton("Compare configurations")
        self.config_tip = ("The open .mnn under the second configuration against the first (a backend this "
                           "runner's MNN does not load is refused)")
        self.config_btn.clicked.connect(lambda _=False: self.compare_configurations(None))
        # an .onnx open with an .mnn beside it (the Convert dock's output opens there): that file itself against ONNX
        # Runtime. A new user who had just converted found only greyed buttons here ("open the .mnn first") while
        # the .mnn was open beside, and Run compared fresh conversions, not the file made (a try, 2026-12-04)
        self.beside_btn = QPushButton("Check the .mnn beside")
        self.beside_btn.clicked.connect(lambda _=False: self.compare_beside())
        self.beside_btn.hide()
        for w in (self.mnn_pair_btn, self.config_pair, self.config_btn, self.beside_btn):
            mnn_row.addWidget(w)
        mnn_row.addStretch(1)

        modes_row = QHBoxLayout()
        self.modes_bar = QTabBar()
        self.modes_bar.setExpanding(False)
        self.modes_bar.currentChanged.connect(self._tab_changed)
        # as tall as the tallest mode's headline (SteadyLabel): the buttons under it stay put from tab to tab
        self.headline = SteadyLabel("")
        self.headline.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.headline.setWordWrap(True)  # clipped, "worst output rel L2 0.0" read as a value (1024 px, tryout 8)
        modes_row.addWidget(self.modes_bar)
        modes_row.addWidget(self.headline, 1)
        # two .mnn files or configurations also differ in time: the graph shows either overlay (mnnpair.py)
        self.graph_shows = QComboBox()
        self.graph_shows.addItems(["Graph: error introduced", "Graph: time change (B \u2212 A)"])
        self.graph_shows.setToolTip("What the graph colours: the error each op adds, or how much slower (red) or "
                                    "faster (blue) each op runs in B than in A")
        self.graph_shows.currentIndexChanged.connect(lambda _i: self.mode is not None and self._graph(self.mode))
        self.graph_shows.setVisible(False)
        modes_row.addWidget(self.graph_shows)
        # the verdict's cause (verdict.py) in words: "MNN approximates this op, setting X avoids it" must be
        # readable without hovering; hidden for a match
        self.cause = QLabel("")
        self.cause.setWordWrap(True)
        self.cause.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.cause.hide()
        # the results shown were computed on other inputs than the Inputs dock's now (_check_inputs)
        self.stale_inputs = QLabel("")
        self.stale_inputs.setWordWrap(True)
        self.stale_inputs.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.stale_inputs.setStyleSheet(f"color: {CLOSE}; font-weight: bold;")  # the whole result, not one mode
        self.stale_inputs.hide()

        self.tables = QTabWidget()
        self.outputs_table = self._table_widget(errormap.OUTPUT_HEADER)
        self.ranking_table = self._table_widget(_two_line(errormap.RANKING_HEADER))
        self.harmless_table = self._table_widget(["ONNX node", "type", "rel L2", "tensor"])
        # why they are harmless, over the table (on the rows, in a last column, it was past the table's edge at 1024 px)
        self.harmless_note = QLabel("")
        self.harmless_note.setWordWrap(True)
        self.harmless_note.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        harmless_tab = QWidget()
        hl = QVBoxLayout(harmless_tab)
        hl.setContentsMargins(0, 2, 0, 0)
        hl.setSpacing(2)
        hl.addWidget(self.harmless_note)
        hl.addWidget(self.harmless_table, 1)
        self.unmatched_table = self._table_widget(["tensor", "ONNX node", "type", "why no MNN counterpart"])
        self.tables.addTab(self.outputs_table, "Outputs")
        self.tables.addTab(self.ranking_table, "Ranking")
        self.tables.addTab(harmless_tab, "Harmless")
        self.tables.setTabToolTip(2, f"Tensors over tolerance where they are made, harmless: {HARMLESS_WHY} (it is "
                                     "overwritten, masked or washed out downstream); and integer tensors that differ "
                                     "without consequence, each with why")
        self.tables.addTab(self.unmatched_table, "No counterpart")
        for t in (self.ranking_table, self.harmless_table, self.unmatched_table):
            t.cellClicked.connect(lambda row, _col, t=t: self._row_clicked(t, row))

        self.plot = DepthPlot()
        self.plot.setLogMode(y=True)
        self.plot.setLabel("bottom", "depth (ONNX node)")
        self.plot.setLabel("left", "rel L2 error")
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        # tall enough to read (at 90 px its view was 20 px high, labels run together): the dock scrolls instead,
        # and the window keeps the graph its share (window._fit_bottom_dock)
        self.plot.setMinimumHeight(170)
        # empty, pyqtgraph's log axis spans one decade and labels its minor ticks 2..9 on top of each other: until
        # a comparison's points are plotted (autorange then), the decades errors live in
        self.plot.disableAutoRange()
        self.plot.setRange(xRange=(0, 100), yRange=(-8, 0), padding=0)
        # never less than two decades tall: within one, the log axis labels 9·10^-10, 8·10^-10... on top of each
        # other (tryout 11, a comparison whose errors all sat near 1e-9)
        self.plot.getViewBox().setLimits(minYRange=2)
        self.scatter = pg.ScatterPlotItem(size=8, hoverable=True, tip=self._point_tip)
        self.scatter.sigClicked.connect(self._points_clicked)
        self._point_pending: str | None = None  # the node of a point clicked, chosen unless a double-click follows
        self._point_timer = QTimer(self)
        self._point_timer.setSingleShot(True)
        self._point_timer.timeout.connect(self._point_chosen)
        self.plot.fitted.connect(self._point_cancelled)
        self.plot.addItem(self.scatter)
        self.legend = ErrorLegend()
        self.legend.clicked.connect(self.restore_overlay)
        self.window.pane.main_view.overlay_changed.connect(self._graph_overlay_changed)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.legend)
        rl.addWidget(self.plot, 1)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.tables)
        split.addWidget(right)
        split.setSizes([520, 480])

        fix = QHBoxLayout()
        self.fix_btn = QPushButton(FIX_TEXT)
        # after a fix that helped too little: the mode's next try, its ops and the next ranked ones (tryout 10: the
        # next step was only a CLI command, and pressing the button again repeated the same 3-op fix)
        self._next_skip: dict[str, list[str]] = {}
        self._fix_tries: dict[str, list[tuple]] = {}  # per mode, the fixes run on this comparison: (ops kept, after)
        self.fix_btn.clicked.connect(self.fix)
        self.settings_btn = QPushButton("Reconvert with settings\u2026")
        # (it had no tooltip: helper 110)
        self.settings_btn.setToolTip(SETTINGS_TIP)
        self.settings_btn.clicked.connect(self.reconvert_with_settings)
        self.side_btn = QPushButton("Side by side")
        self.side_btn.setToolTip(SIDE_TIP)
        self.side_btn.clicked.connect(self.side_by_side)
        # the figure the tolerance is judged on beside rel L2: "rel L2 0.142 FAIL -> 0.135 pass" read as arbitrary
        # where the rule is on max abs error (new users, 2026-12)
        # (last: the column that stretches, its text never elided)
        self.fix_table = self._table_widget(["", "worst output rel L2", "verdict", "size",
                                             "what the tolerance judges (against its limit)"])
        self.fix_table.hide()
        self.fix_label = QLabel("")
        self.fix_label.setWordWrap(True)
        # why the fix button is greyed out, or why it keeps other ops than the headline's first divergence, in words
        # on the dock (tryout: fp16w's button greyed out with its reason only in a tooltip nobody hovered)
        self.fix_why = QLabel("")
        self.fix_why.setWordWrap(True)
        self.fix_why.setVisible(False)
        self.repro_btn = QPushButton("Minimal repro\u2026")
        self.repro_btn.setToolTip("Cut the first divergence out as a tiny model with its real inputs, verify that "
                                  "it still diverges alone, and write it with a stand-alone repro.py and a README")
        self.repro_btn.clicked.connect(lambda _=False: self.make_repro(None))
        # the fix's conversion lives in the comparison's temporary folder: kept only where it is saved (helper 113
        # found no way to keep an int8w fix: no file beside the model, and the Convert dock cannot set per-layer
        # weight bits)
        self.save_fix_btn = QPushButton("Save fixed model\u2026")
        self.save_fix_btn.clicked.connect(lambda _=False: self.save_fixed(None))
        self.save_fix_btn.hide()
        for b in (self.fix_btn, self.save_fix_btn, self.settings_btn, self.side_btn, self.repro_btn):
            fix.addWidget(b)
        fix.addStretch(1)
        exports = QHBoxLayout()
        exports.addWidget(QLabel("Export:"))
        for text, fn in (("HTML report\u2026", self.export_report), ("Overlay (Model Explorer)\u2026",
                                                                     self.export_overlay),
                         ("Tables (CSV)\u2026", self.export_csv)):
            b = QPushButton(text)
            b.clicked.connect(lambda _=False, fn=fn: fn(None))
            exports.addWidget(b)
        exports.addStretch(1)
        self.export_buttons = exports

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        for row in (top, mnn_row):
            lay.addLayout(row)
        lay.addWidget(self._run_slot)
        lay.addLayout(modes_row)
        # under the mode tabs: a dock that scrolls keeps them under the Run row (_results_in_view), this line with them
        lay.addWidget(self.stale_inputs)
        # what to do about the verdict comes right under it (below the tables and plot it took scrolling the dock
        # to reach, at 1500x950 too: tryout 9), at one height on every mode's tab: nothing that changes with the mode
        # above them but the headline, as tall on every tab (SteadyLabel). Under the verdict's cause and the mode's
        # warnings they moved ~34 px down on int8w's tab (its warning) from fp16w's, and a click aimed at "Side by
        # side" after switching tabs hit nothing (a new-user try on moe_llm at 1024x700)
        lay.addLayout(fix)
        lay.addWidget(self.fix_why)
        # the fix's line under the buttons, the dock's whole width: beside them at 1024 px it wrapped into a column
        # a third as wide, six lines tall, with the buttons centred on it out of sight and the dock scrolling sideways
        lay.addWidget(self.fix_label)
        lay.addWidget(self.fix_table)
        # the mode's verdict cause and warnings: under the buttons and their lines, over the tables they are about
        lay.addWidget(self.cause)
        lay.addWidget(split, 1)
        lay.addLayout(exports)
        self._fit_run_slot()
        self._enable()

    def _fit_run_slot(self) -> None:
        """The Run row's place in the column: its height, and its least width (the dock's least width with it)."""
        h = self.run_row.sizeHint().height()
        if (self._run_slot.minimumHeight(), self._run_slot.maximumHeight()) != (h, h):
            self._run_slot.setFixedHeight(h)
        self._run_slot.setMinimumWidth(self.run_row.minimumSizeHint().width())

    def _pin_run_row(self) -> None:
        """The Run row over its place in the column, or, where the dock has scrolled past that place, at the top of
        what the dock shows (the dock's scroll area moves this panel up: its y is minus the part scrolled away)."""
        slot = getattr(self, "_run_slot", None)
        if slot is None:  # (still being built)
            return
        seen = 0 if self.isWindow() else -self.y()
        y = max(slot.y(), min(seen, self.height() - slot.height()))
        self.run_row.setGeometry(slot.x(), y, slot.width(), slot.height())
        self.run_row.set_pinned(y > slot.y())
        self.run_row.raise_()

    def eventFilter(self, obj, e) -> bool:
        if obj is self._run_slot and e.type() in (QEvent.Move, QEvent.Resize):
            self._pin_run_row()
        elif obj is self.run_row and e.type() == QEvent.LayoutRequest:
            self._fit_run_slot()  # a field shown or hidden in the row (the tolerance's, the progress chip)
        return super().eventFilter(obj, e)

    def moveEvent(self, e) -> None:
        super().moveEvent(e)
        self._pin_run_row()  # scrolled

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self._pin_run_row()

    def heightForWidth(self, w: int) -> int:
        """In the dock's scroll area: the least height at width `w` (the wrapped status and headline make the layout
        height-for-width, and the scroll area then took the preferred height: ~900 px, the dock scrolling even
        where its contents fit squeezed)."""
        return least_height_for_width(self, w)

    @staticmethod
    def _table_widget(header: list[str]) -> QTableWidget:
        t = QTableWidget(0, len(header))
        t.setHorizontalHeaderLabels(header)
        t.setEditTriggers(QAbstractItemView.NoEditTriggers)
        t.setSelectionBehavior(QAbstractItemView.SelectRows)
        t.verticalHeader().hide()
        t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        t.horizontalHeader().setStretchLastSection(True)
        # one line per row: wrapped at a "/", the MNN ops column read "/ Add_8_outpu..." at 1024 px (tryout 8)
        t.setWordWrap(False)
        t.setTextElideMode(Qt.ElideMiddle)  # op names are paths: keep both ends
        return t

    def _tol_fields(self) -> None:
        k = self.tol_kind.currentIndex()
        for w in (self.atol, self.rtol):
            w.setVisible(k == 1)
        for w in (self.metric_box, self.threshold):
            w.setVisible(k == 2)

    def _enable(self) -> None:
        busy = self.window.runner.job_busy(JOB)
        onnx = bool(self._path and self._path.lower().endswith(".onnx"))
        focus.set_running(self.run_btn, self.cancel_btn, busy, onnx)   # (the focus on Run goes to Cancel, and back)
        self.run_btn.setToolTip(RUN_TIP if onnx or not self._path else
                                f"{RUN_TIP}: it needs the .onnx (the reference); an .mnn is compared with another "
                                ".mnn or under two configurations, in the row above")
        mnn = bool(self._path and self._path.lower().endswith(".mnn"))
        for b, tip in ((self.mnn_pair_btn, self.mnn_pair_tip), (self.config_btn, self.config_tip)):
            b.setEnabled(mnn and not busy)
            b.setToolTip(tip if mnn or not self._path else
                         f"{tip}; open the .mnn first (File > Open), or open it beside this .onnx (File > Open Side "
                         f"by Side) to check that file against ONNX Runtime")
        beside = self.beside_mnn() if onnx else None
        for w in (self.mnn_pair_btn, self.config_pair, self.config_btn):
            w.setVisible(beside is None)
        self.beside_btn.setVisible(beside is not None)
        if beside is not None:
            # a comparison's own conversion by its mode ("model.mnn" named a file the user never made)
            what = self._opened_as.get(os.path.abspath(beside))
            name = f"the {what} conversion" if what else os.path.basename(beside)
            self.mnn_row_label.setText("The .mnn beside:")
            self.beside_btn.setText(f"Check {name} against ONNX Runtime")
            self.beside_btn.setToolTip(f"Every tensor of {name} itself (the pane beside: what you converted, its "
                                       f"quantization and settings as they are in the file), run by MNN in fp32, "
                                       f"against ONNX Runtime on {os.path.basename(self._path)}, on the Inputs dock's "
                                       f"inputs. Run converts afresh in each chosen mode instead.")
            self.beside_btn.setEnabled(not busy)
        else:
            self.mnn_row_label.setText("With an .mnn open:")
        m = self.mode
        # results of another model (it was open when they ran) are for reading: nothing acts on them (tryout 8: the
        # fix button re-ran decoder.onnx's fix with PP-OCR open)
        usable = m is not None and not m.get("error") and self._result_is_open()
        onnx_result = (self.result or {}).get("kind") is None  # an .mnn comparison has no conversion to fix
        plan = (m or {}).get("fix_plan")
        self.fix_btn.setEnabled(usable and onnx_result and not busy and not m.get("ok") and (
            (m["mode"] in QUANTIZED and m["mode"] != "fp16w" and (plan is None or bool(plan.get("skip_ops")))
             and not self._fix_no_gain(m["mode"]))
            or (self._given_conversion(m) is not None and self._last is not None)))
        why = self._fix_why(m, usable, onnx_result, busy)
        self.fix_why.setText(why)
        self.fix_why.setVisible(bool(why))
        # a failed conversion too: reconverting with other settings is how it gets fixed (tryout 10: int8's
        # mnnquant crash asks for EMA calibration)
        self.settings_btn.setEnabled(m is not None and self._result_is_open() and not busy
                                     and bool((m.get("conversion") or {}).get("settings")))
        fixed = self.fixed_model()   # (the shown mode's fix, if any: the two buttons below say what it leaves)
        self.settings_btn.setToolTip(SETTINGS_TIP + (
            "" if not fixed else " The fix's ops kept in float come with it, in Skip ops." if m.get("mode") == "int8"
            else f" The fix's {len(self.fix_result['skip_ops'])} op(s) kept in float are per-layer weight bits, which "
            "the Convert dock does not set: Save fixed model\u2026 keeps that conversion."))
        # one .mnn under two configurations: both sides are the same file, nothing to open beside it (tryout 11 got
        # a second copy of it and a "not linked" warning)
        same_file = (self.result or {}).get("kind") == "mnn_configs"
        side_why = self._side_why(m, usable, same_file)
        self.side_btn.setEnabled(not side_why)
        self.side_btn.setToolTip(SIDE_TIP + (f"\n\nNot available: {side_why}" if side_why else ""))
        self.repro_btn.setEnabled(usable and onnx_result and not busy and bool(m.get("first_divergence"))
                                  and m["mode"] != "int8" and not m.get("emulated") and self._last is not None)
        self.repro_btn.setToolTip(self._repro_tip(m, usable, onnx_result, busy))
        for i in range(self.export_buttons.count()):
            w = self.export_buttons.itemAt(i).widget()
            if isinstance(w, QPushButton):
                w.setEnabled(self.result is not None)
        self.save_fix_btn.setVisible(bool(fixed))
        self.save_fix_btn.setEnabled(bool(fixed) and os.path.isfile(fixed))
        if fixed:
            self.save_fix_btn.setToolTip(
                f"Write the {self.fix_result['mode']} conversion with {len(self.fix_result['skip_ops'])} op(s) kept in "
                "float to a file of your choice (beside the model by default): the fix made it in the comparison's "
                "temporary folder, which goes with the next comparison or when the app closes" if os.path.isfile(fixed)
                else "Its conversion was removed with the comparison's temporary folder: run the fix again")
        nxt = self._next_skip.get(m["mode"]) if m else None
        self.fix_btn.setText(f"Keep {len(nxt)} operators in float and reconvert" if nxt else FIX_TEXT)
        self.fix_btn.setToolTip(f"Reconvert {m['mode']} with the operators of the last fix and the next ranked ones "
                                f"kept in float: {', '.join(nxt)}" if nxt else self._fix_tip(m))

    @staticmethod
    def measured_file() -> str | None:
        """The .mnn a Reconvert and re-run must rewrite for the repeat to see it: none, a comparison of the .onnx
        converts every mode itself (with the Convert dock's settings), and a check of a given .mnn is repeated on
        the file the reconversion wrote, wherever it went (repeat_last)."""
        return None

    def _result_is_open(self) -> bool:
        """The shown result belongs to the open model."""
        return self.result is not None and bool(self._path) and os.path.abspath(self._path) == self.result.get("model")

    def _side_why(self, m: dict | None, usable: bool, same_file: bool) -> str:
        """Why Side by side is greyed out ("" when it is not): a tester found it greyed after a cancelled run with no
        word (tryout 18: the run that was cancelled had removed the shown result's conversions)."""
        if m is not None and not self._result_is_open() and self.result is not None:
            return (f"these results are of {os.path.basename(self.result.get('model') or '?')}, not the open model: "
                    "open it again to act on them")
        if not usable:
            return "no comparison of this mode"
        if same_file:
            return "both sides of a configuration comparison are the open .mnn: nothing to open beside it"
        if m.get("emulated"):
            return "an emulated mode runs ONNX Runtime on a rounded copy: it has no .mnn"
        if not m.get("mnn_model"):
            return "this mode has no converted .mnn"
        if not os.path.isfile(m["mnn_model"]):
            return (f"its conversion ({os.path.basename(m['mnn_model'])}) was removed when the next comparison "
                    "started: compare again to open it")
        beside = self.beside_mnn()
        if beside and os.path.abspath(beside) == os.path.abspath(m["mnn_model"]):
            # (a new-user try clicked it after checking the .mnn beside: it reloaded that same file)
            return f"{os.path.basename(beside)} is open beside the model already"
        return ""

    def _repro_tip(self, m: dict | None, usable: bool, onnx_result: bool, busy: bool) -> str:
        """What Minimal repro does, or why it is greyed out (a tester saw it disabled for int8 without a word)."""
        what = ("Cut the first divergence out as a tiny model with its real inputs, verify that it still diverges "
                "alone, and write it with a stand-alone repro.py and a README")
        why = None
        if m is not None and not self._result_is_open() and self.result is not None:
            why = (f"these results are of {os.path.basename(self.result.get('model') or '?')}, not the open model: "
                   "open it again to act on them")
        elif not usable:
            why = "no comparison of this mode"
        elif not onnx_result:
            why = "this comparison is of two .mnn files: there is no ONNX model to cut a repro from"
        elif busy:
            why = "a job is running"
        elif not m.get("first_divergence"):
            why = "this mode has no first divergence to reproduce"
        elif m["mode"] == "int8":
            why = ("a calibrated int8 conversion cannot be redone on a cut-out piece (its calibration needs the "
                   "whole model); an int8w comparison's first divergence can be cut out instead")
        elif m.get("emulated"):
            why = "an emulated mode runs no conversion to reproduce"
        elif self._last is None:
            why = "it belongs to a comparison with ONNX Runtime run here"
        return what + (f"\n\nNot available: {why}" if why else "")

    def _fix_why(self, m: dict | None, usable: bool, onnx_result: bool, busy: bool) -> str:
        """The line under the fix button: why it is greyed out for this mode, or, enabled, why its plan keeps other
        ops than the first divergence; "" where there is nothing to say (no result, a mode within tolerance)."""
        if m is None or m.get("ok") or m.get("verdict") == "match":
            return ""
        # full int8 calibrated on random data: said first, it is the first thing to change (a new user's decoder went
        # from 0.0916 to 0.0207 on their own inputs, and nothing had said the calibration was random)
        advice = (m.get("calibration") or {}).get("advice")
        if self.fix_btn.isEnabled():
            if (m.get("conversion") or {}).get("given"):
                return (f"Fix: {os.path.basename(m.get('mnn_model') or '')} was converted here from this model: the "
                        f"button compares {m.get('judged_as')} converted with the same settings, then keeps its "
                        "top-ranked operators in float" + (f"; {advice}." if advice else "."))
            text = "; ".join(t for t in (advice, divergence_text(m.get("fix_plan"))) if t)
            return f"Fix: {text}." if text else ""
        if self.result is not None and not self._result_is_open():
            why = (f"these results are of {os.path.basename(self.result.get('model') or '?')}, not the open model: "
                   "open it again to act on them")
        elif not usable:
            # its error is the headline's already (a mnnquant crash's paragraph was printed twice, a new-user try)
            why = (f"{m['mode']} has no comparison to fix: it failed (" + ("why: above" if m.get("error") else
                                                                           "no result") + ")")
        elif not onnx_result:
            why = "a comparison of two .mnn files has no ONNX conversion to redo"
        elif busy:
            why = "a job is running"
        elif (m.get("conversion") or {}).get("given"):  # (an fp16 file read "fp32 quantizes no weights")
            why = (f"{os.path.basename(m.get('mnn_model') or '')} was checked as it is, not converted here: change "
                   "its settings in the Convert dock, convert again and check the new file")
        elif m["mode"] not in QUANTIZED:
            # a setting only where the approximations table names one (encoder_block's Gelu is MNN's own GELU
            # kernel: none does, and the line said "the converter setting ... is under Reconvert with settings"
            # under a cause line saying "no converter setting avoids it", tryout 19)
            settings = sorted({a["setting"] for a in m.get("approximations") or [] if a.get("setting")})
            why = (f"{m['mode']} quantizes no weights, so there is no operator to keep in float"
                   + ((f"; the converter setting that avoids its known approximations ({' '.join(settings)}) is "
                       "under Reconvert with settings" if settings else
                       "; no converter setting avoids its known approximations")
                      if m.get("verdict") == "close" else ""))
        elif no_gain := self._fix_no_gain(m["mode"]):
            why = no_gain
        else:
            why = self._fix_tip(m).split("\n")[0]
        return f"Keep in float is greyed out: {why}" + (f"\nFix: {advice}." if advice else "")

    def _given_conversion(self, m: dict | None) -> dict | None:
        """For a given .mnn's row (Check X against ONNX Runtime) judged as a quantizing mode: the settings a recorded
        conversion of the open .onnx wrote that file with (the Convert dock's), so that Keep in float can compare that
        mode converted the same way and fix it; None otherwise (helper 120's int8 .mnn, converted in the Convert dock
        seconds before, read "checked as it is, not converted here" under a greyed button)."""
        if not m or not (m.get("conversion") or {}).get("given") or not self._path:
            return None
        judged, f = m.get("judged_as"), m.get("mnn_model")
        if judged not in QUANTIZED or judged == "fp16w" or not f or not os.path.isfile(f):
            return None
        key = (f, os.path.getmtime(f))
        if key not in self._given_conv:
            from mnnscope.inspector.store.runs import RunStore
            try:
                made = RunStore().conversion_of(f)
            except Exception:  # noqa: BLE001  (an unreadable store: the file is taken as it is)
                made = None
            # a saved fix's file kept ops in float that its settings do not say: converting them again is another file
            same = made is not None and not made["keep_float"] and \
                os.path.realpath(made["model_path"]) == os.path.realpath(self._path)
            self._given_conv[key] = made["settings"] if same else None
        return self._given_conv[key]

    def _fix_no_gain(self, mode: str) -> str | None:
        """Why keeping ops in float is over for `mode`: a fix of this comparison did no better than keeping none (the
        button offered the same ops again after they made the error worse: helper 110), or the last fix found a milder
        mode doing better in a smaller file (fix.beaten); None otherwise."""
        tries = [t for t in self._fix_tries.get(mode) or [] if t[1] is not None]
        if tries and tries[-1][2]:  # a milder mode does better in a file no larger than the last fix's
            return (f"keeping more ops in float only makes {mode}'s file larger: {tries[-1][2]} does better in a "
                    "smaller file (the line below)")
        if len(tries) < 2 or min(tries, key=lambda t: (t[1], t[0]))[0] != 0:
            return None
        n, after = tries[-1][:2]
        return (f"keeping {n} of its ranked ops in float did no better than keeping none (worst output rel L2 "
                f"{_num(after)} against the comparison's {_num(tries[0][1])}); a milder mode is the next step")

    @staticmethod
    def _fix_tip(m: dict | None) -> str:
        """What the fix button will keep in float: the mode row's fix_plan, the very ops the fix is given."""
        if m and m["mode"] == "fp16w" and not m.get("ok"):  # (tryout 9: greyed out, and the tooltip said nothing why)
            return ("fp16w: the converter's --fp16 stores every weight as fp16, with no per-layer switch, so no "
                    "operator can be kept in float; int8w's fix can (8-bit weights with the top-ranked layers in float)")
        if not m or m["mode"] not in QUANTIZED or m.get("ok"):
            return "Reconvert a quantized mode that is over tolerance with its top-ranked operators kept in float"
        plan = m.get("fix_plan")
        if plan is None:
            return f"Reconvert {m['mode']} with its top-ranked quantized operators kept in float"
        far = reach_text(plan)
        far = f"\n\nNote: {far}; if keeping the others does not help, try a milder mode (int8w)." if far else ""
        if not plan.get("skip_ops"):
            return (f"{m['mode']}: none of the top-ranked operators has quantized weights to keep in float (try a "
                    f"milder mode)" + far)
        nodes = ", ".join(f"{e['onnx_node']} ({e['op_type']}, MNN op {', '.join(e.get('mnn_ops') or [])})"
                          for e in plan.get("onnx_nodes") or [])
        fd = divergence_text(plan)
        return (f"Reconvert {m['mode']} with these top-ranked quantized operators kept in float: {nodes}\n"
                f"MNN ops: {', '.join(plan['skip_ops'])}" + (f"\n\n{fd[0].upper()}{fd[1:]}." if fd else "") + far)

    # ----- the inputs the results were computed on ----------------------------------------------------------
    def _hook_inputs(self) -> None:
        """Follow the Inputs dock's changes (it is built before this dock; else at the first run)."""
        inputs = self.window.panels.get("Inputs") if isinstance(getattr(self.window, "panels", None), dict) else None
        if not self._inputs_hooked and inputs is not None and hasattr(inputs, "changed"):
            inputs.changed.connect(self._check_inputs)
            self._inputs_hooked = True

    def _inputs_state(self) -> dict | None:
        """What the Inputs dock describes: its spec and each input's source (a File row without a valid file yet
        falls back to random data in the spec, but the user has changed it); None without an Inputs dock."""
        inputs = self.window.panels.get("Inputs")
        if inputs is None or not hasattr(inputs, "spec"):
            return None
        return {"spec": self.window.input_spec(),
                "sources": [(r.name, r.kind) for r in getattr(inputs, "rows", [])]}

    def _tol_state(self) -> tuple:
        """The Tolerance box's choice, as it judges: the fields of the kind chosen."""
        k = self.tol_kind.currentIndex()
        return (k,) if k == 0 else (k, self.atol.text().strip(), self.rtol.text().strip()) if k == 1 else \
            (k, self.metric_box.currentText(), self.threshold.text().strip())

    @staticmethod
    def _tol_words(state: tuple) -> str:
        if state[0] == 0:
            return "each mode's default"
        if state[0] == 1:
            return f"atol {state[1] or 'default'} / rtol {state[2] or 'default'}"
        return f"{state[1]} {state[2]}"

    def _check_inputs(self) -> None:
        """Say, under the mode tabs, when the Inputs dock no longer describes the inputs the shown results were
        computed on (a new user changed an input's source and read the previous comparison as of the new inputs),
        or the Tolerance box no longer holds the tolerance their verdicts were judged with (an arrow key changed it
        during a run: helper 101's try); the line goes when they are the same again or a new comparison's results
        come."""
        mine = self._result_is_open()
        stale = self._result_inputs is not None and mine and self._inputs_state() != self._result_inputs
        tol = self._result_tol is not None and mine and self._tol_state() != self._result_tol
        onnx = (self.result or {}).get("kind") is None
        said = []
        if stale:
            again = ("Run again to compare on the current ones" if onnx else
                     "compare again (the .mnn row above) to see the current ones")
            said.append("\u26a0 These results are from the previous inputs: the Inputs dock has changed since they "
                        f"were computed. {again}.")
        if tol:
            again = "Run again" if onnx else "compare again (the .mnn row above)"
            said.append(f"\u26a0 These verdicts were judged with {self._tol_words(self._result_tol)}, not the "
                        f"tolerance now chosen ({self._tol_words(self._tol_state())}): {again} to judge with it.")
        if said:
            self.stale_inputs.setText(" ".join(said))
        self.stale_inputs.setVisible(bool(said))

    # ----- dock hooks ------------------------------------------------------------------------------------
    def add_actions(self, menu) -> None:
        add_action(self.window, menu, "&Compare with ONNX Runtime", self.run_from_menu, "Ctrl+F5",
                   tip="Compare MNN against ONNX Runtime per precision mode (the Compare dock)")
        add_action(self.window, menu, "Cancel Compare", self.cancel)

    def model_changed(self, path, table, tree) -> None:
        self._path, self._table = path, table
        self._names = table.names_index() if table is not None else {}
        self._blamed = None  # an index into the previous model
        mine = os.path.abspath(path) if path else None
        if path in self._shelf and (self.result or {}).get("model") != mine and not self.window.runner.job_busy(JOB):
            # its own last comparison comes back (it read "Results of decoder.onnx (another model)" over the encoder
            # compared minutes before: a user going between two models reran each comparison)
            self._unshelve(mine)
        if self.result is None and not self.window.runner.job_busy(JOB):
            # the first-use line follows the open model (it said "Open an .onnx model" with cnn.onnx open)
            self.status.setText(self._idle_text(path))
        if self.result is not None and os.path.abspath(path or "") != self.result.get("model"):
            # the tables show another model's nodes: they no longer select anything on this graph
            self._names = {}
            mnn = bool(path) and str(path).lower().endswith(".mnn")
            self.status.setText(f"Results of {self._others_name()} (another model); "
                                + ("use the .mnn row above for the open .mnn." if mnn else "Run compares the open one."))
            # its red verdict and fix lines name that model's ops: out of sight here (tryout 18 read PP-OCR's
            # "wrong: Conv.18 ..." over unsupported_op.onnx); the headline and tables stay for reading
            self.cause.hide()
            self.fix_label.hide()
            if self.mode is not None:
                self._set_headline(self.mode)
            # the legend offered "click here to show this comparison's colours again", which could do nothing
            self.legend.set_other_model(os.path.basename(self.result.get("model") or ""))
        elif self.result is not None and self._result_text and not self.window.runner.job_busy(JOB):
            # its model open again: its own line comes back (tryout 12 read "Results of X (another model)" with X open)
            self.status.setText(self._result_text)
            self.legend.set_other_model(None)
            if self.mode is not None:
                self.show_mode(self.mode["mode"])
        self._mark_backends()
        self._check_inputs()  # another model's results say nothing of these inputs; its own again: checked again
        self._enable()
        if self.result is None or os.path.abspath(path or "") != self.result.get("model"):
            # the Run row and the modes in view for the model now open: a dock scrolled to the previous model's
            # results hid them (a new user had to scroll up to run the next model)
            self._to_top()

    @staticmethod
    def _idle_text(path: str | None) -> str:
        name = os.path.basename(path or "")
        if name.lower().endswith(".onnx"):
            return f"Choose modes and Run: {name}'s MNN conversions against ONNX Runtime."
        if name.lower().endswith(".mnn"):
            return (f"{name} is an .mnn: compare it with another .mnn of the same network, or under two "
                    "configurations (the row above).")
        return "Open an .onnx model, choose modes and Run."

    def _mark_backends(self) -> None:
        """Configuration pairs whose backend this runner's MNN does not load are shown unavailable (the Profile
        dock asks the runner once; a tester chose 'CPU vs OpenCL' and got a failure the list could have said)."""
        prof = self.window.panels.get("Profile")
        if prof is not None and not getattr(self, "_backends_hooked", False) and hasattr(prof, "backends_known"):
            prof.backends_known.connect(self._mark_backends)
            self._backends_hooked = True
        info = getattr(prof, "hello", None)
        if not info:
            if prof is not None and self._path and str(self._path).lower().endswith(".mnn"):
                prof._ask_hello()  # off the UI thread; backends_known calls back here
            return
        loads = {str(b).upper() for b in info.get("backends") or []} | {"CPU"}
        for i, (label, configs) in enumerate(MNN_CONFIG_PAIRS):
            missing = sorted({c["backend"] for c in configs if c.get("backend") and c["backend"].upper() not in loads})
            item = self.config_pair.model().item(i)
            item.setText(label + (" (unavailable)" if missing else ""))
            item.setEnabled(not missing)
            item.setToolTip(f"{', '.join(missing)} is not in this runner's MNN ({info.get('mnn') or 'unknown'}); it "
                            f"loads {', '.join(sorted(loads))}" if missing else "")

    def shutdown(self) -> None:
        if self.window.runner.job_busy(JOB):
            self.window.runner.cancel_job(JOB)
        with self._work_lock:
            dirs, self._work_dirs = self._work_dirs, []
        dirs += [d for state in self._shelf.values() for d in state["dirs"]]
        self._shelf.clear()
        for d in dirs:  # (the running job's folder again once its compare process has ended)
            shutil.rmtree(d, ignore_errors=True)

    # ----- settings --------------------------------------------------------------------------------------
    def modes(self) -> list[str]:
        return [n for n, b in self.mode_boxes.items() if b.isChecked()]

    def set_modes(self, modes) -> None:
        for n, b in self.mode_boxes.items():
            b.setChecked(n in modes)

    def conversion_made(self, result: dict) -> None:
        """The Convert dock converted with full int8 calibration: int8 is ticked here, for the comparison that
        usually follows (tryout 15 set int8 up in the Convert dock and found the box here unticked)."""
        box = self.mode_boxes.get("int8")
        if box is not None and result.get("ok") and (result.get("settings") or {}).get("int8") \
                and not box.isChecked():
            box.setChecked(True)
            box.setToolTip((box.toolTip() + "\n" if box.toolTip() else "") +
                           "ticked: the Convert dock converted with int8 calibration")

    def set_tolerance(self, atol=None, rtol=None, metric=None, threshold=None) -> None:
        if metric:
            self.tol_kind.setCurrentIndex(2)
            self.metric_box.setCurrentText(metric)
            self.threshold.setText(repr(threshold))
            if atol is not None:
                self.atol.setText(repr(atol))
        elif atol is not None or rtol is not None:
            self.tol_kind.setCurrentIndex(1)
            self.atol.setText(repr(atol) if atol is not None else "")  # blank: the mode's default
            self.rtol.setText(repr(rtol) if rtol is not None else "")
        else:
            self.tol_kind.setCurrentIndex(0)

    def tolerance(self) -> Tolerance | dict | None:
        """The tolerance asked for (None: each mode's default; a dict: one part of it, a blank field keeping the
        mode's default for the other, as --atol or --rtol alone); ValueError with the field's problem."""
        k = self.tol_kind.currentIndex()
        if k == 0:
            return None

        def number(field, name):
            try:
                v = float(field.text())
            except ValueError:
                raise ValueError(f"{name}: '{field.text()}' is not a number")
            if not math.isfinite(v) or v < 0 and name != "threshold":
                raise ValueError(f"{name} must be a finite number >= 0")
            return v

        if k == 1:
            if not self.atol.text().strip() and not self.rtol.text().strip():
                return None
            if not self.atol.text().strip() or not self.rtol.text().strip():  # one part: the other the mode's
                return {"atol": number(self.atol, "atol")} if self.atol.text().strip() else \
                    {"rtol": number(self.rtol, "rtol")}
            return Tolerance(atol=number(self.atol, "atol"), rtol=number(self.rtol, "rtol"))
        return Tolerance(atol=1e-5, rtol=0.0, metric=self.metric_box.currentText(),
                         threshold=number(self.threshold, "threshold"))

    def _tolerance_fields(self) -> dict:
        """CompareOptions' tolerance and tolerance_only from the dock's fields."""
        t = self.tolerance()
        return {"tolerance": t, "tolerance_only": None} if not isinstance(t, dict) else \
            {"tolerance": None, "tolerance_only": t}

    def options(self, seed: int = 0) -> CompareOptions:
        modes = self.modes()
        if not modes:
            raise ValueError("choose at least one mode")
        return CompareOptions(modes=modes, **self._tolerance_fields(), fix=False, keep=True, seed=seed,
                              convert_settings=self.window.conversion_settings())

    def apply_settings(self, settings: dict) -> None:
        """Set the dock from a run record's settings ({"modes", "seed", "tolerance"?})."""
        if settings.get("modes"):
            self.set_modes([m for m in settings["modes"] if m in MODES])
        tol = settings.get("tolerance")
        if isinstance(tol, dict):
            self.set_tolerance(tol.get("atol"), tol.get("rtol"), tol.get("metric"), tol.get("threshold"))
        inputs = self.window.panels.get("Inputs")
        if inputs is not None and hasattr(inputs, "restore"):
            inputs.restore({"settings": settings})

    def repeat_record(self, settings: dict) -> bool:
        """A run record's comparison again, in the dock (Runs > Repeat, the Inputs dock holding the run's inputs): a
        check of a given .mnn on that file, a comparison with the conversion settings it was made with. The dock's
        plain Run compared the .onnx's own fp32 conversion, made with the Convert dock's settings of the moment, for a
        check of PP-OCRv6_rec_small.mnn as int8w (helper 120). False when it cannot start (the status says why)."""
        mnn = settings.get("mnn")
        # (a check's "modes" is the fp32 run of the file, not a choice of modes: the ticked ones stay)
        self.apply_settings({k: v for k, v in settings.items() if not (mnn and k == "modes")})
        if mnn and not os.path.isfile(mnn):
            self.status.setText(f"{mnn}: the .mnn this run checked is no longer there")
            return False
        if not (self._path and self._path.lower().endswith(".onnx")):
            self.status.setText("Compare needs an .onnx model open (the reference).")
            return False
        convert = settings.get("convert_settings") if isinstance(settings.get("convert_settings"), dict) else None
        modes = [m for m in settings.get("modes") or [] if m in MODES] or ["fp32"]
        return self._start_onnx(None, lambda seed: CompareOptions(
            modes=["fp32"] if mnn else modes, **self._tolerance_fields(), fix=False, keep=True, seed=seed,
            mnn_path=os.path.abspath(mnn) if mnn else None, convert_settings=None if mnn else convert))

    # ----- running ---------------------------------------------------------------------------------------
    def run_from_menu(self) -> None:
        """Run > Compare with ONNX Runtime (Ctrl+F5): with the dock in view, compare; with it hidden, show it first
        so the modes can be chosen (a first-time user saw fp32 + int8w start before seeing any choice)."""
        dock = self.window.docks.get("Compare")
        in_view = dock is not None and dock.isVisible() and not dock.visibleRegion().isEmpty()
        self.window.show_dock("Compare")
        if self._path and self._path.lower().endswith(".mnn"):
            # an .mnn has no ONNX reference: say what the dock does with one (tryout 11: "Choose the modes, then
            # Run" with Run greyed out, and only a second Ctrl+F5 said an .onnx was needed)
            self.status.setText("Comparing with ONNX Runtime needs the .onnx; " + self._idle_text(self._path))
            return
        if not in_view:
            # (the toolbar's "Compare" did this too, and a new user took it for a button that does nothing)
            other = self._others_name()
            if other:
                # (it replaced "Results of cnn.onnx (another model)" under cnn's verdicts, with moe_llm.onnx open)
                self.status.setText(f"The results below are of {other} (another model): choose the modes, then Run "
                                    f"to compare {os.path.basename(self._path)} (or Compare on the toolbar again, "
                                    f"Ctrl+F5).")
            else:
                self.status.setText("Choose the modes, then Run (or Compare on the toolbar again, Ctrl+F5).")
            return
        self.run()

    def run(self, inputs: dict | None = None) -> bool:
        """Compare the main pane's ONNX model in the chosen modes, on the work runner; False when it cannot."""
        if not (self._path and self._path.lower().endswith(".onnx")):
            self.status.setText("Compare needs an .onnx model open (the reference).")
            return False
        return self._start_onnx(inputs, lambda seed: self.options(seed=seed))

    def _start_onnx(self, inputs: dict | None, make_options) -> bool:
        """A comparison of the open .onnx with ONNX Runtime, its options `make_options(seed)`, on the Inputs dock's
        inputs (or `inputs`); False when it cannot start (the status says why)."""
        if inputs is None and self.window.inputs_refused("Compare"):
            self.status.setText("Compare did not start: the Inputs dock refuses its inputs (fix its red line, then "
                                "Run).")
            return False
        state = self._inputs_state() if inputs is None else None  # the dock's inputs (not ones given to the run)
        spec = dict(inputs if inputs is not None else self.window.input_spec())
        try:
            options = make_options(int(spec.get("seed", 0) or 0))
        except ValueError as e:
            self.status.setText(str(e))
            return False
        self._start(self._path, options, spec, inputs_state=state)
        return True

    def beside_mnn(self) -> str | None:
        """The .mnn the pane beside shows while the main pane shows an .onnx (its conversion, usually), else None."""
        second = getattr(self.window, "second", None)
        path = getattr(second, "path", None) if second is not None else None
        if path and path.lower().endswith(".mnn") and self._path and self._path.lower().endswith(".onnx"):
            return path
        return None

    def compare_beside(self, inputs: dict | None = None) -> bool:
        """The .mnn beside, as it is, against ONNX Runtime on the open .onnx (`compare MODEL --mnn B --modes fp32`):
        False when it cannot start."""
        other = self.beside_mnn()
        if other is None:
            self.status.setText("Check the .mnn beside needs an .onnx open with an .mnn side by side.")
            return False
        return self._start_onnx(inputs, lambda seed: CompareOptions(
            modes=["fp32"], **self._tolerance_fields(), fix=False, keep=True, seed=seed,
            mnn_path=os.path.abspath(other)))

    def compare_with_mnn(self, other: str | None = None, inputs: dict | None = None) -> bool:
        """The open .mnn (side A) against `other` (asked for when None); False when it cannot start."""
        if not (self._path and self._path.lower().endswith(".mnn")):
            self.status.setText("Compare with another .mnn needs an .mnn model open (side A).")
            return False
        if other is None:
            other = filedialog.ask_open_file(self, "Compare with another .mnn", os.path.dirname(self._path),
                                             "MNN models (*.mnn)")
            if not other:
                return False
        return self._start_mnn({"other": other}, [os.path.splitext(os.path.basename(other))[0]], inputs)

    def compare_configurations(self, index: int | None = None, inputs: dict | None = None) -> bool:
        """The open .mnn under MNN_CONFIG_PAIRS[index] (the combo's choice when None)."""
        if not (self._path and self._path.lower().endswith(".mnn")):
            self.status.setText("Compare configurations needs an .mnn model open.")
            return False
        label, configs = MNN_CONFIG_PAIRS[self.config_pair.currentIndex() if index is None else index]
        return self._start_mnn({"configs": configs}, [label], inputs)

    def _start_mnn(self, spec: dict, names: list[str], inputs: dict | None) -> bool:
        state = self._inputs_state() if inputs is None else None
        spec_inputs = dict(inputs if inputs is not None else self.window.input_spec())
        try:
            options = CompareOptions(modes=names, **self._tolerance_fields(), fix=False, keep=False,
                                     seed=int(spec_inputs.get("seed", 0) or 0))
        except ValueError as e:
            self.status.setText(str(e))
            return False
        self._start(self._path, options, spec_inputs, kind="mnn", mnn=spec, inputs_state=state)
        return True

    def repeat_last(self, settings=None, output: str | None = None) -> bool:
        """Repeat the last comparison with ONNX Runtime. `settings` (ConvertSettings: the Convert dock's, after
        Reconvert and re-run): every mode converts from them from now on, each with its own fp16/quantization
        fields (the repeat used to convert with the defaults again, so a changed setting changed nothing). A check
        of a given .mnn (Check X against ONNX Runtime) is repeated on `output`, the file the reconversion wrote: it
        re-checked the file before and reported its numbers as the new conversion's (a new-user try)."""
        self.repeat_why = ""
        if self._last is None:
            self.repeat_why = "no comparison with ONNX Runtime ran here yet"
            return False
        path, options, spec = self._last
        if options.mnn_path:
            if not (output and os.path.isfile(output)):
                self.repeat_why = (f"the last comparison checked {os.path.basename(options.mnn_path)} as it is, and "
                                   "the reconversion wrote no file to check in its place")
                return False
            options = dataclasses.replace(options, mnn_path=os.path.abspath(output))
        elif settings is not None:
            options = dataclasses.replace(options, convert_settings=settings.to_json())
            # and the mode that runs the dock's conversion, where no mode ticked does: helper 120 converted with 8-bit
            # weights beside int4w ticked, and the re-run checked everything but what it had converted
            mode = dock_mode(settings)[0]
            if mode in MODES and mode not in options.modes:
                options = dataclasses.replace(options, modes=[*options.modes, mode])
                self.set_modes([*self.modes(), mode])
        # the same inputs again: results of the dock's previous inputs still say so when it has changed since
        self._start(path, options, spec, inputs_state=self._last_inputs)
        return True

    @staticmethod
    def _remove_later(dirs: list[str]) -> None:
        """Folders removed off the UI thread (conversions and tensors can be hundreds of MB)."""
        if dirs:
            threading.Thread(target=lambda: [shutil.rmtree(d, ignore_errors=True) for d in dirs],
                             name="compare-cleanup", daemon=True).start()

    def _drop_work(self, work: str | None) -> None:
        """A job's folder that no result will use (cancelled or failed): out of the list, so that its job removes it
        once the compare process has ended, or removed now when the job has ended already."""
        with self._work_lock:
            if work not in self._work_dirs:
                return
            self._work_dirs.remove(work)
            ended = work in self._ended
        if ended:
            self._remove_later([work])

    def _shelve(self, keep: str | None) -> None:
        """The comparison shown put away under its model with its folders (all but `keep`, the new result's), to
        come back when that model opens again; one the shelf drops goes with its folders."""
        model = (self.result or {}).get("model")
        if not model:
            return
        state = {k: getattr(self, k) for k in _SHELVED}
        state["fix_text"] = self.fix_label.text()
        state["fix_rows"] = [[(self.fix_table.item(r, c).text() if self.fix_table.item(r, c) else "")
                              for c in range(self.fix_table.columnCount())] for r in range(self.fix_table.rowCount())]
        state["modes_bar"] = [(self.modes_bar.tabText(i), self.modes_bar.tabToolTip(i), self.modes_bar.tabTextColor(i))
                              for i in range(self.modes_bar.count())]
        with self._work_lock:
            state["dirs"] = [d for d in self._work_dirs if d != keep]
            self._work_dirs = [d for d in self._work_dirs if d == keep]
        self._remove_later([d for g in self._shelf.put(model, state) for d in g["dirs"]])

    def _unshelve(self, model: str) -> None:
        """`model`'s comparison back in the dock (the one shown put away in its place); model_changed then shows it
        as its model's own."""
        state = self._shelf.take(model)
        self._shelve(None)
        for k in _SHELVED:
            setattr(self, k, state[k])
        with self._work_lock:
            self._work_dirs.extend(state["dirs"])
        self.modes_bar.blockSignals(True)
        while self.modes_bar.count():
            self.modes_bar.removeTab(0)
        for text, tip, colour in state["modes_bar"]:
            i = self.modes_bar.addTab(text)
            self.modes_bar.setTabToolTip(i, tip)
            self.modes_bar.setTabTextColor(i, colour)
        self.modes_bar.blockSignals(False)
        self._fix_say(state["fix_text"])
        self._fill(self.fix_table, state["fix_rows"])
        self._chip_counts_modes()  # its own count ("1 / 1 modes" of the last run stayed over moe_llm's two tabs)

    def _keep_only(self, work: str) -> None:
        """A new result is shown: the folders of the results before it go."""
        with self._work_lock:
            old = [d for d in self._work_dirs if d != work]
            self._work_dirs = [d for d in self._work_dirs if d == work]
        self._remove_later(old)

    def cancel(self) -> None:
        self._then_fix = None
        if self.window.runner.job_busy(JOB):
            work = self._job_work
            self.window.runner.cancel_job(JOB)
            self._drop_work(work)
            self.status.setText("cancelled")
            if self._job_kind in ("fix", "repro"):
                self._chip_counts_modes()
            self._job_kind = None
        self._enable()

    def _start(self, path: str, options: CompareOptions, spec: dict, kind: str = "run", mnn: dict | None = None,
               inputs_state: dict | None = None) -> None:
        """`inputs_state`: the Inputs dock as it was when `spec` was taken from it (_inputs_state), None when the
        inputs were given to the run."""
        work = owned_tempdir("compare")  # the dock removes it; swept if the app is killed first
        self._work_dirs.append(work)
        self._job_work = work
        self._hook_inputs()
        if kind in ("run", "mnn"):
            self._job_inputs = inputs_state
            self._job_tol = self._tol_state()
        if kind == "run":
            self._last = (path, options, spec)
            self._last_inputs = inputs_state
        self._job_kind = kind
        self._running = list(options.modes)
        if kind in ("fix", "repro"):
            # a fix or repro reruns one mode and then does its own work: the chip counts those steps, not "1 / 1
            # modes" of a comparison that had two (a tester read that as the comparison's count)
            mode = options.modes[0]
            self._steps = [(f"{mode}:",), ("fix: reconverting",), ("fix: running",)] if kind == "fix" else \
                [(f"{mode}:",), ("repro:",)]
            self.progress.setFormat(f"{kind} for {mode}: %v / %m steps")
        else:
            self._steps = [(f"{m}:", f"converting for {m} ") for m in self._running]
            self.progress.setFormat("%v / %m modes")
        self.progress.setRange(0, len(self._steps))
        self.progress.setValue(0)
        # wide enough for its words ("fix for int8w: 0 / 3 steps" was clipped in the 220 px bar; tryout 13)
        words = self.progress.format().replace("%v", "00").replace("%m", "00")
        need = self.progress.fontMetrics().horizontalAdvance(words) + 36
        self.progress.setMaximumWidth(max(220, need))
        # and never narrower: beside a long status line the layout squeezed it to ~95 px and "1 / 6 modes" lost its
        # first characters (tryout 18)
        self.progress.setMinimumWidth(need)
        self.progress.show()
        prefix = {"fix": "fix for ", "repro": "repro for "}.get(kind, "")
        mine = ""
        if options.mnn_path and kind == "run":  # a given file, not a conversion: said, start and end
            mine = f" (running {os.path.basename(options.mnn_path)} as it is, no conversion)"
        elif options.convert_settings:  # said, so that a result unlike the defaults' is not a surprise
            from mnnscope.inspector.convert.settings import graph_settings
            changed = settings_words(graph_settings(options.convert_settings))  # as the Convert dock's form names them
            mine = f" (converting with the Convert dock's {', '.join(changed)})" if changed else ""
        if kind == "run" and not options.mnn_path and options.convert_settings:
            # the dock's precision is one mode's: a new user converted with fp16 weights, ran fp32, low and int8 and
            # read the same numbers as before, as if the setting had been ignored
            mode, what = dock_mode(ConvertSettings.from_json(options.convert_settings))
            if mode != "fp32" and mode not in options.modes:
                mine += f" (the Convert dock's {what} are what {mode} runs: tick {mode} to compare them)"
        beside = self.beside_mnn() if not options.mnn_path and kind == "run" else None
        if beside:  # Run converts afresh: the file beside is not what it checks (a new-user try ran Ctrl+F5 for it)
            name = os.path.basename(beside)
            mine += f" (each mode converts afresh; {name} beside is checked by \"Check {name} against ONNX Runtime\")"
        self.status.setText(f"{prefix}{', '.join(options.modes)}: starting the runner{mine}")
        if kind in ("run", "mnn"):
            self._settings_note = mine  # said again when it is done (tryout 14: the start's line was overwritten)

        request = {"model": path, "options": options_to_json(options), "inputs": spec, "work_dir": work,
                   "python": self.window.runner.python, **({"mnn": mnn} if mnn else {})}

        # the shown result's folders (its conversions: Side by side opens them) stay until this run's result
        # replaces it (_done): removed at the start, a cancelled run left the shown result's Side by side greyed with
        # nothing to open (tryout 18)

        def job(client, on_event, cancelled):
            # in a child process: the comparison's Python would hold this process's GIL for seconds
            try:
                result = run_in_child(request, on_event, cancelled.set_hook)
            except RuntimeError as e:
                if cancelled():
                    raise
                # a comparison that failed is not a runner that died (the window's work runner is not used)
                return {"failed": str(e)}
            finally:
                # the window closed (shutdown) or a newer comparison took over while this one ran: its folder
                # goes now that the compare process has ended (removed while it ran, the process wrote its
                # conversions/<key>/ folders into it again on its way out, and they stayed in /tmp)
                with self._work_lock:
                    self._ended.add(work)
                    gone = work not in self._work_dirs
                if gone:
                    shutil.rmtree(work, ignore_errors=True)
            # the tensors are measured: keep only the conversions (Side by side opens them)
            for sub in ("reference", "runs", "calibration", "repro"):
                shutil.rmtree(os.path.join(work, sub), ignore_errors=True)
            return result

        done = {"run": self._done, "mnn": self._done, "fix": self._fix_done, "repro": self._repro_done}[kind]
        self.window.runner.run_job(JOB, job, on_done=done, on_fail=self._failed)
        self._enable()

    def _event(self, name: str, kind: str, payload) -> None:
        if name != JOB or kind != "progress" or not isinstance(payload, dict) or self._job_kind is None:
            return   # events still queued from a run that was cancelled or ended are dropped (as the Profile dock's)
        msg = payload.get("message") or ""
        if not msg:
            return
        for i, prefixes in enumerate(self._steps):
            if msg.startswith(prefixes):
                self.progress.setValue(i)
                break
        self.status.setText(msg)

    def _chip_counts_modes(self) -> None:
        """After a fix or repro, or a comparison shown again with its model: the chip counts the modes of the
        comparison shown (helper 101 read "1 / 1 modes", control_flow's last run, beside moe_llm's two tabs)."""
        n = len((self.result or {}).get("modes") or [])
        self.progress.setFormat("%v / %m modes")
        self.progress.setRange(0, n)
        self.progress.setValue(n)

    def _failed(self, msg: str) -> None:
        self._drop_work(self._job_work)
        self._then_fix = None
        if self._job_kind in ("fix", "repro"):
            self._chip_counts_modes()
        self._job_kind = None
        self.status.setText(f"compare failed: {msg}" if msg != "cancelled" else "cancelled")
        if msg != "cancelled":
            self.window.notify(f"compare failed: {msg}", ERROR, os.path.basename(self._path or ""))
        self._enable()
        self.failed.emit(msg)

    def _done(self, result: dict) -> None:
        if "failed" in result:
            return self._failed(result["failed"])
        self._job_kind = None
        if self.result is not None and self.result.get("model") != result.get("model"):
            self._shelve(self._job_work)  # another model's comparison: kept to show again when it reopens
        stale = self._shelf.take(result.get("model"))  # this model's earlier one, put away: replaced now
        if stale:
            self._remove_later(stale["dirs"])
        self.result = result
        if result.get("kind") in ("mnn_pair", "mnn_configs"):
            # Minimal repro and Reconvert and re-run belong to a comparison with ONNX Runtime: an .mnn comparison's
            # result drops its run here, after the shown comparison was put away with it (dropped when the .mnn
            # comparison started, the .onnx's came back from the shelf without it: Keep in float and Minimal repro
            # greyed, helper 121)
            self._last = None
            self._last_inputs = None
        self._result_inputs = self._job_inputs  # a new comparison: its own inputs (changed during the run: said)
        self._result_tol = self._job_tol
        self._keep_only(self._job_work)
        # the open model's names select its nodes again: a comparison of another model shown before this one emptied
        # them (tryout 14: after a second model's comparison no row, and no first divergence, selected anything)
        self._names = self._table.names_index() if self._table is not None and self._result_is_open() else {}
        self.fix_result = None
        self._next_skip = {}
        self._fix_tries = {}
        self.fix_table.hide()
        self.save_fix_btn.hide()
        self._fix_say("")
        self._fix_mode = None
        self._chip_counts_modes()
        # a mode that failed to convert or run is not "over tolerance" (tryout 8: int8's crashed conversion was
        # listed with the modes that ran); a close one is over only through known approximations
        failed = [m["mode"] for m in result["modes"] if m.get("error") or m.get("verdict") == "failed"]
        bad = [errormap.mode_label(m) + (" (close)" if m.get("verdict") == "close" else "") for m in result["modes"]
               if not m.get("ok") and m["mode"] not in failed]
        parts = ([f"over tolerance in {', '.join(bad)}"] if bad else []) + ([f"failed: {', '.join(failed)}"]
                                                                          if failed else [])
        # each mode is held to its own tolerance: a mode over it beside one within a looser one with a larger error
        # read as "fp32 is broken and int8w is fine" (a new-user try on encoder_block: fp32 0.000115 close, int8w
        # 0.00738 match)
        worst = worst_rel_l2(result)
        over = [worst[m["mode"]] for m in result["modes"] if not m.get("ok") and m["mode"] not in failed
                and worst.get(m["mode"]) is not None]
        looser = [m["mode"] for m in result["modes"] if m.get("ok") and over and worst.get(m["mode"]) is not None
                  and worst[m["mode"]] > min(over)]
        if looser:
            verb, its = ("is", "its") if len(looser) == 1 else ("are", "their")
            parts.append(f"{', '.join(looser)} {verb} within {its} own, looser tolerance with a larger error (each "
                         "mode is held to its own: Tolerance, default per mode)")
        # a tolerance the user chose is named: kept from the last model's comparison, it judged the next model's
        # fp16w "wrong" where each mode's default passes it, and nothing said so (helper 102's try)
        chosen = (f", judged with {self._tol_words(self._result_tol)} (the Tolerance box)"
                  if self._result_tol and self._result_tol[0] else "")
        # inputs the user gave are named where the verdicts are (helper 105's try), and generated ones too: helper 120
        # read int8w "FAIL" on random data first, the warning that said so under the red verdict
        given = given_inputs(result) or result.get("inputs_from") or ""
        self.status.setText(f"done in {result.get('seconds', 0):.1f} s{_from_cache(result)}"
                            + (f" on {given}" if given else "") + f"{chosen}: "
                            + ("; ".join(parts) or "every output within tolerance")
                            + (f" (saved as run #{result['run_id']})" if result.get("run_id") else "")
                            + self._settings_note)
        self._result_text = self.status.text()
        self.modes_bar.blockSignals(True)
        while self.modes_bar.count():
            self.modes_bar.removeTab(0)
        for m in result["modes"]:
            tier = m.get("verdict")  # match / close / wrong / failed: the tier shown beside the mode
            # a given .mnn (the file beside checked as it is) is named: "fp32 match" read as a fresh conversion
            i = self.modes_bar.addTab(mode_tab_text(m, worst.get(m["mode"])))
            self.modes_bar.setTabToolTip(i, TAB_TIP + errormap.mode_headline(m)  # (wrapped: wrap_all_tooltips)
                                         + (f"\n{m['cause']}" if m.get("cause") else ""))
            self.modes_bar.setTabTextColor(i, QColor(PASS if m.get("ok") else CLOSE if tier == "close" else OVER))
        self.modes_bar.blockSignals(False)
        worst = errormap.worst_mode(result)
        then_fix, self._then_fix = self._then_fix, None
        self.show_mode(then_fix if then_fix and errormap.find_mode(result, then_fix) else
                       worst["mode"] if worst else None)
        self._check_inputs()
        said = [m.get("cause") or "" for m in result["modes"]] + [w for m in result["modes"]
                                                                  for w in m.get("warnings") or []]
        for w in result.get("warnings") or []:
            if not any(w in t for t in said):  # (inputs off the model's scale: a mode over tolerance says it already)
                self.window.notify(w, INFO, os.path.basename(result["model"]))
        QTimer.singleShot(0, self, self._results_in_view)
        if then_fix:  # the comparison a given .mnn's fix started: the fix of that mode now, where it is over
            m = errormap.find_mode(result, then_fix)
            if m is not None and not m.get("ok") and self.fix_btn.isEnabled():
                QTimer.singleShot(0, self, self.fix)
            elif m is not None and m.get("ok"):
                self._fix_say(f"{then_fix} converted with the same settings is within tolerance on these inputs: "
                              "nothing to keep in float")
        self.finished.emit(result)

    def _results_in_view(self, grown: bool = False) -> None:
        """In a dock that scrolls, the result's mode tabs right under the Run row, which stays pinned at the top
        (_pin_run_row) with its status; the mode ticks above scroll away. At 1024x700 the Outputs table showed its
        header row under the settings and a new user dragged the splitter up to read a verdict; scrolled to the tabs
        with the Run row, a new user found no Run button after a run, nor the status that said what it found."""
        area = self.scroll_area()
        if area is None or self.result is None or not is_short(self):
            return
        dock = self.window.docks.get("Compare") if hasattr(self.window, "docks") else None
        if not grown and dock is not None and self.window.grow_bottom(dock):
            # scrolled once the dock has its new height (and grown once: a dock Qt cannot make that tall stays)
            QTimer.singleShot(0, self, lambda: self._results_in_view(grown=True))
            return
        # the row's top: the summary beside the tabs is taller than they are (three lines at 1024 px) and started
        # above them, its first line cut at the dock's top (helper 79's try)
        top = min(w.mapTo(self, w.rect().topLeft()).y() for w in (self.modes_bar, self.headline))
        area.verticalScrollBar().setValue(max(0, top - self._run_slot.height() - 4))

    # ----- showing a mode --------------------------------------------------------------------------------
    def _tab_changed(self, i: int) -> None:
        if self.result is not None and 0 <= i < len(self.result["modes"]):
            self.show_mode(self.result["modes"][i]["mode"])

    def _headers(self) -> None:
        """Column names for the reference the result has: ONNX Runtime's nodes, or side A's ops of an .mnn
        comparison (tryout 11 read "ONNX node" and "why no MNN counterpart" comparing two .mnn files)."""
        mnn = (self.result or {}).get("kind") in ("mnn_pair", "mnn_configs")
        node = "op (A)" if mnn else "ONNX node"
        self.ranking_table.setHorizontalHeaderLabels(_two_line([node if h == "ONNX node" else h
                                                               for h in errormap.RANKING_HEADER]))
        self.ranking_table.horizontalHeaderItem(errormap.RANKING_HEADER.index("its output")).setToolTip(
            errormap.RANKING_OUTPUT_TIP)
        self.harmless_table.setHorizontalHeaderLabels([node, "type", "rel L2", "tensor"])
        self.unmatched_table.setHorizontalHeaderLabels(["tensor", node, "type",
                                                        "why no counterpart in B" if mnn else "why no MNN counterpart"])
        self.plot.setLabel("bottom", "depth (op of A)" if mnn else "depth (ONNX node)")

    def _fix_say(self, text: str) -> None:
        """The fix's (or repro's) line; out of the layout while it says nothing (empty, it kept ~20 px of a 240 px
        dock at 1024x700 between the fix buttons and the tables)."""
        self.fix_label.setText(text)
        self.fix_label.setVisible(bool(text))

    def _others_name(self) -> str | None:
        """The file name of the model the shown result is of, while another model is open; else None."""
        if self.result is None or not self._path or self._result_is_open():
            return None
        model = self.result.get("model") or "?"
        name = os.path.basename(model)
        # a file of the same name elsewhere (a copy): its folder said (helper 117 read "Results of external_data.onnx
        # (another model)" with external_data.onnx open, the copy without its .data file)
        return f"{name} in {os.path.dirname(model)}" if name == os.path.basename(self._path) else name

    def _headline_text(self, mode: dict) -> str:
        """The mode's headline, saying whose it is while another model is open (a new user compared cnn.onnx, opened
        moe_llm.onnx and read "fp16w [match]: pass" over it, with cnn's probs in the Outputs table)."""
        other = self._others_name()
        return f"{other} (not the open model): {errormap.mode_headline(mode)}" if other else \
            errormap.mode_headline(mode)

    def _set_headline(self, mode: dict) -> None:
        """`mode`'s headline, as tall as the tallest of the result's modes' (the buttons under it stay put)."""
        self.headline.set_text(self._headline_text(mode),
                               [self._headline_text(m) for m in (self.result or {}).get("modes") or []])

    def show_mode(self, name: str | None) -> None:
        """Fill the tables and plot with mode `name` and put its overlay and first divergence on the graph."""
        mode = errormap.find_mode(self.result or {}, name)
        self.mode = mode
        if mode is None:
            return
        i = [m["mode"] for m in self.result["modes"]].index(name)
        if self.modes_bar.currentIndex() != i:
            self.modes_bar.blockSignals(True)
            self.modes_bar.setCurrentIndex(i)
            self.modes_bar.blockSignals(False)
        # a fix's (or repro's) line and table belong to their mode: under another mode's tab they read as its own
        # (tryout 14 saw int4w's fix table under int8w)
        mine = self._fix_mode is None or self._fix_mode == name
        self.fix_label.setVisible(mine and bool(self.fix_label.text()))
        self.fix_table.setVisible(mine and self._fix_mode is not None and isinstance(self.fix_result, dict)
                                  and "result" in self.fix_result)
        self._set_headline(mode)
        self.headline.setToolTip(mode.get("cause") or "")
        tier, cause = mode.get("verdict"), errormap.extra_cause(mode)
        advice = (mode.get("calibration") or {}).get("advice")
        scale = "; ".join(n["text"] for n in (self.result or {}).get("input_scale") or [])
        if scale and advice == scale and cause.endswith(f"; {advice}"):
            # inputs off the model's scale: the Fix line says it (_fix_why), a paragraph said twice otherwise (the
            # shorter advice on random calibration data stays in the verdict's line too)
            cause = cause[:-len(advice) - 2]
        # the mode's warnings under it (a conversion that left weights in float32: a "match" that quantized less
        # than it says, tryout 14)
        verdict = [f"{tier}: {cause}"] if cause else []
        notes = [f"\u26a0 {w}" for w in mode.get("warnings") or []]
        self._notes_short = is_short(self)
        # a short dock (1024x700) keeps its verdict and says two or more notes in a line, whole on hover: two notes of
        # two lines each put the tables below the fold (a new-user try saw a row or two of the ranking)
        shown = [f"\u26a0 {len(notes)} notes on this mode (hover to read)"] if len(notes) > 1 and self._notes_short \
            else notes
        self.cause.setText("\n".join(verdict + shown))
        self.cause.setToolTip("\n".join(verdict + notes) if notes else "")
        self.cause.setStyleSheet(f"color: {OVER if cause and tier != 'close' else CLOSE};")
        self.cause.setVisible(bool(self.cause.text()))
        self._fill(self.outputs_table, [[r[0], _num(r[1]), _num(r[2], "{:.6f}"), _num(r[3]), _top1(r[4]), r[5]]
                                        for r in errormap.output_rows(mode)])
        self._fill(self.ranking_table, [[r[0], r[1], r[2], _num(r[3]), _num(r[4]), r[5], r[6]]
                                        for r in errormap.ranking_rows(mode, labels=True)[:200]])
        self._mark_blamed(mode)
        # integer tensors that differ without consequence (an int64 Slice bound MNN holds as int32): listed here with
        # why, never as a divergence (metrics._integer_differences)
        ints = [d for d in mode.get("integer_differences") or [] if not d.get("matters")]
        harmless = mode.get("harmless", [])
        self._fill(self.harmless_table, [[h["onnx_node"], h["op_type"], _num(h["rel_l2"]), h["tensor"]]
                                         for h in harmless]
                   + [[d["onnx_node"] or "", f"{d['op_type']} (integer)", f"{d['mismatch']} of {d['size']} differ",
                       d["tensor"]] for d in ints])
        for r, h in enumerate(harmless):
            for c in range(self.harmless_table.columnCount()):
                item = self.harmless_table.item(r, c)
                item.setToolTip((f"{item.toolTip()}\n" if item.toolTip() else "")
                                + f"over tolerance here (rel L2 {_num(h['rel_l2'])}), harmless: "
                                + (UNREAD_WHY if h.get("unread") else HARMLESS_WHY))
        unread = [h for h in harmless if h.get("unread")]
        # (an output nothing reads, e.g. a GRU's Y_h where the model takes Y: "its error dies out" read as wrong)
        why = (f"{HARMLESS_WHY}" + (f"; nothing in the model reads {_unread_names(unread)}" if unread else "")
               if len(unread) < len(harmless) else UNREAD_WHY)
        self.harmless_note.setText(" ".join(
            ([f"Harmless: over tolerance where it is made, but {why}."] if harmless else [])
            + (["Integer rows differ without consequence (hover a row for why)."] if ints else [])))
        self.harmless_note.setVisible(bool(harmless or ints))
        for r, d in enumerate(ints, len(harmless)):
            for c in range(self.harmless_table.columnCount()):
                self.harmless_table.item(r, c).setToolTip(d["why"])
        self._headers()
        self._fill(self.unmatched_table, [[u["tensor"], u.get("onnx_node") or "", u.get("op_type") or "",
                                           u["reason"]] for u in mode.get("unmatched", [])[:2000]])
        self.tables.setTabText(2, f"Harmless ({len(harmless) + len(ints)})")
        self.tables.setTabText(3, f"No counterpart ({len(mode.get('unmatched', []))})")
        self._enable()
        # the plot and the graph each in an event-loop turn of their own: a busy machine gives the UI thread
        # a small share of a core, and one long step would stall it
        self._shown_token = token = object()
        QTimer.singleShot(0, self, lambda: self._token_is(token) and self._plot(mode))
        QTimer.singleShot(0, self, lambda: self._token_is(token) and self._graph(mode))

    def _token_is(self, token) -> bool:
        return getattr(self, "_shown_token", None) is token

    def _mark_blamed(self, mode: dict) -> None:
        """The Ranking's row of the op the headline blames, in bold with a mark: ranked by error introduced, it may
        be far from the top (a new user read the table as blaming another op than the headline did)."""
        k = errormap.first_divergence_rank(mode)
        t = self.ranking_table
        if k is None or k >= t.rowCount():
            return
        fd = mode["first_divergence"]
        tip = (f"the first divergence, which the headline names: the first op whose error reaches an output over "
               f"tolerance (here #{k + 1} by error introduced)")
        for c in range(t.columnCount()):
            item = t.item(k, c)
            if item is None:
                continue
            font = item.font()
            font.setBold(True)
            item.setFont(font)
            if not item.toolTip() or c == 0:
                item.setToolTip(tip if c else f"{tip}: {fd.get('onnx_node')}")
        t.item(k, 0).setText(f"{k + 1} \u25c0")
        # the column was sized to the numbers alone: the bold mark read "…" (helper 114)
        t.setColumnWidth(0, max(t.columnWidth(0), t.sizeHintForColumn(0)))

    @staticmethod
    def _fill(table: QTableWidget, rows: list[list]) -> None:
        """The rows into a table, its columns sized to them once at the end: sized to their contents after every
        item (ResizeToContents), refilling 200 ranking rows took 13-18 s and froze the window at each mode switch."""
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.Interactive)
        table.setUpdatesEnabled(False)
        try:
            table.clearContents()
            table.setRowCount(len(rows))
            for r, row in enumerate(rows):
                for c, v in enumerate(row):
                    item = QTableWidgetItem("" if v is None else str(v))
                    if v in ("FAIL", "over"):
                        item.setForeground(QColor(OVER))
                    elif v == "over (close)":  # over only through known approximations: the close tier's amber
                        item.setForeground(QColor(CLOSE))
                    elif v == errormap.HARMLESS_OVER:  # as the depth plot's harmless points and the Harmless tab
                        item.setForeground(QColor(CLOSE))
                        item.setToolTip(f"over tolerance here, harmless: {HARMLESS_WHY}")
                    if len(item.text()) > 16:  # a name may show elided: whole in its tooltip
                        item.setToolTip(item.text())
                    table.setItem(r, c, item)
        finally:
            # sized once, then a long name column capped: the numbers beside it stay in view (1024 px, tryout 8)
            table.resizeColumnsToContents()
            for c in range(table.columnCount() - 1):  # the last column stretches to the table's edge
                if table.columnWidth(c) > NAME_CAP:
                    table.setColumnWidth(c, NAME_CAP)
            table.setUpdatesEnabled(True)

    def _plot(self, mode: dict) -> None:
        self._points = errormap.depth_points(mode)
        spots = []
        for k, p in enumerate(self._points):
            colour = FIRST if p["first"] else HARMLESS if p["harmless"] else PASS if p["within"] else OVER
            spots.append({"pos": (p["depth"], math.log10(p["error"])), "data": k, "brush": pg.mkBrush(colour),
                          "pen": pg.mkPen("k" if p["first"] else colour, width=2 if p["first"] else 1),
                          "size": 14 if p["first"] else 8, "symbol": "o" if p["within"] else "t1"})
        self.scatter.setData(spots)
        self.plot.enableAutoRange()  # a new mode's points are all in view, whatever was zoomed before
        # now, not at the plot's next paint: scrolled below the fold (the Run row kept in view after a run) it is not
        # painted, and its range stayed the empty plot's 0..100 for a decoder 127 deep
        self.plot.getViewBox().updateAutoRange()
        self.plot.set_title(f"{errormap.mode_label(mode)}: error against depth",
                            [("\u25cf", PASS, "within"), ("\u25b2", OVER, "over"),
                             # colours, not shapes: an amber triangle is harmless and over ("\u25cf harmless" read as
                             # if only dots could be: helper 82's try)
                             # (why, in its tooltip and where the title has room: DepthPlot.fit_title)
                             ("blue:", FIRST, "first divergence"),
                             ("amber:", HARMLESS, f"harmless ({HARMLESS_WHY})")])

    def _point_tip(self, x=None, y=None, data=None) -> str:
        if data is None or not 0 <= int(data) < len(self._points):
            return ""
        p = self._points[int(data)]
        lines = errormap.point_tip(p).split("\n")
        if p["harmless"] and not p["first"] and not p["within"] and len(lines) > 2:  # its state line, with why
            why = next((d["why"] for d in (self.mode or {}).get("integer_differences") or []
                        if d.get("tensor") == p["tensor"]), HARMLESS_WHY)
            lines[2] = f"over tolerance, harmless: {why}"
        return "\n".join(lines)

    def _points_clicked(self, _item, points, _ev=None) -> None:
        """A point selects its node once the time for a double-click has passed: the first click of a double-click
        (fit) selected the point under it and the graph jumped away from the first divergence."""
        if not len(points):
            return
        p = self._points[int(points[0].data())]
        if p.get("onnx_node"):
            self._point_pending = p["onnx_node"]
            self._point_timer.start(QApplication.doubleClickInterval())

    def _point_chosen(self) -> None:
        node, self._point_pending = self._point_pending, None
        if node:
            self.select_node(node)

    def _point_cancelled(self) -> None:
        self._point_timer.stop()
        self._point_pending = None

    def _row_clicked(self, table: QTableWidget, row: int) -> None:
        if table is self.ranking_table and self.mode is not None and row < len(self.mode.get("ranking", [])):
            self.select_node(self.mode["ranking"][row]["onnx_node"])  # (its name cell may read "A \u2026 B")
            return
        col = 1 if table is self.unmatched_table else 0
        item = table.item(row, col)
        if item is not None and item.text():
            self.select_node(item.text())

    def _view(self):
        pane = self.window.pane
        if self.result is None or pane.path is None or os.path.abspath(pane.path) != self.result["model"]:
            return None
        return pane.main_view

    def select_node(self, name: str) -> bool:
        """Reveal, centre and select ONNX node `name` in the main pane (False when it is not there)."""
        op = self._names.get(name)
        view = self._view()
        if op is None or view is None:
            return False
        view.reveal(op)
        return True

    def selected_node(self) -> str | None:
        """The ONNX node the main pane has selected (None: none, or a scope)."""
        view = self._view()
        if view is None or self._table is None:
            return None
        op = view.canvas.selected
        if op is None or not 0 <= op < self._table.node_count:
            return None
        return self._table.names[op] or self._table.ids[op]

    def _graph_overlay_changed(self, ov) -> None:
        # (results of another model cannot come back on this graph: no "click here" that does nothing; tryout 12)
        if self.overlay is None or ov is self.overlay or not self._result_is_open():
            self.legend.set_elsewhere(None)
        else:
            self.legend.set_elsewhere(str(ov.name) if ov is not None else "the op categories")

    def showEvent(self, e) -> None:
        super().showEvent(e)
        watch_short(self, self._refit_notes)

    def _refit_notes(self) -> None:
        """The dock went short or tall: the shown mode's notes in full or in a line (show_mode); gone tall, the dock
        from its top (left scrolled to the mode tabs of the short dock, it showed a line cut in half at its top
        after the window grew back, a new-user try)."""
        short = is_short(self)
        if getattr(self, "_was_short", False) and not short:
            self._to_top()
        self._was_short = short
        if self.mode is not None and self.result is not None and getattr(self, "_notes_short", None) != short:
            self.show_mode(self.mode["mode"])

    def restore_overlay(self) -> None:
        """Its model open again (the window asks the dock whose colours it showed last): the shown mode's colours
        and the first divergence's outline come back, the view stays where it is."""
        view = self._view()
        if view is None or self.overlay is None or self.mode is None or not self._result_is_open():
            return
        view.set_overlay(self.overlay)
        view.canvas.set_marked(self._region_items(self.mode))

    def _region_items(self, mode: dict) -> list[int]:
        """The graph items of the first divergence's region (the ONNX ops fused into one MNN op), outlined."""
        fd = mode.get("first_divergence")
        return [self._names[n["name"]] for n in (fd or {}).get("region", []) if n["name"] in self._names]

    def _graph(self, mode: dict) -> None:
        view = self._view()
        timed = errormap.has_time_delta(mode)
        self.graph_shows.setVisible(timed)
        if timed and self.graph_shows.currentIndex() == 1:
            self.overlay = errormap.time_delta_overlay(mode)
        else:
            self.overlay = errormap.error_overlay(mode)
        self.legend.set_overlay(self.overlay)
        if view is None:
            self.mode_shown.emit(mode["mode"])
            return
        view.set_overlay(self.overlay)
        self.mode_shown.emit(mode["mode"])
        fd = mode.get("first_divergence")
        view.canvas.set_marked(self._region_items(mode))
        # the op the verdict names (a first divergence that is a known approximation stays outlined)
        target = mode.get("blamed_node") or (fd or {}).get("onnx_node")
        if target in self._names:
            self._blamed = self._names[target]
            view.reveal(self._blamed)
        else:
            # a verdict that names no op leaves the user's own selection alone; only an op a verdict named
            # before (another mode's) is no longer selected
            if self._blamed is not None and view.canvas.selected == self._blamed:
                view.select(-1)
            self._blamed = None

    # ----- the fix loop ----------------------------------------------------------------------------------
    def fix(self) -> bool:
        """Reconvert the shown quantized mode with its top-ranked operators kept in float, re-compare it and
        show the error and size before and after (compare's fix, as the CLI runs it)."""
        m = self.mode
        if m is None or self._last is None or self.window.runner.job_busy(JOB) or not self._result_is_open():
            return False
        conv = self._given_conversion(m)
        if conv is not None:
            # a given .mnn converted here: its mode converted with the same settings first (a fresh, equal file the
            # fix can redo), the fix of it when that comparison is in (_done)
            path, options, spec = self._last
            mode = m["judged_as"]
            self._then_fix = mode
            self._fix_say(f"comparing {mode} converted as {os.path.basename(m.get('mnn_model') or '')} was (the same "
                          "settings), then keeping its top-ranked operators in float\u2026")
            self._start(path, dataclasses.replace(options, mnn_path=None, modes=[mode], convert_settings=conv,
                                                  fix=False), spec, inputs_state=self._last_inputs)
            return True
        if m["mode"] not in QUANTIZED:
            return False
        path, options, spec = self._last
        plan = m.get("fix_plan") or {}
        skip = self._next_skip.get(m["mode"]) or plan.get("skip_ops") or None
        opts = dataclasses.replace(options, modes=[m["mode"]], fix=True, fix_skip_ops=skip)
        kept = ", ".join(skip or []) or "its top-ranked operators"
        self._fix_say(f"reconverting {m['mode']} with {kept} in float\u2026")
        self._fix_mode = m["mode"]
        self._start(path, opts, spec, kind="fix")
        return True

    def _fix_done(self, result: dict) -> None:
        if "failed" in result:
            return self._failed(result["failed"])
        self._job_kind = None
        self._chip_counts_modes()
        fix = result.get("fix")
        summary = errormap.fix_summary(fix)
        if summary is None:
            note = (fix or {}).get("note") or "the mode is within tolerance now: nothing to keep in float"
            self._fix_say(f"fix: {note}")
            self.status.setText("fix: not possible")
            self.fix_result = {"note": note}
            self._enable()
            self.fixed.emit(self.fix_result)
            return
        self.fix_result = dict(summary, result=fix)
        self.fix_table.show()
        row = decisive(summary.get("judged"))
        self._fill(self.fix_table, [
            ["before", _num(summary["before"]), "pass" if fix["before"]["ok"] else "FAIL",
             _num(summary["size_before"], "{:,} bytes"), judged_cell(row, "before") if row else "-"],
            ["after", _num(summary["after"]), "pass" if summary["ok_after"] else "FAIL",
             _num(summary["size_after"], "{:,} bytes"), judged_cell(row, "after") if row else "-"]])
        self.fix_table.setFixedHeight(self.fix_table.horizontalHeader().height()
                                      + self.fix_table.verticalHeader().length() + 2 * self.fix_table.frameWidth())
        more = (fix.get("next") or {}).get("ops") or []
        # a milder mode of the comparison shown doing better in a file no larger than this fix's: no more ops (the fix
        # ran one mode, so the comparison's rows say it; helper 111's int8 went 3 -> 6 -> 7 ops kept, 1.26 -> 4.31 MB,
        # while int8w passed in 1.27 MB)
        beaten_by = None if summary["ok_after"] else (beaten(fix, (self.result or {}).get("modes")) or (None,))[0]
        if beaten_by:
            more = []
        # an earlier fix of this mode that kept fewer ops and did as well or better: keeping more made it worse
        # (PP-OCRv6 rec int8w: 3 ops 0.0773, 6 ops 0.0869, and the button offered 9: tryout 18), so the button
        # stops escalating and the line says so
        # the comparison itself counts as a try with no op kept: a fix that did no better than that does not escalate
        # either (helper 109, captcha CRNN int8: 0.302 kept 3 -> 0.313, kept 6 -> 0.312, and the button offered 9 in a
        # larger file each time, under a line saying the ranked ops could not be kept in float)
        tried = self._fix_tries.setdefault(summary["mode"], [(0, summary["before"], None)])
        n_ops, after = len(summary["skip_ops"]), summary["after"]
        fewer = [t for t in tried if t[0] < n_ops and t[1] is not None and after is not None and t[1] <= after]
        tried.append((n_ops, after, beaten_by))
        if not summary["ok_after"] and more and not fewer:
            self._next_skip[summary["mode"]] = list(dict.fromkeys(list(summary["skip_ops"]) + list(more)))
        else:
            self._next_skip.pop(summary["mode"], None)
        # what to try next, with what the comparison shown measured of the milder modes (the fix ran one mode)
        hint = next_step(fix, (self.result or {}).get("modes"), command=summary["mode"] not in self._next_skip,
                         inputs_random=inputs_random(self.result))
        if fewer:
            best = min(fewer, key=lambda t: t[1])
            milder = milder_text(fix, (self.result or {}).get("modes"))
            than = (f"keeping {best[0]} (worst output rel L2 {_num(after)} against {_num(best[1])})" if best[0] else
                    f"keeping none (worst output rel L2 {_num(after)} against the comparison's {_num(best[1])})")
            hint = (f"keeping {n_ops} ops in float did {'no better' if after == best[1] else 'worse'} than {than}: "
                    "more of the ranked ops do not help here" + (f"; next: {milder}" if milder else ""))
        if summary["mode"] in self._next_skip:  # the button does it: say so rather than the CLI command alone
            hint = (hint or "") + f" (the button now keeps {len(self._next_skip[summary['mode']])} operators)"
        # by the ONNX nodes the ranking and the verdict name; MNN's op names (a fused Conv+Add is "Add.205") after
        # them (tryout 12 read "kept Add.205, Add.189, Add.151" beside a verdict on Conv.67)
        nodes = list(dict.fromkeys(e["onnx_node"] for e in fix.get("onnx_nodes") or [] if e.get("onnx_node")))
        kept = (f"{', '.join(nodes)} (MNN ops {', '.join(summary['skip_ops'])})" if nodes
                else ", ".join(summary["skip_ops"]))
        # where the verdict flipped, on what: the tolerance's own figure against its limit (a 5% change of rel L2
        # that turned FAIL into pass read as arbitrary)
        judged = summary.get("judged") or {}
        why = ""
        if row and judged.get("flipped") and judged.get("text"):
            arrow = " \u2192 "
            why = (f" ({row['figure']} is what the tolerance judges, not rel L2: "
                   f"{judged['text'].replace(' -> ', arrow)})")
        # the outcome and what to do next first, the ops kept last: "kept Conv.50, Conv.53, ... (MNN ops ...) in float
        # (converter ...)" took the first two of six lines and the advice sat in the middle (helper 107)
        self._fix_say(
            f"{summary['mode']}: {'within' if summary['ok_after'] else 'still over'} tolerance{why} after keeping "
            f"{len(summary['skip_ops'])} ops in float: worst output rel L2 {_num(summary['before'])} \u2192 "
            f"{_num(summary['after'])} ({gain_text(summary['gain'])})"
            + (f". {hint[0].upper()}{hint[1:]}" if hint else "") + f". Kept: {kept} ({fix['how']})")
        beside = self._side_follows_fix(summary["mode"], fix)
        self.status.setText(f"fix for {summary['mode']} done in {result.get('seconds', 0):.1f} s"
                            + ("; beside: the fixed conversion" if beside else ""))
        self._result_text = self.status.text()
        self._enable()
        # its outcome in view: below the fold of the dock at 1024x700, the status said "done" and the before/after
        # table took scrolling to find
        QTimer.singleShot(0, lambda: self.reveal(self.fix_table))
        self.fixed.emit(summary)

    def scroll_area(self) -> QScrollArea | None:
        return scroll_area_of(self)

    def _to_top(self) -> None:
        """The dock's contents from their top (where it scrolls)."""
        area = self.scroll_area()
        if area is not None:
            area.verticalScrollBar().setValue(0)

    def reveal(self, widget: QWidget) -> None:
        """Scroll the dock (when it scrolls) so that `widget` and the fix line above it are in view."""
        area = self.scroll_area()
        if area is None or not widget.isVisible():
            return
        self._show_below_run_row(area, widget)
        self._show_below_run_row(area, self.fix_label)  # then its line, if both do not fit

    def _show_below_run_row(self, area: QScrollArea, widget: QWidget, margin: int = 8) -> None:
        """QScrollArea.ensureWidgetVisible, with the top of the view under the pinned Run row counted out."""
        bar = area.verticalScrollBar()
        top = widget.mapTo(self, QPoint(0, 0)).y()
        bottom = top + widget.height()
        under = self._run_slot.height() if top >= self._run_slot.y() + self._run_slot.height() else 0
        value = bar.value()
        if bottom + margin > value + area.viewport().height():
            value = bottom + margin - area.viewport().height()
        value = min(value, top - margin - under)
        bar.setValue(max(0, value))

    # ----- the repro (compare --repro) --------------------------------------------------------------------
    def make_repro(self, folder=None) -> bool:
        """Write a minimal, verified repro of the shown mode's first divergence to `folder` (asked when None):
        the same comparison of that mode with `repro` set (conversion and reference come from the caches)."""
        m = self.mode
        if m is None or self._last is None or not m.get("first_divergence") or self.window.runner.job_busy(JOB):
            return False
        if folder is None:
            # a new folder, named and created (the folder picker took only folders that exist: tryout 18 typed a
            # new name and was refused)
            start = os.path.join(os.path.dirname(self._last[0]), self.default_export_name("", False)
                                 .replace(f"-{m['mode']}", f"-repro-{m['mode']}"))
            folder = filedialog.ask_save_file(self, "New folder for the repro (created)", start, "Folder (*)",
                                              confirm_overwrite=False)
            if not folder:
                return False
        path, options, spec = self._last
        opts = dataclasses.replace(options, modes=[m["mode"]], fix=False, repro=str(folder))
        self._fix_say(f"making a minimal repro of {m['mode']}'s first divergence\u2026")
        self._fix_mode = m["mode"]
        self.fix_table.hide()
        self._start(path, opts, spec, kind="repro")
        return True

    def _repro_done(self, result: dict) -> None:
        if "failed" in result:
            return self._failed(result["failed"])
        self._job_kind = None
        self._chip_counts_modes()
        rp = (result.get("modes") or [{}])[0].get("repro")
        problem = result.get("repro_problem")
        if rp:
            self._fix_say(
                f"repro in {rp['dir']}: {len(rp['nodes'])} node(s) ({', '.join(rp['op_types'])}), rel L2 "
                f"{_num(rp['rel_l2'])}, " + ("verified: it diverges on its own" if rp["verified"]
                                             else f"NOT verified: {rp['note']}"))
        else:
            self._fix_say(f"repro: {problem}")
        self.status.setText(f"repro done in {result.get('seconds', 0):.1f} s")
        self._result_text = self.status.text()
        self._enable()
        self.reproduced.emit(rp or {"note": problem})

    def reconvert_with_settings(self) -> None:
        """Open the Convert dock (or the convert dialog) on the model with the shown mode's settings."""
        m = self.mode
        settings = (m or {}).get("conversion", {}).get("settings") if m else None
        conv = self.window.panels.get("Convert")
        if conv is not None and self.result is not None:
            conv.set_source(self.result["model"])
            if settings:  # (it called a method the Convert dock does not have, behind a hasattr: nothing happened)
                chosen = ConvertSettings.from_json(settings)
                if chosen.int8 is not None and chosen.int8.calib_files:
                    # the comparison's own calibration samples live in its temporary work folder: the dock gets the
                    # methods, not those files (tryout 12: Random samples was refused beside them, "int8 takes one
                    # calibration source, got calib_files, calib_random", until the field was cleared by hand)
                    work = (self.result or {}).get("work_dir") or ""
                    if work and all(os.path.abspath(f).startswith(os.path.abspath(work) + os.sep)
                                    for f in chosen.int8.calib_files):
                        chosen.int8.calib_files = []
                        chosen.int8.calib_random = chosen.int8.calib_random or 4
                        chosen.int8.samples = chosen.int8.calib_random  # ("int8 samples 5" beside "Random 4")
                        # a stand-in, not the user's choice: a Calibration folder set next replaces it (a new user's
                        # folder of real inputs was refused beside it: "int8 takes one calibration source")
                        chosen.int8.calib_random_default = True
                from mnnscope.inspector.convert.checks import FP16_INSTEAD
                from mnnscope.inspector.convert.service import METHOD_ADVICE  # (not at start-up: it imports onnx)
                # the method the failure asks for, a run with it having got past the crash (tryout 13 found KL kept)
                for method in ("EMA", "KL"):
                    if chosen.int8 is not None and METHOD_ADVICE.format(method) in (m.get("error") or ""):
                        chosen.int8.feature_method = method
                        break
                if any(w.endswith(FP16_INSTEAD) for w in m.get("warnings") or []) and chosen.int8 is None \
                        and chosen.weight_quant_bits is not None:
                    # weight quantization left most weights in float32, and the warning says fp16 storage halves them
                    # all: what it advises is set (tryout 2026-12-04: the dock came back with the 8 bits it had just
                    # flagged, and ticking fp16 beside them was refused: "exclude each other")
                    chosen.weight_quant_bits = chosen.weight_quant_block = chosen.weight_quant_asymmetric = None
                    chosen.fp16 = True
                fr = self.fix_result or {}
                if fr.get("result") and fr.get("mode") == m.get("mode") and chosen.int8 is not None:
                    # full int8's fix keeps its ops in float through mnnquant's skip list: the dock's Skip ops (helper
                    # 113 found the field empty after a fix)
                    chosen.int8.skip_ops = list(fr.get("skip_ops") or [])
                if m.get("verdict") == "close":
                    # what the cause line names as avoiding the approximation: set, not left to be found (tryout 18
                    # found GELU still "approximate" in the dock)
                    for a in m.get("approximations") or []:
                        for field, value in (a.get("convert_fields") or {}).items():
                            setattr(chosen, field, value)
                conv.set_settings(chosen)
            self.window.show_dock("Convert")
        else:
            self.window.ask_convert()

    def fixed_model(self) -> str | None:
        """The shown mode's fixed conversion (the last fix that ran on it), None where there is none."""
        fr, m = self.fix_result or {}, self.mode
        if not fr.get("result") or m is None or fr.get("mode") != m.get("mode") or not self._result_is_open():
            return None
        return (fr["result"] or {}).get("mnn_model") or None

    def fixed_name(self) -> str:
        """"PP-OCRv6_det_small.int8w.keep3.mnn": the model's stem, the mode, how many ops the fix kept in float."""
        stem = os.path.splitext(os.path.basename((self.result or {}).get("model") or "model"))[0]
        return f"{stem}.{self.fix_result['mode']}.keep{len(self.fix_result['skip_ops'])}.mnn"

    def save_fixed(self, path=None) -> str | None:
        """Copy the fixed conversion to `path` (asked for, beside the model, where None); returns where it went."""
        src = self.fixed_model()
        if not src:
            return None
        if not os.path.isfile(src):
            self.window.notify("the fixed conversion is gone: it lived in the comparison's temporary folder",
                               WARNING, os.path.basename(self.result["model"]), "run the fix again, then save it")
            return None
        if not path:
            path = filedialog.ask_save_file(self, "Save the fixed model", self.fixed_name(), "MNN model (*.mnn)",
                                            near=os.path.dirname(self.result.get("model") or ""))
            if not path:
                return None
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            shutil.copyfile(src, path)
        except OSError as e:
            self.window.notify(f"cannot write {path}: {e.strerror or e}", ERROR, os.path.basename(path))
            return None
        # recorded as a conversion of the model into that file: opened alone later, it is linked to its .onnx (its
        # runs, its inputs: RunStore.converted_from)
        from mnnscope.inspector.store.runs import record
        mode = errormap.find_mode(self.result or {}, self.fix_result["mode"]) or {}
        record(None, kind="convert", model_path=self.result["model"],
               settings=(mode.get("conversion") or {}).get("settings") or {},
               summary={"ok": True, "output": os.path.abspath(path), "size_bytes": os.path.getsize(path),
                        "keep_float": list(self.fix_result["skip_ops"]), "made_by": "compare fix"})
        # ("saved the int8w conversion with Add.151, Add.155, Add.189 kept in float x.keep3.mnn to ..." read garbled:
        # helper 114; the ops are the fix line's)
        return self._saved(f"the fixed {self.fix_result['mode']} conversion", path)

    def _side_follows_fix(self, mode: str, fix: dict) -> bool:
        """The pane beside showing this mode's conversion gets the fixed one (tryout 12 read the fix's numbers
        beside the graph of the conversion it replaced); True when it was swapped."""
        new = (fix or {}).get("mnn_model")
        m = errormap.find_mode(self.result or {}, mode)
        second = self.window.second
        if not new or not os.path.isfile(new) or m is None or second is None or not second.path \
                or os.path.abspath(second.path) != os.path.abspath(m.get("mnn_model") or ""):
            return False
        return self._open_beside(new, f"{mode} fixed")

    def side_by_side(self) -> None:
        m = self.mode
        fixed = ((self.fix_result or {}).get("result") or {}).get("mnn_model") \
            if self.fix_result and self.fix_result.get("mode") == (m or {}).get("mode") else None
        if fixed and os.path.isfile(fixed):  # the fix shown for this mode: its conversion (tryout 15 got the one before)
            self._open_beside(fixed, f"{m['mode']} fixed")
        elif m and m.get("mnn_model") and os.path.isfile(m["mnn_model"]):
            second = self.window.second
            if second is not None and self.window._converted_in(m["mode"], second.path):
                # the user's own file beside is this mode's conversion byte for byte: it stays (it was replaced by
                # the comparison's "model.mnn", a file they never made)
                self.window.notify(f"{os.path.basename(second.path)} beside is the {m['mode']} conversion (the same "
                                   "file): its ops show the comparison's errors", INFO,
                                   os.path.basename(self.result["model"]))
                return
            self._open_beside(m["mnn_model"], m["mode"])

    def _open_beside(self, path: str, what: str) -> bool:
        """A mode's conversion in the pane beside, its tab named after the mode: every comparison's conversion is a
        "model.mnn" (int8 and int8w looked alike)."""
        path = os.path.abspath(path)
        self._opened_as[path] = what  # (the button that checks it names it so: _enable)
        self.window.model_titles[path] = f"{what} \u00b7 {os.path.basename(path)}"
        self.window.not_recent.add(path)
        return self.window.open_model(path, second=True)

    # ----- exports ---------------------------------------------------------------------------------------
    def default_export_name(self, suffix: str, whole: bool = False) -> str:
        """The name a save dialog offers: the model's stem and the shown mode (a table or overlay is one mode's), or,
        for `whole` (the HTML report holds every mode), the comparison's modes ("encoder-int8w.html" held fp32 and
        fp16w too: tryout 18)."""
        stem = os.path.splitext(os.path.basename(self.result["model"]))[0]
        if whole:
            modes = [m["mode"] for m in self.result.get("modes") or []]
            what = "compare" + ("-" + "-".join(modes) if 0 < len(modes) <= 4 else f"-{len(modes)}-modes" if modes
                                else "")
        else:
            what = self.mode["mode"] if self.mode else "compare"
        return f"{stem}-{what}{suffix}"

    def _ask(self, path, title: str, filt: str, suffix: str, whole: bool = False) -> str | None:
        if path:
            return str(path)
        if self.result is None:
            return None
        chosen = filedialog.ask_save_file(self, title, self.default_export_name(suffix, whole), filt,
                                          near=os.path.dirname(self.result.get("model") or ""))
        return chosen or None

    def export_report(self, path=None) -> str | None:
        from mnnscope.inspector.compare.report import write_report
        path = self._ask(path, "Save the compare report", "HTML (*.html)", ".html", whole=True)
        if path is None:
            return None
        return self._saved("the compare report", write_report(self.report_result(), path))

    def report_result(self) -> dict | None:
        """The comparison shown, with the keep-in-float fix that ran on it (a run of its own: the report left it out,
        and a colleague could not see what was kept, nor rerun it)."""
        if self.result is None:
            return None
        fix = (self.fix_result or {}).get("result")
        return dict(self.result, fix=fix) if isinstance(fix, dict) and fix.get("possible") else self.result

    def _saved(self, what: str, path: str) -> str:
        """A note naming what was written where (the exports said nothing on screen; tryout 8)."""
        self.window.notify(saved_message(what, path), INFO, os.path.basename(self.result["model"]))
        return path

    def export_overlay(self, path=None) -> str | None:
        """The shown mode's error overlay as Model Explorer node-data JSON."""
        path = self._ask(path, "Save the error overlay", "Model Explorer node data (*.json)", "-errors.json")
        if path is None or self.mode is None:
            return None
        with open(path, "w", encoding="utf-8") as f:
            json.dump(errormap.model_explorer_json(self.mode), f, indent=1)
        return self._saved(f"the {self.mode['mode']} error overlay", path)

    def export_csv(self, path=None) -> str | None:
        path = self._ask(path, "Save the tables", "CSV (*.csv)", ".csv")
        if path is None or self.mode is None:
            return None
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(errormap.tables_csv(self.mode))
        return self._saved(f"the {self.mode['mode']} tables", path)


SETTINGS_TIP = ("Open the Convert dock on this model with the shown mode's conversion settings (its quantization, "
                "calibration, fusions) to change them; its Reconvert and re-run then converts with them and compares "
                "again. The Convert dock's settings are also what Profile converts the .onnx with.")
TAB_TIP = ("The mode's worst output error (relative L2 against the reference) after its mark: \u2713 within the "
           "mode's tolerance, \u2248 over it only through known approximations, \u2717 over it.\n")


def gain_text(gain) -> str:
    """A fix's gain (error before / after) in words: "3.4x less error", or "worse, 0.96x" (a fix that made the error
    worse read "(1.0x)": helper 110)."""
    if not isinstance(gain, (int, float)) or gain <= 0:
        return "-"
    return f"{gain:.1f}x less error" if gain >= 1.05 else "about the same" if gain >= 0.995 else f"worse, {gain:.2f}x"


def mode_tab_text(m: dict, rel: float | None) -> str:
    """A mode's tab: its name, its verdict's mark and its worst output error ("int8 \u2713 0.039", "fp32 \u2248 1.2e-4",
    "int8 \u2717 failed"). Words alone ("fp32 \u2248 close" beside "int8 match") read as fp32 being the broken mode on
    encoder_block: each mode is held to its own tolerance, int8's ten thousand times fp32's, and its error 340 times
    larger passed (helpers 104 and 107); the figures put the modes in their order."""
    tier = m.get("verdict")
    mark = "\u2713" if m.get("ok") else "\u2248" if tier == "close" else "\u2717"
    what = short_error(rel) if rel is not None and not m.get("error") and tier != "failed" else (tier or "")
    # a quantizing mode whose conversion left most weights in float32 measured little of its quantization: "int8 \u2713
    # 0.004" over 97% float weights read as int8 being fine (helper 111, a keep-LSTM/GRU setting kept on)
    share = (m.get("conversion") or {}).get("float_share")
    if share is not None and share >= FLOAT_MOSTLY and m.get("mode") in QUANTIZED and not m.get("error"):
        what += f" \u00b7 {share:.0%} float"
    return f"{row_label(m)}{' (emulated)' if m.get('emulated') else ''} {mark} {what}".rstrip()


def short_error(v: float) -> str:
    """An error in two figures, as short as it reads: 0.039, 0.0074, 1.2e-4, 0."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    if abs(v) >= 1e-3:
        return f"{v:.2g}"
    mant, exp = f"{v:.1e}".split("e")
    return f"{mant}e{int(exp)}"


def _from_cache(result: dict) -> str:
    """What of a comparison came from the caches, for its "done in" line: a second comparison of an unchanged model
    said "done in 0.1 s" as if it had converted and run ONNX Runtime again (a new-user try, 2026-12-04)."""
    ref = ((result.get("reference") or {}).get("cache") or {}).get("state") == "hit"
    convs = [m.get("conversion") or {} for m in result.get("modes", [])]
    convs = [c for c in convs if c and not c.get("given")]
    conv = bool(convs) and all(c.get("reused") or (c.get("cache") or {}).get("state") == "hit" for c in convs)
    if ref and conv:
        return " (reference run and conversions from the cache)"
    if ref:
        return " (reference run from the cache)"
    if conv:
        return " (conversions from the cache)"
    return ""
