"""What an overlay on the graph means: a legend (colour ramp, range, what was placed) in the canvas's corner,
and callouts naming the hottest boxes on screen (a collapsed scope counts the sum of what it holds).

Both are children of a GraphView's canvas, drawn over it and transparent to the mouse; they read the view's
overlay (GraphView.set_overlay) and repaint with the canvas.
"""
from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QObject, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QLinearGradient, QPainter, QPen
from PySide6.QtWidgets import QWidget

from mnnscope.inspector.model.layout import FRAME_HEAD

from mnnscope.gui.minimap import graph_under

LEGEND_FADED = 0.5  # the legend's opacity over the graph: its range stays legible, what lies under it shows through
SUM_MARK = "\u03a3 "  # before a collapsed scope's value: the sum of its ops'


def fmt_value(v: float, unit: str) -> str:
    """A value as the legend and the callouts write it."""
    if v is None or not math.isfinite(v):
        return str(v)
    if unit == "%":
        return f"{v * 100:.1f}%"
    if v == 0:   # (a time of 0: "0 µs", as the small times beside it; "0 ms" beside "1.4 µs" read as two units)
        return "0 \u00b5s" if unit == "ms" else f"0 {unit}".strip()
    if unit == "ms" and abs(v) < 0.1:
        return f"{v * 1000:.1f} \u00b5s"
    if unit == "ms":
        return f"{v:.3f} ms" if abs(v) < 1 else (f"{v:.2f} ms" if abs(v) < 100 else f"{v:.0f} ms")
    if unit:
        return f"{v:.3g} {unit}"
    return f"{v:.3g}"


def fmt_ends(lo: float, hi: float, unit: str) -> tuple[str, str]:
    """A range's two ends as the legend writes them: a zero end takes no unit of its own, so a time range reads
    "0 – 20.8 µs", not "0 ms – 20.8 µs" (a screenshot at 1024x700 read two units on one ramp)."""
    a, b = fmt_value(lo, unit), fmt_value(hi, unit)
    if lo == 0 and unit != "%" and hi != 0:
        a = "0"
    return a, b


def leaf_values(view) -> dict[int, float]:
    """Overlay value per drawn leaf of `view` (a GraphView): an op's own value, a collapsed scope's the
    overlay's combination (sum for times) of the ops inside it."""
    return leaf_values_detail(view)[0]


def leaf_values_detail(view) -> tuple[dict[int, float], set[int]]:
    """leaf_values, and the leaves whose every op with a value is one of an error overlay's harmless ops (painted
    amber: GraphView._apply_overlay). Harmless ops count in a collapsed scope only where nothing else in it has a
    value: the scope is painted by its other ops, and its number must be theirs."""
    sc, ov = view.canvas.scene, view.overlay
    if sc is None or ov is None:
        return {}, set()
    per: dict[int, list] = {}
    rep = sc.vg.rep
    harmless = view._harmless_ops() if hasattr(view, "_harmless_ops") else set()
    for op, v in view._overlay_values.items():
        r = int(rep[op]) if op < len(rep) else -1
        lf = int(sc.leaf_of_item[r]) if r >= 0 else -1
        if lf >= 0:
            per.setdefault(lf, []).append((v, op in harmless))
    out, amber = {}, set()
    for lf, pairs in per.items():
        vals = [v for v, h in pairs if not h]
        if not vals:
            amber.add(lf)
            vals = [v for v, _ in pairs]
        out[lf] = vals[0] if len(vals) == 1 else ov.combine(vals)
    return out, amber


class _CanvasOverlay(QWidget):
    """A transparent child of a canvas that follows its size and repaints with it."""

    def __init__(self, view):
        super().__init__(view.canvas)
        self.view = view
        self.setAttribute(Qt.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WA_NoSystemBackground)
        self._follow = _Follower(self)
        view.canvas.installEventFilter(self._follow)
        view.canvas.view_changed.connect(self.update)

    def place(self) -> None:
        self.setGeometry(self.view.canvas.rect())

    def bring_up(self) -> None:
        """Placed on its canvas, shown above it and repainted (after its owner or texts changed)."""
        self.place()
        self.show()
        self.raise_()
        self.update()


class _Follower(QObject):
    def __init__(self, target: _CanvasOverlay):
        super().__init__(target)
        self.target = target

    def eventFilter(self, obj, e) -> bool:
        if e.type() == QEvent.Resize:
            self.target.place()
        return False


class HotLabels(_CanvasOverlay):
    """Callouts on the `count` hottest boxes in view: rank and value (share of the measured time too)."""

    def __init__(self, view, count: int = 5):
        super().__init__(view)
        self.owner = None   # the Overlay these callouts describe: over any other colouring they stay hidden
        self.count = count
        self.unit = "ms"
        self.total: float | None = None   # the measured time, for "(41%)"
        self._cache_key = None
        self._hot: list[tuple[int, float]] = []
        self.font = QFont()
        self.font.setPixelSize(11)
        self.font.setBold(True)
        self.place()

    def hottest(self) -> list[tuple[int, float]]:
        """[(leaf, value)] of the hottest drawn boxes, hottest first."""
        sc, ov = self.view.canvas.scene, self.view.overlay
        key = (id(sc), id(ov), len(self.view._overlay_values))
        if key != self._cache_key:
            vals = leaf_values(self.view)
            finite = [(lf, v) for lf, v in vals.items() if math.isfinite(v) and v > 0]
            # equal values in graph order, as the Profile dock's By node table ranks them (MNN times a whole number
            # of microseconds: helper 112 read "#5" on /Gemm_1, 4th in the table, tied with /Gemm_2)
            leaves = sc.vg.leaves
            self._hot = sorted(finite, key=lambda kv: (-kv[1], int(leaves[kv[0]])))[: self.count]
            self._cache_key = key
        return self._hot

    def labels(self) -> list[dict]:
        """What the callouts say: [{leaf, item, text}] (tests and the headless twin read it)."""
        sc = self.view.canvas.scene
        out = []
        tree, ov = self.view.tree, self.view.overlay
        for rank, (lf, v) in enumerate(self.hottest(), 1):
            # a collapsed scope's value is its ops' sum: marked, since it may lie above the legend's range (the ops'
            # own values; tryout 14 read "0.367 ms" on the encoder's box beside a legend ending at 0.165 ms)
            box = tree is not None and int(sc.vg.leaves[lf]) >= tree.n_ops and getattr(ov, "aggregate", "") == "sum"
            text = f"#{rank} {SUM_MARK if box else ''}{fmt_value(v, self.unit)}"
            if self.total and self.unit == "ms":
                text += f" ({v / self.total * 100:.0f}%)"
            out.append({"leaf": lf, "item": int(sc.vg.leaves[lf]), "text": text})
        return out

    def rects(self) -> list[tuple[dict, QRectF, QPointF]]:
        """Where the callouts go on the canvas: [(label, its rectangle, the box corner it points at)], hottest
        first. Each sits over its box's top right; one that would cover a callout placed before it moves up
        above that one (after Fit, "#5" was drawn over "#4" and "#2" over "#1", both unreadable)."""
        c = self.view.canvas
        sc = c.scene
        fm = QFontMetricsF(self.font)
        out: list[tuple[dict, QRectF, QPointF]] = []
        for lab in self.labels():
            lf = lab["leaf"]
            x = float(sc.x1[lf]) * c.scale + c.tx
            y = float(sc.y0[lf]) * c.scale + c.ty
            w = fm.horizontalAdvance(lab["text"]) + 10
            h = fm.height() + 4
            r = QRectF(x - w * 0.6, y - h - 2, w, h)
            if r.right() > self.width() - 2 >= x:  # past the pane's right edge: moved in, still over its box
                r.moveRight(self.width() - 2.0)
            for _ in range(64):  # each move goes up past what it hit: another callout or a frame's title bar
                hit = self._hits(r, out)
                if not hit:
                    break
                r.moveBottom(min(q.top() for q in hit) - 2)
            corner = self._minimap_rect()
            if corner is not None and corner.intersects(r):  # under the minimap ("#1 Σ 0.190 ms (34%" was cut
                # there, tryout 66): left of it, on the box's line, moving down past what it hits
                r.moveRight(corner.left() - 4)
                r.moveBottom(y - 2)
                for _ in range(64):
                    hit = self._hits(r, out)
                    if not hit:
                        break
                    r.moveTop(max(q.bottom() for q in hit) + 2)
            if r.top() < 0 <= y:  # above the pane: a box at its top edge (a tall graph fitted) gets it below its
                # top instead, moving down past what it hits ("#1" was out of sight above a fitted captcha_crnn)
                r.moveTop(y + 2)
                if corner is not None and corner.intersects(r):  # and left of the minimap when down there (a box
                    # under its frame's title bar: its callout went up past the bar, then down under the minimap)
                    r.moveRight(corner.left() - 4)
                for _ in range(64):
                    hit = self._hits(r, out)
                    if not hit:
                        break
                    r.moveTop(max(q.bottom() for q in hit) + 2)
            out.append((lab, r, QPointF(x, y)))
        return out

    def shown(self) -> list[tuple[dict, QRectF, QPointF]]:
        """The callouts drawn: those in the pane whose box is at least partly in it. One of a box below the pane's
        bottom edge was moved up into view onto the box above and read as that box's ("#3 3.0 µs" of MaxPool on the
        Relu box, cnn profiled from /relu/Relu at 1024x700, a new-user try)."""
        c = self.view.canvas
        sc = c.scene
        out = []
        for lab, r, corner in self.rects():
            lf = lab["leaf"]
            bx0, by0 = float(sc.x0[lf]) * c.scale + c.tx, float(sc.y0[lf]) * c.scale + c.ty
            bx1, by1 = float(sc.x1[lf]) * c.scale + c.tx, float(sc.y1[lf]) * c.scale + c.ty
            if bx1 < 0 or bx0 > self.width() or by1 < 0 or by0 >= self.height():
                continue
            if not (r.right() < 0 or r.left() > self.width() or r.bottom() < 0 or r.top() > self.height()):
                out.append((lab, r, corner))
        return out

    def _minimap_rect(self) -> QRectF | None:
        """The minimap's rectangle on the canvas where it is shown, else None."""
        mm = getattr(self.view, "minimap", None)
        if mm is None or not mm.isVisible():
            return None
        top_left = self.view.canvas.mapFrom(mm.parentWidget(), mm.geometry().topLeft())
        return QRectF(top_left.x() - 2, top_left.y() - 2, mm.width() + 4, mm.height() + 4)

    def _hits(self, r: QRectF, placed: list) -> list[QRectF]:
        """What callout rectangle `r` would cover: a callout placed before it, a frame's title bar, or the legend
        (after a fit "#2 74.0 µs (4%)" sat on the legend's range, a new-user try)."""
        return [q for _, q, _ in placed if q.intersects(r)] + [q for q in self._title_bars(r) if q.intersects(r)] \
            + [q for q in self._legends() if q.intersects(r)]

    def _legends(self) -> list[QRectF]:
        """The shown legends' rectangles on the canvas (siblings of these callouts)."""
        return [QRectF(w.geometry()) for w in self.view.canvas.children()
                if isinstance(w, Legend) and w.isVisible()]

    def _title_bars(self, r: QRectF) -> list[QRectF]:
        """The title bars (name and collapse glyph) of the frames near `r`, on the canvas: a callout over an op at
        the top of a frame covered its frame's title and (-) button (tryout 2026-12-04)."""
        c = self.view.canvas
        sc = c.scene
        x0, y0 = (r.left() - c.tx) / c.scale, (r.top() - c.ty) / c.scale
        x1, y1 = (r.right() - c.tx) / c.scale, (r.bottom() - c.ty) / c.scale
        out = []
        for f in sc.frames_in(x0, y0, x1, y1).tolist():  # a title bar lies inside its frame's box
            bx0, by0, bx1, _ = (float(v) for v in sc.frame_box[f])
            out.append(QRectF(bx0 * c.scale + c.tx, by0 * c.scale + c.ty, (bx1 - bx0) * c.scale, FRAME_HEAD * c.scale))
        return out

    def paintEvent(self, e) -> None:
        c = self.view.canvas
        sc = c.scene
        if sc is None or self.view.overlay is None or not self.isVisible() or self.view.overlay is not self.owner:
            return
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing, True)
        p.setFont(self.font)
        shown = self.shown()
        p.setPen(QPen(QColor("#7a0c0c"), 1))
        for _, r, corner in shown:  # moved up past another callout: a line down to its box, under every callout
            if r.bottom() < corner.y() - 4:
                p.drawLine(QPointF(min(max(corner.x(), r.left() + 4), r.right() - 4), r.bottom()), corner)
        for lab, r, corner in shown:
            p.setPen(QPen(QColor("#7a0c0c"), 1))
            p.setBrush(QColor(255, 255, 255, 235))
            p.drawRoundedRect(r, 4, 4)
            p.setPen(QColor("#7a0c0c"))
            p.drawText(r, Qt.AlignCenter, lab["text"])
        p.end()


class Legend(_CanvasOverlay):
    """The overlay's colour ramp with its range, its title, and a line saying what share was placed."""

    W, H = 250, 64

    def __init__(self, view):
        super().__init__(view)
        self.owner = None   # the Overlay this legend describes: over another dock's colouring it stays hidden
        self.title = ""
        self.unit = ""
        self.note = ""
        self.font = QFont()
        self.font.setPixelSize(11)
        self.hovered = False  # the pointer over it (it is transparent to the mouse: the canvas's moves tell)
        self._pointer = _PointerWatch(self)
        view.canvas.installEventFilter(self._pointer)
        self.place()

    def covers_graph(self) -> bool:
        """Whether nodes or frame titles lie under the legend: then it fades, as the minimap does, until the pointer
        comes onto it (over a short pane it hid the "query" and "key" scope titles: a new-user try at 1024x700)."""
        return self.isVisible() and graph_under(self.view.canvas, QRectF(self.geometry()))

    def faded(self) -> bool:
        return not self.hovered and self.covers_graph()

    SHORT_BELOW, COMPACT_H = 400, 32  # a graph shorter than this gets the two-line legend (no note)

    corner = "left"   # the bottom corner it sits in (pick_corner)

    def _rect(self, corner: str) -> QRect:
        c = self.view.canvas
        h = self.COMPACT_H if c.height() < self.SHORT_BELOW else self.H
        x = 10 if corner == "left" else max(10, c.width() - self.W - 10)
        return QRect(x, max(0, c.height() - h - 10), self.W, h)

    def place(self) -> None:
        """Bottom left (or right: pick_corner); over a short graph (a 1024x700 window with a dock open: ~200 px) in
        two lines, 32 px instead of 64 (it covered a third of the graph; the note is in the dock that made the
        overlay)."""
        self.setGeometry(self._rect(self.corner))

    def pick_corner(self) -> None:
        """As its overlay comes up: the bottom right where the bottom left would cover nodes and the right would
        not (a graph fitted to the left of a wide pane had its legend over "avgpool" and "Concat": a new-user try).
        Kept while the view moves (a legend that jumped corners under the pointer would be harder to read); it
        fades where it still covers nodes."""
        c = self.view.canvas
        left, right = self._rect("left"), self._rect("right")
        if right.left() > left.right() and graph_under(c, QRectF(left)) and not graph_under(c, QRectF(right)):
            self.corner = "right"
        else:
            self.corner = "left"
        self.place()

    def bring_up(self) -> None:
        self.pick_corner()
        super().bring_up()

    @property
    def compact(self) -> bool:
        return self.height() < self.H

    def text(self) -> str:
        """The legend as text: title, range and note (tests and the headless twin read it)."""
        ov = self.view.overlay
        if ov is None:
            return ""
        lo, hi = fmt_ends(ov.scale.vmin, ov.scale.vmax, self.unit)
        return f"{self.title}: {lo} \u2013 {hi}" + (f" \u00b7 {self.note}" if self.note else "")

    @staticmethod
    def _ramp(p: QPainter, bar: QRectF, ov) -> None:
        g = QLinearGradient(bar.left(), 0, bar.right(), 0)
        for stop in ov.scale.gradient():
            g.setColorAt(stop["stop"], QColor(stop["bgColor"]))
        p.setPen(Qt.NoPen)
        p.setBrush(g)
        p.drawRect(bar)

    def paintEvent(self, e) -> None:
        ov = self.view.overlay
        if ov is None or ov is not self.owner:
            return
        p = QPainter(self)
        if self.faded():
            p.setOpacity(LEGEND_FADED)
        self.draw(p, self.compact)
        p.end()

    def draw(self, p: QPainter, compact: bool) -> None:
        paint_legend(p, self.view.overlay, self.title, self.unit, self.note, compact, self.font, self.W)


class _PointerWatch(QObject):
    """Tells a legend whether the pointer, moving over its canvas, is on it."""

    def __init__(self, legend: Legend):
        super().__init__(legend)
        self.legend = legend

    def eventFilter(self, obj, e) -> bool:
        t = e.type()
        if t in (QEvent.MouseMove, QEvent.Leave):
            lg = self.legend
            on = t == QEvent.MouseMove and lg.geometry().contains(e.position().toPoint())
            if on != lg.hovered:
                lg.hovered = on
                lg.update()
        return False


def paint_legend(p: QPainter, ov, title: str, unit: str, note: str = "", compact: bool = False,
                 font: QFont | None = None, W: float = 250) -> None:
    """A legend of overlay `ov` at the painter's origin, W wide: on the Legend widget, and under the graph in an
    exported image (full size there: tryout 11's whole-graph PNG had colours and no word of what they meant)."""
    if font is None:
        font = QFont()
        font.setPixelSize(11)
    h = Legend.COMPACT_H if compact else Legend.H
    p.save()
    p.setRenderHint(QPainter.Antialiasing, True)
    p.setPen(QPen(QColor("#9aa3b0"), 1))
    p.setBrush(QColor(255, 255, 255, 235))
    p.drawRoundedRect(QRectF(0.5, 0.5, W - 1, h - 1), 6, 6)
    p.setFont(font)
    p.setPen(QColor("#1d2430"))
    title = title + ("  (log scale)" if ov.scale.log else "")
    if compact:  # title and range on one line, the ramp under it
        fm = QFontMetricsF(font)
        span = "{} \u2013 {}".format(*fmt_ends(ov.scale.vmin, ov.scale.vmax, unit))
        room = W - 16 - fm.horizontalAdvance(span) - 8
        p.drawText(QRectF(8, 2, room, 15), Qt.AlignLeft | Qt.AlignVCenter,
                   fm.elidedText(title, Qt.ElideRight, room))
        p.drawText(QRectF(8, 2, W - 16, 15), Qt.AlignRight | Qt.AlignVCenter, span)
        Legend._ramp(p, QRectF(8, 19, W - 16, 8), ov)
        p.restore()
        return
    p.drawText(QRectF(8, 3, W - 16, 16), Qt.AlignLeft | Qt.AlignVCenter, title)
    Legend._ramp(p, QRectF(8, 22, W - 16, 10), ov)
    p.setPen(QColor("#1d2430"))
    lo, hi = fmt_ends(ov.scale.vmin, ov.scale.vmax, unit)
    p.drawText(QRectF(8, 33, W / 2, 14), Qt.AlignLeft | Qt.AlignVCenter, lo)
    p.drawText(QRectF(W / 2, 33, W / 2 - 8, 14), Qt.AlignRight | Qt.AlignVCenter, hi)
    if note:
        p.setPen(QColor("#6b7380"))
        p.drawText(QRectF(8, 47, W - 16, 14), Qt.AlignLeft | Qt.AlignVCenter,
                   QFontMetricsF(font).elidedText(note, Qt.ElideRight, W - 16))
    p.restore()
