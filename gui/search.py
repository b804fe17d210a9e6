"""Find (Ctrl+F): ops by op type or node name (tensor names on request), with next / previous / select all.

Every match is outlined on the canvas as soon as it is found; "Select all" opens the scopes holding the
matches (when there are not too many) and fits them in view, never below a readable zoom (matches spread
further apart: the current one is shown and the count says they span the graph)."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeySequence, QPainter, QPalette, QShortcut
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QSizePolicy, QToolButton, QToolTip, QWidget

from mnnscope.gui.canvas import FIT_MIN_SCALE
from mnnscope.gui.labels import title_matches

# "node" (op type or node name) is the default: tensor names are shared by producer and consumers, so
# counting them found a Reshape for "MatMul" (it reads /MatMul_output_0); they are an explicit choice.
MODES = ("node", "name", "type", "tensor", "all")
MODE_LABELS = ("Op type or name", "Node name", "Op type", "Tensor name", "All (incl. tensors)")
OPEN_MAX = 400  # "Select all" opens the scopes holding at most this many matches; beyond, their boxes are outlined


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def find_ops(table, hidden, query: str, mode: str = "node", titles=None) -> np.ndarray:
    """Op indices matching `query` (case-insensitive substring; an op type matches exactly, and so does a
    node's title or its operation: "add" finds MNN's BinaryOp ADD too), in topological order. Hidden ops
    (MNN constants) count through the ops that read them. Mode "made": the ops that make a tensor of that name (the
    default's fallback, gui/search.SearchBar)."""
    q = query.strip().lower()
    n = table.node_count
    if not q or n == 0:
        return np.zeros(0, np.int64)
    hit = np.zeros(n, bool)
    if mode in ("all", "name", "node"):
        hit |= np.fromiter((q in (nm or nid).lower() for nm, nid in zip(table.names, table.ids)), bool, n)
    if mode in ("all", "type", "node"):
        hit |= np.fromiter((op.lower() == q for op in table.op_types), bool, n)
        if titles is not None:
            hit |= np.fromiter((title != op and title_matches(title, q) for op, title in zip(table.op_types, titles)),
                               bool, n)
    if mode in ("all", "tensor", "made"):
        tmatch = np.fromiter((q in t.lower() for t in table.tensor_names), bool, len(table.tensor_names))
        if tmatch.any():
            sides = ((table.out_ptr, table.out_idx),) if mode == "made" else \
                ((table.in_ptr, table.in_idx), (table.out_ptr, table.out_idx))
            for ptr, idx in sides:
                slot = np.zeros(len(idx), bool)
                ok = idx >= 0
                slot[ok] = tmatch[idx[ok]]
                owner = np.repeat(np.arange(n), np.diff(ptr))
                hit[owner[slot]] = True
    if hidden is not None and hidden.any() and (hit & hidden).any():
        for i in np.flatnonzero(hit & hidden).tolist():  # a constant: show who reads it
            for c in table.consumers_of(i):
                hit[c] = True
        hit &= ~hidden
    found = np.flatnonzero(hit)
    return found[np.argsort(table.rank[found], kind="stable")]


COMPACT_BELOW = 520  # px: a narrower search bar shortens its buttons
NO_MODE_BELOW = 440  # px: a narrower one leaves out the mode box (what to search), keeping room to type
# the count's width, one for each size of the bar: what these texts need (the count is cut after a whole word beyond)
COUNT_ROOM, COUNT_ROOM_COMPACT = "12,345 selected\u2026", "888 selected\u2026"


def words_that_fit(text: str, metrics, width: int) -> str:
    """`text` as far as its whole words fit in `width` px, "\u2026" after them ("85 selected\u2026"); cut anywhere
    where not even the first word fits."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    words = text.split(" ")
    for n in range(len(words) - 1, 0, -1):
        head = " ".join(words[:n]) + "\u2026"
        if metrics.horizontalAdvance(head) <= width:
            return head
    return metrics.elidedText(text, Qt.ElideRight, width)


class CountLabel(QLabel):
    """The match count at a width of its own, its text cut after the last whole word that fits and whole in the
    tooltip: "85 selected across the graph" after Select all took the room of the search field (and, side by side,
    left it 70 px: a new-user try at 1024x700)."""

    def shown_text(self) -> str:
        return words_that_fit(self.text(), self.fontMetrics(), self.contentsRect().width())

    def paintEvent(self, e) -> None:
        p = QPainter(self)
        self.style().drawItemText(p, self.contentsRect(), int(Qt.AlignLeft | Qt.AlignVCenter), self.palette(),
                                  self.isEnabled(), self.shown_text(), QPalette.WindowText)
        p.end()

    def event(self, e) -> bool:
        if e.type() == QEvent.ToolTip and not self.toolTip() and self.shown_text() != self.text():
            QToolTip.showText(e.globalPos(), self.text(), self)
            return True
        return super().event(e)


class SearchBar(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("SearchBar")
        self.view = None
        self.matches = np.zeros(0, np.int64)
        self.by_tensor = False  # the matches are the ops making a tensor of that name (nothing else matched)
        self.current = -1
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("Find op type or node name\u2026")
        self.edit.setClearButtonEnabled(True)
        self.mode = QComboBox(self)
        self.mode.addItems(list(MODE_LABELS))
        self.mode.setToolTip("What to search: op type or node name (default), or tensor names too")
        self.count = CountLabel("", self)
        # the bar takes the pane's width and never widens it: in a narrow side-by-side pane it pushed the divider
        # over and left the search field 55 px (second new-user tryout); there it goes compact (resizeEvent)
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self.mode.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.mode.setMinimumContentsLength(6)
        self.prev_btn = QToolButton(self)
        self.prev_btn.setText("\u25b2")
        self.prev_btn.setToolTip("Previous match (Shift+Enter, Shift+F3)")
        self.next_btn = QToolButton(self)
        self.next_btn.setText("\u25bc")
        self.next_btn.setToolTip("Next match (Enter, F3)")
        self.all_btn = QToolButton(self)
        self.all_btn.setText("Select all")
        self.all_btn.setToolTip("Select every match and fit them in view (Ctrl+Shift+A)")
        self.close_btn = QToolButton(self)
        self.close_btn.setText("\u2715")
        self.close_btn.setToolTip("Close (Esc)")
        for w in (self.edit, self.mode, self.count, self.prev_btn, self.next_btn, self.all_btn, self.close_btn):
            lay.addWidget(w, 1 if w is self.edit else 0)
        self.edit.textChanged.connect(self._changed)
        self.mode.currentIndexChanged.connect(self._changed)
        self.edit.returnPressed.connect(self.next)
        self.next_btn.clicked.connect(self.next)
        self.prev_btn.clicked.connect(self.previous)
        self.all_btn.clicked.connect(self.select_all)
        self.close_btn.clicked.connect(self.close_bar)
        # contexts set after construction: PySide6 drops QShortcut's context= with a callable, and window-wide keys
        # were ambiguous (so did nothing) with Find open in both side-by-side panes
        QShortcut(QKeySequence(Qt.Key_Escape), self, self.close_bar).setContext(Qt.WidgetWithChildrenShortcut)
        QShortcut(QKeySequence("Shift+Return"), self.edit, self.previous).setContext(Qt.WidgetShortcut)

    def resizeEvent(self, e) -> None:
        compact = e.size().width() < COMPACT_BELOW
        self.all_btn.setText("All" if compact else "Select all")
        # a width of its own, whatever it says: sized by its text, the count took the search field's room
        room = COUNT_ROOM_COMPACT if compact else COUNT_ROOM
        self.count.setFixedWidth(self.count.fontMetrics().horizontalAdvance(room))
        self.mode.setVisible(e.size().width() >= NO_MODE_BELOW)  # the default (op type or name) stays in force
        # room for the default's whole label ("Op type or r" at 1500 and 1024 wide: tryout 2026-12-04); compact,
        # the field keeps the room
        self.mode.setMinimumContentsLength(6 if compact else len(MODE_LABELS[0]))
        super().resizeEvent(e)

    def bind(self, view) -> None:
        self.view = view

    def focus(self) -> None:
        self.edit.setFocus()
        self.edit.selectAll()
        if self.edit.text().strip() and len(self.view.canvas.marked if self.view else ()) == 0:
            self._changed()  # reopened after a close: outline the matches of the text it still holds

    def reset(self) -> None:
        self.matches = np.zeros(0, np.int64)
        self.current = -1
        self.by_tensor = False
        self.count.setText("")
        self.count.setToolTip("")

    def new_model(self) -> None:
        """The view shows another model (its table, titles and hidden ops already set). An open bar searches
        it for the same text: it is open because the user is looking for something, and looking for it in the
        next model too (a model, then its conversion; the encoder, then the decoder) is what opening another
        model while Find is open usually means; the count and outlines are then the new model's, nothing of
        the previous one's. A closed bar forgets its text: reopened later it would re-run an old query
        (focus() re-runs the text it holds) on a model it was never asked about (tryout 8: "Erf" stayed)."""
        self.reset()
        if self.isHidden():
            self.edit.blockSignals(True)
            self.edit.clear()
            self.edit.blockSignals(False)
        elif self.edit.text().strip():
            self._changed()

    def set_query(self, text: str, mode: str = "node") -> None:
        self.mode.setCurrentIndex(MODES.index(mode))
        self.edit.setText(text)
        self._changed()

    def _changed(self, *_):
        v = self.view
        if v is None or v.table is None:
            return
        mode = MODES[self.mode.currentIndex()]
        self.matches = find_ops(v.table, v.tree.hidden, self.edit.text(), mode, v.titles)
        # nothing by op type or name: the ops that make a tensor so named (helper 113 searched "fetch_name_0", the
        # output, and "Add.151", the Profile's MNN op, which MNN names after the tensor it makes: "no matches")
        self.by_tensor = mode == "node" and len(self.matches) == 0 and bool(self.edit.text().strip())
        if self.by_tensor:
            self.matches = find_ops(v.table, v.tree.hidden, self.edit.text(), "made")
            self.by_tensor = len(self.matches) > 0
        self.count.setToolTip(f"No op type or node name holds \u201c{self.edit.text().strip()}\u201d: "
                              f"{plural(len(self.matches), 'op makes', 'ops make')} a tensor so named"
                              if self.by_tensor else "")
        self.current = -1
        self._show_count()
        v.canvas.set_marked(self.matches.tolist())  # every match outlined (collapsed scopes holding one too)
        if len(self.matches) == 1:  # the one match is shown at once ("1 match", and nothing moved until Return: a
            self._go(0)             # new-user try); with several, Return steps through them

    def _show_count(self) -> None:
        n = len(self.matches)
        if not self.edit.text().strip():
            self.count.setText("")
        elif n == 0:
            self.count.setText("no matches")
        elif self.current < 0:
            self.count.setText(f"{n:,} by tensor" if self.by_tensor else plural(n, "match", "matches"))
        else:
            self.count.setText(f"{self.current + 1:,} of {n:,}" + (" by tensor" if self.by_tensor else ""))

    def _go(self, k: int) -> None:
        if len(self.matches) == 0:
            return
        self.current = k % len(self.matches)
        self._show_count()
        self.view.reveal(int(self.matches[self.current]))

    def next(self) -> None:
        self._go(self.current + 1)

    def previous(self) -> None:
        self._go(self.current - 1 if self.current >= 0 else -1)

    def select_all(self) -> None:
        """Mark every match, open the scopes holding them (up to OPEN_MAX matches) and fit them in view."""
        v = self.view
        if v is None or v.tree is None:
            return
        items = self.matches.tolist()
        v.select_many(items)
        self.count.setText(f"{plural(len(items), 'match', 'matches')} selected" if items else "no matches")
        if not items:
            return
        need = set()
        if len(items) <= OPEN_MAX:
            for op in items:
                need.update(v.tree.node_ancestors(op))
        if need <= v.expanded and v.canvas.scene is not None:
            self.fit_marked()
        else:
            v.relayout(v.expanded | need, then=self.fit_marked)

    def fit_marked(self) -> None:
        """Fit the view to the marked items (or the collapsed boxes holding them), never below a readable zoom
        (FIT_MIN_SCALE): matches spread over a tall graph (13 Erf over 28,000 px) fitted as one thin unreadable
        line. Then the current match (else the first) is centred, and the count says they span the graph."""
        c = self.view.canvas
        sc = c.scene
        if sc is None or len(c.marked) == 0:
            return
        leaves = np.unique([c._leaf_showing(sc, int(i)) for i in c.marked.tolist()])
        leaves = leaves[leaves >= 0]
        if len(leaves) == 0:
            return
        x0, y0 = float(sc.x0[leaves].min()), float(sc.y0[leaves].min())
        x1, y1 = float(sc.x1[leaves].max()), float(sc.y1[leaves].max())
        m = 40.0
        W, H = max(1, c.width()), max(1, c.height())
        s = min((W - 2 * m) / max(1.0, x1 - x0), (H - 2 * m) / max(1.0, y1 - y0), 1.0)
        if s >= FIT_MIN_SCALE:
            c.set_view(s, W / 2 - s * (x0 + x1) / 2, H / 2 - s * (y0 + y1) / 2)
            return
        n = len(c.marked)
        if self.current < 0 and len(self.matches):
            self.current = 0  # the one shown: the arrows step on from it
        op = int(self.matches[self.current]) if 0 <= self.current < len(self.matches) else int(c.marked[0])
        lf = c._leaf_showing(sc, op)
        lf = lf if lf >= 0 else int(leaves[0])
        c.center_on((sc.x0[lf] + sc.x1[lf]) / 2, (sc.y0[lf] + sc.y1[lf]) / 2, FIT_MIN_SCALE)
        self.count.setText(f"{n:,} selected across the graph")
        say = (f"{plural(n, 'match', 'matches')} selected: they span more of the graph than fits at a readable "
               f"size; showing match {self.current + 1 if self.current >= 0 else 1}, \u25b2 \u25bc step through them")
        self.count.setToolTip(say)
        self.view.said.emit(say)

    def close_bar(self) -> None:
        self.hide()
        if self.view is not None:
            self.view.canvas.set_marked([])
            if self.view.selected_many:  # Properties listed "88 ops selected" with no outline left on the graph
                self.view.select(-1)       # (tryout 2026-12-04)
            self.view.canvas.setFocus()
            self.view.minimap._place()
