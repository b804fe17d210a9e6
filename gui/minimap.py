"""The minimap: the whole graph in miniature beside the canvas, the visible part outlined."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QWidget

from mnnscope.inspector.model.layout import FRAME_HEAD

from mnnscope.gui.canvas import GraphCanvas
from mnnscope.gui.paths import path_from_elements, rect_elements
from mnnscope.gui.scene import SCOPE_CATEGORY
from mnnscope.gui.theme import CATEGORIES

FADED = 0.3  # the minimap's opacity while the graph lies under it and the pointer is elsewhere
VIEW_FADED = 0.85  # its outline of the visible part's then


def graph_under(canvas: GraphCanvas, r: QRectF) -> bool:
    """Whether nodes or frame titles of the canvas's graph lie under `r` (canvas coordinates): what an overlay
    drawn there (the minimap, the legend) hides."""
    sc = canvas.scene
    if sc is None:
        return False
    x0, y0 = canvas.to_scene(r.topLeft())
    x1, y1 = canvas.to_scene(r.bottomRight())
    if len(sc.leaves_in(x0, y0, x1, y1)):
        return True
    f = sc.frames_in(x0, y0, x1, y1)
    return bool(len(f)) and bool(((sc.frame_box[f, 1] + FRAME_HEAD >= y0) & (sc.frame_box[f, 1] <= y1)).any())


class Minimap(QWidget):
    """The graph in miniature with the visible part outlined; click or drag to go there. A graph too tall
    to show whole (a sliver) is shown at the minimap's width around the visible part instead."""

    def __init__(self, canvas: GraphCanvas, parent=None):
        super().__init__(parent)
        self.canvas = canvas
        self.hovered = False
        self.setCursor(Qt.PointingHandCursor)
        canvas.view_changed.connect(self._place)

    def covers_graph(self) -> bool:
        """Whether nodes or frame titles of the graph lie under the minimap (then it fades, so that what is
        under it shows through, until the pointer comes onto it: it hid nodes and a frame's collapse glyph)."""
        if self.canvas.scene is None or not self.isVisible():
            return False
        g, par = self.geometry(), self.parentWidget()
        tl, br = self.canvas.mapFrom(par, g.topLeft()), self.canvas.mapFrom(par, g.bottomRight())
        return graph_under(self.canvas, QRectF(QPointF(tl), QPointF(br)))

    def faded(self) -> bool:
        return not self.hovered and self.covers_graph()

    def enterEvent(self, e) -> None:
        self.hovered = True
        self.update()

    def leaveEvent(self, e) -> None:
        self.hovered = False
        self.update()

    def _transform(self):
        """(k, ox, oy): minimap point = (scene - origin) * k + offset, as a function of the current view."""
        sc = self.canvas.scene
        x0, y0, x1, y1 = sc.bounds
        W, H = self.width() - 8.0, self.height() - 8.0
        gw, gh = max(1.0, x1 - x0), max(1.0, y1 - y0)
        k = min(W / gw, H / gh)
        if gw * k < W / 4:  # a sliver: a few screens' worth around the view, following it vertically
            k = min(W / gw, self.canvas.scale / 6.0)
            vx0, vy0, vx1, vy1 = self.canvas.view_rect()
            cy = min(max((vy0 + vy1) / 2, y0 + H / k / 2), y1 - H / k / 2) if gh * k > H else (y0 + y1) / 2
            return k, 4.0 + (W - gw * k) / 2 - x0 * k, 4.0 + H / 2 - cy * k
        return k, 4.0 + (W - gw * k) / 2 - x0 * k, 4.0 + (H - gh * k) / 2 - y0 * k

    def _place(self) -> None:
        par = self.parentWidget()
        if par is not None:
            # at most a quarter of the pane's width and of its height (176 x 220 on a wide one): a narrow
            # side-by-side pane keeps most of itself for the graph; one too small for a useful map shows none
            w, h = min(176, par.width() // 4), min(220, par.height() // 4)
            self.setGeometry(par.width() - w - 8, 8 + self._top_offset(), w, h)
            enabled = w >= 60 and h >= 50 and getattr(par, "minimap_enabled", True)
            self.canvas.right_reserve = float(w + 16) if enabled else 0.0  # a fit keeps the graph clear of it
            self.canvas.top_reserve = float(8 + self._top_offset() + h + 8) if enabled else 0.0
            sc = self.canvas.scene
            visible = False
            if sc is not None and enabled:  # the view's switch
                vx0, vy0, vx1, vy1 = self.canvas.view_rect()
                x0, y0, x1, y1 = sc.bounds
                visible = not (vx0 <= x0 and vy0 <= y0 and vx1 >= x1 and vy1 >= y1)
            self.setVisible(visible)  # nothing to navigate when all of it is in view
        self.update()

    def _top_offset(self) -> int:
        bar = getattr(self.parentWidget(), "search_bar", None)
        return bar.height() if bar is not None and bar.isVisible() else 0

    def paintEvent(self, e) -> None:
        p = QPainter(self)
        pal = self.canvas.pal
        faded = self.faded()  # (what lies under it: asked once a paint)
        if faded:
            p.setOpacity(FADED)
        p.setPen(QPen(QColor(pal.frame_border), 1))
        p.setBrush(QColor(pal.minimap_bg))
        p.drawRoundedRect(QRectF(0.5, 0.5, self.width() - 1, self.height() - 1), 6, 6)
        sc = self.canvas.scene
        if sc is None:
            return
        k, ox, oy = self._transform()
        p.setClipRect(QRectF(1, 1, self.width() - 2, self.height() - 2))
        # what falls inside the minimap, drawn as plain rectangles
        sx0, sy0 = (0 - ox) / k, (0 - oy) / k
        sx1, sy1 = (self.width() - ox) / k, (self.height() - oy) / k
        p.translate(ox, oy)
        p.scale(k, k)
        frames = sc.frames_in(sx0, sy0, sx1, sy1)
        if len(frames):
            b = sc.frame_box[frames]
            p.setPen(Qt.NoPen)
            p.setBrush(QColor(pal.frame_fill[1]))
            p.drawPath(path_from_elements(*rect_elements(b[:, 0], b[:, 1], b[:, 2], b[:, 3])))
        leaves = sc.leaves_in(sx0, sy0, sx1, sy1)
        cats = sc.cat[leaves]
        for c in np.unique(cats):
            ids = leaves[cats == c]
            p.setBrush(QColor(pal.categories[CATEGORIES[c]] if c != SCOPE_CATEGORY else pal.box_border))
            p.drawPath(path_from_elements(*rect_elements(sc.x0[ids], sc.y0[ids], sc.x1[ids], sc.y1[ids])))
        p.resetTransform()
        p.setOpacity(VIEW_FADED if faded else 1.0)  # where the view is stays plain (faded as a whole, a
        # narrow pane's map "stopped working as a map": helper 79's try); a thin line hides little of what is under it
        p.setBrush(Qt.NoBrush)
        p.setPen(QPen(QColor(pal.viewport), 1.5))
        p.drawRect(self.view_box())

    def view_box(self) -> QRectF:
        """The outline of the canvas's visible part on the minimap (its own coordinates), cut to its inside."""
        k, ox, oy = self._transform()
        vx0, vy0, vx1, vy1 = self.canvas.view_rect()
        r = QRectF(vx0 * k + ox, vy0 * k + oy, max(3.0, (vx1 - vx0) * k), max(3.0, (vy1 - vy0) * k))
        return r.intersected(QRectF(self.rect()).adjusted(1, 1, -1, -1))

    def _go(self, pos: QPointF) -> None:
        if self.canvas.scene is None:
            return
        k, ox, oy = self._transform()
        self.canvas.center_on((pos.x() - ox) / k, (pos.y() - oy) / k)

    def mousePressEvent(self, e) -> None:
        self._go(e.position())

    def mouseMoveEvent(self, e) -> None:
        if e.buttons() & Qt.LeftButton:
            self._go(e.position())
