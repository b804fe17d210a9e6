"""The graph canvas: draws a Scene with a handful of batched paths, pans, zooms, hit-tests.

Nothing here is one object per node. Per frame the canvas culls the scene to a padded view rectangle
(searchsorted on y, masks on x), turns the survivors into one path per node colour, one for edges and
one for arrow heads (gui.paths builds them from numpy), and reuses those paths while the view stays
inside the padded rectangle. Text is drawn only when it is large enough to read and only for what is in
view; far out, a pre-rendered overview image stands in for the whole graph.

Why one module past 400 lines: painting, culling, hit tests and pan/zoom share the per-frame caches (the
culled index arrays, the cached paths and the padded view rectangle) and the level-of-detail thresholds
above; split apart, each half would reach into the other's state every frame.
"""
from __future__ import annotations

import re

import time

import numpy as np
import numpy.ma  # noqa: F401  numpy 2 imports it on the first np.unique: 0.2-0.9 s on the UI thread at first paint
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QImage, QPainter, QPainterPath, QPen, QStaticText
from PySide6.QtWidgets import QToolTip, QWidget

from mnnscope.inspector.model.dimexpr import concrete, eval_dim, is_symbolic, simplify
from mnnscope.inspector.model.labelroom import free_spot
from mnnscope.inspector.model.overlay import text_colour
from mnnscope.gui import qtguard  # noqa: F401  (before anything is drawn: see qtguard)
from mnnscope.gui.paths import arrow_elements, path_from_elements, pick, rect_elements, rounded_rect_elements
from mnnscope.gui.scene import GLYPH, SCOPE_CATEGORY, Scene
from mnnscope.gui.theme import CATEGORIES, LIGHT, Palette

TEXT_MIN_PX = 5.0      # smallest on-screen font size worth drawing
TITLE_SCALE = TEXT_MIN_PX / 12.0  # below this zoom the 12 px node titles are not drawn
DETAIL_SCALE = 1.6     # zoom at which names and shapes appear inside nodes
EDGE_LABEL_SCALE = 0.9
EDGE_LABELS_MAX = 600  # more tensor labels than this in view: none are written (too many to read)
MAX_TEXT_ITEMS = 2500
FAILED = "#d64545"  # a failed conversion's ops (the Convert dock's red for them)
MIN_SCALE, MAX_SCALE = 1e-4, 8.0
MAX_OVERVIEW_TITLES = 150  # scope names written zoomed out, at most
SHORT_NAME_SCALE = 0.7  # zoom from which an op shows, under its title, the short name that tells it apart
READABLE_SCALE = 0.75  # a fit below this that leaves most of the width empty fits the width instead
FIT_MIN_SCALE = 0.6  # a fit shows the whole graph down to this zoom (titles of 7 px); below, a readable part


LONG_DIM = 12  # a dim name longer than this (or an expression) reads as its number where the input sizes give one
# names made up for sizes that could not be computed: onnx shape inference's ("ConvTranspose_459_o0__d0", "unk__7") and
# the PyTorch exporter's, op type then output name ("Concathidden_out_dim_2": the romanizer decoder's hidden_out read
# "batch\u00d72\u00d7Concathidden_out_dim_2" in Properties, helper 111)
INVENTED_DIM = re.compile(r"(_o\d+__d\d+|^unk__\d+|^[A-Z][A-Za-z]+\w*_dim_\d+)$")


def fmt_shape(shape, compact: bool = False, values: dict | None = None) -> str:
    """A shape as 1\u00d73\u00d7224\u00d7224; a dimension that is an expression in brackets, so it reads as one dimension
    (N\u00d724\u00d7(floor(H/2 - 1/2) + 1)); compact: only numbers and names of up to 6 characters, the rest '?' (what
    a label cut short keeps: the channel counts, not the start of a long symbol). With `values` (the sizes the
    inputs run at: {name: size}) an expression or a name longer than LONG_DIM (6 compact) is the number it is there
    (PP-OCRv6's labels read "?\u00d724\u00d724\u00d7?" cut short and a 60-character expression whole); short names
    stay names (the residual stream's batch\u00d7seq\u00d764 is followed by them)."""
    if shape is None:
        return "?"
    if len(shape) == 0:
        return "scalar"
    out = []
    for d in shape:
        if d is None or (isinstance(d, int) and d < 0):
            out.append("?")
            continue
        d = str(d)
        if any(c in d for c in " +-*/"):
            d = simplify(d)  # "(floor(floor(H/2 - 1/2)/2) + 1)" is ceil(H/4)
        expr = any(c in d for c in " +-*/") and not (d.startswith("(") and d.endswith(")"))
        # a name shape inference made up for a size it could not compute says nothing: "?" (Properties gave PP-OCRv6
        # det's output as "(ConvTranspose_459_o0__d0x..._d1x...)", its channel count of 1 a symbol too: helper 110)
        invented = bool(INVENTED_DIM.search(d))
        if (expr or invented or len(d) > (6 if compact else LONG_DIM)) and not d.isdigit():
            v = eval_dim(d, values) if values else None
            if v is not None:  # "DynamicDimension.0x48x24x(floor(DynamicDimension.1/2 - 1/2) + 1)" is 1x48x24x32 here
                d = str(v)
            elif compact or invented:
                # a name shape inference made up for a size it could not work out ("ConvTranspose_453_o0__d0",
                # "unk__7") says nothing more than "?" (tryout 18: labels of 80 characters on PP-OCRv6 det)
                d = "?"
            elif expr:
                d = _bracketed(d)
        elif expr:
            d = _bracketed(d)
        out.append(d)
    return "\u00d7".join(out)


_CALL = re.compile(r"^[A-Za-z_]\w*\((.*)\)$")


def _bracketed(d: str) -> str:
    """An expression as one dimension of a shape: in brackets unless it is a call whose brackets hold all of it
    ("ceil(H/16)", not "(ceil(H/16))"; "(ceil(H/2) - 3)")."""
    m = _CALL.match(d)
    if m is not None:
        depth = 0
        for c in m.group(1):
            depth += {"(": 1, ")": -1}.get(c, 0)
            if depth < 0:
                break
        else:
            if depth == 0:
                return d
    return d if not any(c in d for c in " +-*/") else f"({d})"


def at_sizes(shape, values: dict | None) -> str:
    """" = 1\u00d748\u00d724\u00d724 at the input sizes" for a symbolic shape the sizes make concrete, else ""."""
    if not values or not is_symbolic(shape):
        return ""
    got = concrete(shape, values)
    return f" = {fmt_shape(got)} at the input sizes" if got is not None else ""


class GraphCanvas(QWidget):
    item_clicked = Signal(int)     # item id, -1 for the background
    item_activated = Signal(int)   # double click or Enter on an item
    frame_clicked = Signal(int)    # scope id of a frame whose title was clicked
    frame_toggled = Signal(int)    # scope id of a frame whose collapse glyph was clicked
    navigate = Signal(str)         # producer / consumer / left / right
    view_changed = Signal()
    painted = Signal(float)        # milliseconds the last paint took

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.StrongFocus)
        self.setMouseTracking(True)
        self.setAttribute(Qt.WA_OpaquePaintEvent)
        self.scene: Scene | None = None
        self.pal: Palette = LIGHT
        self.scale, self.tx, self.ty = 1.0, 0.0, 0.0
        self.selected = -1
        self.marked = np.zeros(0, np.int64)      # item ids highlighted by search / select all
        self.failed = np.zeros(0, np.int64)      # ops a failed conversion names: drawn red until the next conversion
        self.marked_boxes = np.zeros(0, np.int64)
        self.fill_override: dict[int, str] = {}  # leaf -> colour (overlays)
        # {dimension name: size} at the Inputs dock's sizes: labels cut short show the number a long symbolic dim is
        self.dim_values: dict = {}
        # {tensor: shape} an .mnn input with free (-1) dims has at the sizes MNN computed its shapes at: drawn so
        # ("1\u00d7?\u00d764" beside its consumer's 1\u00d78\u00d764 read as a mismatch: helper 79's try), the file's
        # own shape in the tooltip
        self.input_at: tuple = (None, {})  # (the table it is for, {tensor: shape}): another model's counts for nothing
        self.value_text = None  # item -> what the overlay colouring it says of it, for the tooltip (GraphView's)
        self.draw_glyphs = True  # the +/- expand glyphs (image exports leave them out: nothing to click there)
        self.overview: QImage | None = None
        self.placeholder = "Open a model: File \u25b8 Open (Ctrl+O), or drop an .onnx / .mnn file here"
        self.last_drawn = 0
        self.frame_times: list[float] = []
        self._cache_key = None
        self._cache = None
        self._static: dict = {}
        self._press = None
        self._panning = False
        self.font_title = QFont()
        self.font_title.setPixelSize(12)
        self.font_title.setBold(True)
        self.font_small = QFont()
        self.font_small.setPixelSize(8)
        self.font_frame = QFont()
        self.font_frame.setPixelSize(12)
        self.font_frame.setBold(True)
        self.font_edge = QFont()
        self.font_edge.setPixelSize(8)
        self.font_overview = QFont()  # scope names zoomed out (screen pixels, not scene units)
        self.font_overview.setPixelSize(11)
        self.font_overview.setBold(True)
        self._fitted: dict = {}  # (tensor label, room) -> the label cut to that room
        self.right_reserve = 0.0  # px at the right a fit that leaves part of the graph out of view keeps free
        self.top_reserve = 0.0  # px at the top the minimap takes there (with right_reserve: its corner)

    # ----- content ---------------------------------------------------------------------------------
    def set_scene(self, scene: Scene | None, overview: QImage | None = None) -> None:
        self.scene = scene
        self.overview = overview
        self._cache_key = self._cache = None
        self._static.clear()
        self.update()
        self.view_changed.emit()

    def set_palette(self, pal: Palette) -> None:
        self.pal = pal
        self._cache_key = self._cache = None
        self._static.clear()
        self.update()

    def set_selected(self, item: int) -> None:
        self.selected = item
        self.update()

    def set_marked(self, items) -> None:
        self.marked = np.asarray(sorted(items), np.int64)
        self.update()

    def set_failed(self, items) -> None:
        """The ops a failed conversion names (unsupported, or where it stopped): filled and outlined red, whatever
        else is outlined (a search's matches, a selection). Outlined in the search colour, helper 117 took Hardmax
        for any other node after a failed conversion."""
        self.failed = np.asarray(sorted(items), np.int64)
        self.update()

    def set_fill_override(self, fills: dict[int, str]) -> None:
        self.fill_override = dict(fills)
        self._cache_key = self._cache = None
        self.update()

    # ----- view transform ---------------------------------------------------------------------------
    def to_scene(self, p: QPointF) -> tuple[float, float]:
        return (p.x() - self.tx) / self.scale, (p.y() - self.ty) / self.scale

    def view_rect(self) -> tuple[float, float, float, float]:
        s = self.scale
        return (-self.tx / s, -self.ty / s, (self.width() - self.tx) / s, (self.height() - self.ty) / s)

    def set_view(self, scale: float, tx: float, ty: float) -> None:
        self.scale = float(min(MAX_SCALE, max(MIN_SCALE, scale)))
        self.tx, self.ty = float(tx), float(ty)
        self.update()
        self.view_changed.emit()

    def fit(self, margin: float = 24.0, max_scale: float = 1.0) -> None:
        """The graph at a readable size: whole if its titles are still FIT_MIN_SCALE or more (never magnified
        beyond `max_scale`); else as wide as the view allows from its top (a tall, narrow graph); else, a graph
        too wide for that (a wide decoder fitted whole had 5-pixel text, and in a narrow side-by-side pane no fit
        was readable), its top at READABLE_SCALE around its first ops. The whole graph however small is
        fit_all (View > Fit to Window pressed again)."""
        if self.scene is None:
            return
        x0, y0, x1, y1 = self.scene.bounds
        W, H = max(1, self.width()), max(1, self.height())
        if W <= 2 * margin or H <= 2 * margin:
            return  # squeezed to nothing while a divider is dragged: a fit now would leave the view nowhere
        fit_w = (W - 2 * margin) / max(1.0, x1 - x0)
        s = min(fit_w, (H - 2 * margin) / max(1.0, y1 - y0), max_scale)
        # a tall, narrow graph: fitting its height left tiny text and most of the width empty; its width,
        # from the top (its inputs), is readable, and the rest is a scroll away
        tall = s < READABLE_SCALE and s * (x1 - x0) < 0.5 * (W - 2 * margin) and fit_w > s
        if s >= FIT_MIN_SCALE and not tall:
            self.set_view(s, W / 2 - s * (x0 + x1) / 2, H / 2 - s * (y0 + y1) / 2)
            return
        # text at its full size, as wide as the view allows (0.75 was hard to read), clear of the minimap
        # that a graph partly out of view gets in the top right corner (it hid a frame's collapse glyph)
        room = W - 2 * margin - self.right_reserve
        s_clear = min(room / max(1.0, x1 - x0), max_scale)
        if room >= 0.5 * W and s_clear >= FIT_MIN_SCALE:
            s, mid = s_clear, margin + room / 2
        elif fit_w >= FIT_MIN_SCALE:  # too narrow to keep clear of it with readable titles: the whole width
            s, mid = min(fit_w, max_scale), W / 2
            tx = mid - s * (x0 + x1) / 2
            self.set_view(s, tx, self._below_minimap(s, tx, margin - s * y0))
            return
        else:  # wider than the view at a readable size: its top, around the first ops, the rest a scroll away
            s = min(READABLE_SCALE, max_scale)
            sc = self.scene
            top = sc.y0 <= sc.y0.min() + 20.0  # its first row: the inputs
            cx = float(((sc.x0 + sc.x1)[top] / 2).mean()) if top.any() else (x0 + x1) / 2
            half = (W / 2 - margin) / s
            cx = min(max(cx, x0 + half), x1 - half)
            self.set_view(s, W / 2 - s * cx, self._below_minimap(s, W / 2 - s * cx, margin - s * y0))
            return
        self.set_view(s, mid - s * (x0 + x1) / 2, margin - s * y0)

    def _below_minimap(self, s: float, tx: float, ty: float) -> float:
        """ty, moved down so that no node of the view (s, tx, ty) lies under the minimap in the top right corner,
        where that costs less than a third of the view's height: a fit of a graph's width from its top put
        moe_llm_kv's last two input pills under it (tryout 66)."""
        sc = self.scene
        if not (self.right_reserve and self.top_reserve) or not len(sc.x0):
            return ty
        under = (sc.x1 * s + tx > self.width() - self.right_reserve) & (sc.y0 * s + ty < self.top_reserve)
        if not under.any():
            return ty
        shift = self.top_reserve - float(sc.y0[under].min()) * s - ty
        return ty + shift if 0 < shift < self.height() / 3 else ty

    def fit_all(self, margin: float = 24.0) -> None:
        """The whole graph, however small that makes it."""
        if self.scene is not None:
            self.set_view(*self.whole_view(margin))

    def whole_view(self, margin: float = 24.0) -> tuple[float, float, float]:
        """(scale, tx, ty) that show the whole graph (fit_all's view, not set)."""
        x0, y0, x1, y1 = self.scene.bounds
        W, H = max(1, self.width()), max(1, self.height())
        s = min((W - 2 * margin) / max(1.0, x1 - x0), (H - 2 * margin) / max(1.0, y1 - y0), 1.0)
        return s, W / 2 - s * (x0 + x1) / 2, H / 2 - s * (y0 + y1) / 2

    def center_on(self, x: float, y: float, scale: float | None = None) -> None:
        s = self.scale if scale is None else scale
        self.set_view(s, self.width() / 2 - s * x, self.height() / 2 - s * y)

    def zoom(self, factor: float, at: QPointF | None = None) -> None:
        at = at or QPointF(self.width() / 2, self.height() / 2)
        sx, sy = self.to_scene(at)
        s = min(MAX_SCALE, max(MIN_SCALE, self.scale * factor))
        self.set_view(s, at.x() - s * sx, at.y() - s * sy)

    def show_leaf(self, leaf: int) -> None:
        """Centre a leaf, zooming in to a readable size if it is too small."""
        sc = self.scene
        if sc is None or leaf < 0:
            return
        x = (sc.x0[leaf] + sc.x1[leaf]) / 2
        y = (sc.y0[leaf] + sc.y1[leaf]) / 2
        self.center_on(x, y, max(self.scale, 1.0))

    # ----- hit testing ------------------------------------------------------------------------------
    def item_at(self, p: QPointF) -> int:
        sc = self.scene
        if sc is None:
            return -1
        x, y = self.to_scene(p)
        leaf = sc.leaf_at(x, y)
        return int(sc.vg.leaves[leaf]) if leaf >= 0 else -1

    def frame_hit(self, p: QPointF) -> tuple[int, bool]:
        """(frame index, on its collapse glyph) for a point on a frame's title bar, else (-1, False)."""
        sc = self.scene
        if sc is None:
            return -1, False
        x, y = self.to_scene(p)
        f = sc.frame_at(x, y)
        if f < 0:
            return -1, False
        x0, y0, x1, _ = sc.frame_box[f]
        if y - y0 > 26:
            return -1, False
        gx = float(sc.glyph_x[f]) if sc.glyph_x is not None else x1 - 6 - GLYPH
        return f, (gx - 4 <= x <= gx + GLYPH + 6)

    # ----- painting ---------------------------------------------------------------------------------
    def paintEvent(self, event) -> None:
        t0 = time.perf_counter()
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(self.pal.background))
        sc = self.scene
        if sc is None:
            p.setPen(QColor(self.pal.text_dim))
            p.drawText(self.rect(), Qt.AlignCenter, self.placeholder)
            p.end()
            return
        vx0, vy0, vx1, vy1 = self.view_rect()
        s = self.scale
        p.translate(self.tx, self.ty)
        p.scale(s, s)
        if self._use_overview():
            ox0, oy0, ox1, oy1 = sc.bounds
            p.setRenderHint(QPainter.SmoothPixmapTransform, True)
            p.drawImage(QRectF(ox0, oy0, ox1 - ox0, oy1 - oy0), self.overview)
            self.last_drawn = 0
        else:
            self._paint_detail(p, sc, (vx0, vy0, vx1, vy1))
        if s < TITLE_SCALE:
            self._paint_overview_titles(p, sc, (vx0, vy0, vx1, vy1))
        p.end()
        ms = (time.perf_counter() - t0) * 1000.0
        self.frame_times.append(ms)
        del self.frame_times[:-2000]
        self.painted.emit(ms)

    def overview_titles(self, view=None) -> list[tuple[str, QRectF, int]]:
        """Zoomed out below the node titles' size: the names of the frames and collapsed scopes in view that
        have room for one, written at a fixed size on the screen (zoomed out to the whole graph, every text
        vanished and experts.0 could not be told from experts.3), outer ones first, none over another:
        [(text, screen rect, frame fill index or -1 for a box)]."""
        sc = self.scene
        if sc is None:
            return []
        vx0, vy0, vx1, vy1 = self.view_rect() if view is None else view
        s, tx, ty = self.scale, self.tx, self.ty
        fm = QFontMetricsF(self.font_overview)
        tree, n = sc.vg.tree, sc.vg.n_ops
        out: list[tuple[str, QRectF, int]] = []
        taken: list[QRectF] = []

        def put(name: str, x0: float, y0: float, x1: float, y1: float, fill: int, centred: bool) -> None:
            if len(out) >= MAX_OVERVIEW_TITLES or x1 - x0 < 36 or y1 - y0 < fm.height() + 4:
                return
            text = name if fm.horizontalAdvance(name) <= x1 - x0 - 10 else \
                fm.elidedText(name, Qt.ElideMiddle, x1 - x0 - 10)
            if len(text) < 6 and text != name:
                return
            w = fm.horizontalAdvance(text) + 4
            r = QRectF((x0 + x1 - w) / 2 if centred else x0 + 4, (y0 + y1 - fm.height()) / 2 if centred else y0 + 2,
                       w, fm.height())
            if any(r.intersects(q) for q in taken):
                return
            taken.append(r)
            out.append((text, r, fill))

        for f in sc.frames_in(vx0, vy0, vx1, vy1).tolist():  # shallow first: the outer frames' names first
            x0, y0, x1, y1 = sc.frame_box[f]
            put(tree.label[int(sc.vg.frames[f])], x0 * s + tx, y0 * s + ty, x1 * s + tx, y1 * s + ty,
                int(sc.layout.frame_depth[f]) % len(self.pal.frame_fill), False)
        leaves = sc.leaves_in(vx0, vy0, vx1, vy1)
        for lf in leaves[sc.is_box[leaves]].tolist():
            put(tree.label[int(sc.vg.leaves[lf]) - n], sc.x0[lf] * s + tx, sc.y0[lf] * s + ty, sc.x1[lf] * s + tx,
                sc.y1[lf] * s + ty, -1, True)
        return out

    def _paint_overview_titles(self, p: QPainter, sc: Scene, view) -> None:
        titles = self.overview_titles(view)
        if not titles:
            return
        p.save()
        p.resetTransform()
        p.setRenderHint(QPainter.Antialiasing, True)
        fm = QFontMetricsF(self.font_overview)
        for text, r, fill in titles:
            # a halo of the frame's fill around the letters (as on a map), not a box: what is under a name
            # stays in sight around it
            path = QPainterPath()
            path.addText(QPointF(r.x() + 2, r.y() + fm.ascent()), self.font_overview, text)
            if fill >= 0:
                halo = QColor(self.pal.frame_fill[fill])
                p.strokePath(path, QPen(halo, 3.0, Qt.SolidLine, Qt.RoundCap, Qt.RoundJoin))
            p.fillPath(path, QColor(self.pal.frame_text if fill >= 0 else self.pal.box_text))
        p.restore()

    def _use_overview(self) -> bool:
        if self.overview is None or self.overview.isNull():
            return False
        x0, _, x1, _ = self.scene.bounds
        image_scale = self.overview.width() / max(1.0, x1 - x0)
        return self.scale <= image_scale * 1.25 and self.scene.n_leaves > 2000

    def _lod(self) -> int:
        s = self.scale
        return 0 if s < 0.12 else (1 if s < 0.45 else 2)

    def _batches(self, sc: Scene, view):
        """Paths for everything in a padded view rectangle, cached while the view stays inside it."""
        vx0, vy0, vx1, vy1 = view
        lod = self._lod()
        key = self._cache_key
        if key is not None and key[0] == lod and key[1] <= vx0 and key[2] <= vy0 and key[3] >= vx1 and key[4] >= vy1:
            return self._cache
        pw, ph = (vx1 - vx0) * 0.6, (vy1 - vy0) * 0.6
        r = (vx0 - pw, vy0 - ph, vx1 + pw, vy1 + ph)
        leaves = sc.leaves_in(*r)
        frames = sc.frames_in(*r)
        edges = sc.edges_in(*r)
        batches = {"leaves": leaves, "frames": frames, "edges": edges, "nodes": [], "frame_paths": []}
        radius = 4.0 if lod > 0 else 0.0
        # frames, one path per nesting depth, shallow first: the fills are opaque, so grouping by colour
        # (depth modulo the palette) painted a frame's ancestors over it once the colours cycled
        if len(frames):
            b = sc.frame_box[frames]
            depth = sc.layout.frame_depth[frames]
            for d in np.unique(depth):
                sel = depth == d
                t, xy = rounded_rect_elements(b[sel, 0], b[sel, 1], b[sel, 2], b[sel, 3], 8.0) if lod > 0 else \
                    rect_elements(b[sel, 0], b[sel, 1], b[sel, 2], b[sel, 3])
                batches["frame_paths"].append((int(d) % len(self.pal.frame_fill), path_from_elements(t, xy)))
        # edges and arrow heads
        if len(edges):
            if lod == 0:
                t, xy = pick(sc.line_types, sc.line_xy, sc.line_eptr, edges)
            else:
                t, xy = pick(sc.edge_types, sc.edge_xy, sc.edge_eptr, edges)
            batches["edge_path"] = path_from_elements(t, xy)
            if lod > 0:
                t, xy = arrow_elements(sc.edge_end[edges], sc.edge_up[edges], 7.0)
                batches["arrow_path"] = path_from_elements(t, xy)
        # nodes, one path per fill colour
        io = leaves[sc.is_io[leaves]] if len(leaves) else leaves
        if len(io):  # graph inputs and outputs: pills
            leaves = leaves[~sc.is_io[leaves]]
            t, xy = rounded_rect_elements(sc.x0[io], sc.y0[io], sc.x1[io], sc.y1[io],
                                          (sc.y1[io] - sc.y0[io]) / 2) if lod > 0 else \
                rect_elements(sc.x0[io], sc.y0[io], sc.x1[io], sc.y1[io])
            batches["nodes"].append((self.pal.categories["io"], path_from_elements(t, xy), False))
        if len(leaves):
            fill = [self.pal.categories[CATEGORIES[c]] for c in range(len(CATEGORIES))]
            colour_of = np.asarray(sc.cat[leaves])
            groups: dict[str, list] = {}
            for c in np.unique(colour_of):
                groups.setdefault(fill[c], []).append(leaves[colour_of == c])
            if self.fill_override:
                over = {lf: col for lf, col in self.fill_override.items()}
                mask = np.fromiter((lf in over for lf in leaves.tolist()), bool, len(leaves))
                if mask.any():
                    groups = {}
                    for c in np.unique(colour_of[~mask]):
                        groups.setdefault(fill[c], []).append(leaves[~mask][colour_of[~mask] == c])
                    for lf in leaves[mask].tolist():
                        groups.setdefault(over[lf], []).append(np.array([lf]))
            for colour, parts in groups.items():
                ids = np.concatenate(parts)
                if lod > 0:
                    t, xy = rounded_rect_elements(sc.x0[ids], sc.y0[ids], sc.x1[ids], sc.y1[ids], radius)
                else:
                    t, xy = rect_elements(sc.x0[ids], sc.y0[ids], sc.x1[ids], sc.y1[ids])
                batches["nodes"].append((colour, path_from_elements(t, xy), bool(sc.is_box[ids].all())))
        self._cache_key = (lod, *r)
        self._cache = batches
        return batches

    def _paint_detail(self, p: QPainter, sc: Scene, view) -> None:
        s = self.scale
        lod = self._lod()
        p.setRenderHint(QPainter.Antialiasing, lod > 0)
        b = self._batches(sc, view)
        pal = self.pal
        # frames
        border = QPen(QColor(pal.frame_border), 1.0)
        border.setCosmetic(True)
        for d, path in b["frame_paths"]:
            p.setPen(border)
            p.setBrush(QColor(pal.frame_fill[d]))
            p.drawPath(path)
        # edges
        if "edge_path" in b:
            pen = QPen(QColor(pal.edge), 1.3 if s >= 0.5 else 1.0)
            pen.setCosmetic(s < 0.5)
            p.setPen(pen)
            p.setBrush(Qt.NoBrush)
            p.drawPath(b["edge_path"])
            if "arrow_path" in b:
                p.setPen(Qt.NoPen)
                p.setBrush(QColor(pal.edge))
                p.drawPath(b["arrow_path"])
        # nodes
        box_pen = QPen(QColor(pal.box_border), 1.2)
        for colour, path, boxes in b["nodes"]:
            p.setBrush(QColor(colour))
            p.setPen(box_pen if (boxes and lod > 0) else Qt.NoPen)
            p.drawPath(path)
        self._paint_highlights(p, sc)
        vx0, vy0, vx1, vy1 = view
        in_view = sc.leaves_in(vx0, vy0, vx1, vy1)
        self.last_drawn = len(in_view)
        if s >= TITLE_SCALE and len(in_view) <= MAX_TEXT_ITEMS:
            self._paint_frame_titles(p, sc, sc.frames_in(vx0, vy0, vx1, vy1))
            self._paint_labels(p, sc, in_view)
            if s >= EDGE_LABEL_SCALE:
                self._paint_edge_labels(p, sc, view)

    def _paint_highlights(self, p: QPainter, sc: Scene) -> None:
        pal = self.pal
        if len(self.failed):
            leaves = self._leaves_holding(sc, self.failed)
            pen = QPen(QColor(FAILED), 3.0)
            pen.setCosmetic(self.scale < 0.5)
            p.setPen(pen)
            fill = QColor(FAILED)
            fill.setAlpha(200)
            # hatched too: plain red is near the activations' own dark red (helper 121 nearly missed them at a fit)
            hatch = QBrush(QColor(255, 255, 255, 120), Qt.BDiagPattern)
            for lf in np.unique(leaves).tolist()[:5000]:
                box = QRectF(sc.x0[lf] - 3, sc.y0[lf] - 3, sc.x1[lf] - sc.x0[lf] + 6, sc.y1[lf] - sc.y0[lf] + 6)
                p.setBrush(fill)
                p.drawRoundedRect(box, 6, 6)
                p.setBrush(hatch)
                p.drawRoundedRect(box, 6, 6)
        p.setBrush(Qt.NoBrush)
        if len(self.marked):
            leaves = self._leaves_holding(sc, self.marked)
            pen = QPen(QColor(pal.match), 3.0)
            pen.setCosmetic(self.scale < 0.5)
            p.setPen(pen)
            for lf in np.unique(leaves).tolist()[:5000]:
                p.drawRoundedRect(QRectF(sc.x0[lf] - 3, sc.y0[lf] - 3, sc.x1[lf] - sc.x0[lf] + 6,
                                         sc.y1[lf] - sc.y0[lf] + 6), 6, 6)
        lf = self._leaf_showing(sc, self.selected)
        if lf >= 0:
            pen = QPen(QColor(pal.selection), 3.0)
            pen.setCosmetic(self.scale < 0.5)
            p.setPen(pen)
            p.drawRoundedRect(QRectF(sc.x0[lf] - 3, sc.y0[lf] - 3, sc.x1[lf] - sc.x0[lf] + 6,
                                     sc.y1[lf] - sc.y0[lf] + 6), 6, 6)
        elif self.selected >= sc.vg.n_ops:
            f = np.flatnonzero(sc.vg.frames == self.selected - sc.vg.n_ops)
            if len(f):
                pen = QPen(QColor(pal.selection), 2.0)
                pen.setCosmetic(True)
                p.setPen(pen)
                x0, y0, x1, y1 = sc.frame_box[f[0]]
                p.drawRoundedRect(QRectF(x0, y0, x1 - x0, y1 - y0), 8, 8)

    def _leaves_holding(self, sc: Scene, items: np.ndarray) -> np.ndarray:
        """The leaves that show `items`: each item's own leaf, and the collapsed boxes holding ops (may repeat)."""
        leaves = sc.leaf_of_item[items[items < len(sc.leaf_of_item)]]
        return np.concatenate([leaves[leaves >= 0], self._boxes_holding(sc, items)])

    def _boxes_holding(self, sc: Scene, items: np.ndarray) -> np.ndarray:
        ops = items[items < sc.vg.n_ops]
        reps = sc.vg.rep[ops]
        reps = reps[reps >= 0]
        leaves = sc.leaf_of_item[reps]
        return leaves[leaves >= 0]

    def _leaf_showing(self, sc: Scene, item: int) -> int:
        if item < 0 or item >= len(sc.leaf_of_item):
            return -1
        lf = int(sc.leaf_of_item[item])
        if lf < 0 and item < sc.vg.n_ops:
            rep = int(sc.vg.rep[item])
            lf = int(sc.leaf_of_item[rep]) if rep >= 0 else -1
        return lf

    def _static_text(self, text: str, width: float | None = None, font: QFont | None = None) -> QStaticText:
        key = (text, width, id(font))
        st = self._static.get(key)
        if st is None:
            st = QStaticText(text)
            st.setTextFormat(Qt.PlainText)
            st.setPerformanceHint(QStaticText.AggressiveCaching)
            if font is not None:
                st.prepare(font=font)
            self._static[key] = st
            if len(self._static) > 20000:
                self._static.clear()
        return st

    def _elide(self, text: str, font: QFont, width: float) -> str:
        return QFontMetricsF(font).elidedText(text, Qt.ElideMiddle, width)

    def _paint_labels(self, p: QPainter, sc: Scene, leaves: np.ndarray) -> None:
        vg, t, tree = sc.vg, sc.vg.tree.table, sc.vg.tree
        n = vg.n_ops
        pal = self.pal
        detail = self.scale >= DETAIL_SCALE
        fm_title = QFontMetricsF(self.font_title)
        small_px = self.scale * 8 >= TEXT_MIN_PX
        short = self.scale >= SHORT_NAME_SCALE
        n_real = n + tree.n_real_scopes
        for lf in leaves.tolist():
            item = int(vg.leaves[lf])
            x0, y0, x1, y1 = sc.x0[lf], sc.y0[lf], sc.x1[lf], sc.y1[lf]
            w = x1 - x0
            if item < n:
                title = sc.titles[item]
                p.setFont(self.font_title)
                fill = self.fill_override.get(lf)  # an overlay's colour: black or white, whichever reads on it
                p.setPen(QColor(text_colour(fill) if fill else pal.node_text))
                tw = fm_title.horizontalAdvance(title)
                if detail:
                    p.drawStaticText(QPointF(x0 + (w - tw) / 2, y0 + 2), self._static_text(title, None, self.font_title))
                    p.setFont(self.font_small)
                    name = self._elide(self.detail_name(sc, item), self.font_small, w - 6)
                    outs = t.node_outputs(item)
                    known = outs and outs[0] >= 0 and t.shapes[outs[0]] is not None
                    # (no "?" where the shape is unknown: one on every node is noise)
                    p.drawText(QRectF(x0 + 3, y0 + 14, w - 6, 11), Qt.AlignCenter, name)
                    p.drawText(QRectF(x0 + 3, y0 + 22, w - 6, 11), Qt.AlignCenter,
                               self._shape_in(t.shapes[outs[0]], w - 6) if known else "")
                elif short and sc.short[item]:
                    # which of the same-titled ops this is ("q_proj" under "MatMul"), elided to the box
                    p.drawStaticText(QPointF(x0 + (w - tw) / 2, y0 + 3), self._static_text(title, None, self.font_title))
                    p.setFont(self.font_small)
                    p.drawText(QRectF(x0 + 3, y0 + 18, w - 6, 11), Qt.AlignCenter,
                               self._elide(sc.short[item], self.font_small, w - 6))
                else:
                    p.drawStaticText(QPointF(x0 + (w - tw) / 2, (y0 + y1) / 2 - 8),
                                     self._static_text(title, None, self.font_title))
                if t.subgraphs.get(item) and small_px:
                    # "has subgraphs": two overlapping squares (the sign U+29C9) drawn as shapes, since the
                    # bundled fonts have no glyph for it (it came out as a missing-glyph box)
                    p.save()
                    p.setBrush(Qt.NoBrush)
                    p.drawRect(QRectF(x1 - 11, y0 + 2, 5, 5))
                    p.drawRect(QRectF(x1 - 8, y0 + 5, 5, 5))
                    p.restore()
            elif item >= n_real:  # a graph input / output: its name over its shape
                k = item - n_real
                ti = int(tree.io_tensor[k])
                p.setPen(QColor(pal.node_text))
                p.setFont(self.font_title)
                name = self._elide(tree.label[item - n], self.font_title, w - 20)
                if small_px:
                    p.drawText(QRectF(x0 + 10, y0 + 3, w - 20, 16), Qt.AlignCenter, name)
                    p.setFont(self.font_small)
                    p.drawText(QRectF(x0 + 10, y0 + 20, w - 20, 11), Qt.AlignCenter,
                               self._shape_in(self.shape_of(ti), w - 20))
                else:
                    p.drawText(QRectF(x0 + 10, y0, w - 20, y1 - y0), Qt.AlignCenter, name)
            else:
                s = item - n
                label = tree.label[s]
                p.setFont(self.font_title)
                title_pen, sub_pen = self.box_text_colours(lf)
                p.setPen(title_pen)
                text = self._elide(label, self.font_title, w - GLYPH - 22)
                p.drawStaticText(QPointF(x0 + 10, y0 + 6), self._static_text(text, None, self.font_title))
                if small_px:
                    p.setFont(self.font_small)
                    p.setPen(sub_pen)
                    kind = "group" if tree.kind[s] else "ops"
                    p.drawText(QRectF(x0 + 10, y0 + 24, w - 20, 12), Qt.AlignLeft | Qt.AlignVCenter,
                               f"{tree.count[s]:,} ops" + (" \u00b7 group" if kind == "group" else ""))
                if self.draw_glyphs:
                    self._glyph(p, x1 - GLYPH - 6, y0 + 6, plus=True)

    def box_text_colours(self, lf: int) -> tuple[QColor, QColor]:
        """The colours of a collapsed box's title and its "N ops" line: the theme's, or over an overlay's fill black
        or white, whichever reads on it, the line a little lighter (the theme's grey line vanished on red)."""
        fill = self.fill_override.get(lf)
        if not fill:
            return QColor(self.pal.box_text), QColor(self.pal.text_dim)
        ink = QColor(text_colour(fill))
        sub = QColor(ink)
        sub.setAlphaF(0.8)
        return ink, sub

    def _glyph(self, p: QPainter, x: float, y: float, plus: bool) -> None:
        pen = QPen(QColor(self.pal.box_border), 1.2)
        p.setPen(pen)
        p.setBrush(QColor(self.pal.background))
        p.drawRoundedRect(QRectF(x, y, GLYPH, GLYPH), 3, 3)
        pen.setColor(QColor(self.pal.text))
        pen.setWidthF(1.6)
        p.setPen(pen)
        c = GLYPH / 2
        p.drawLine(QPointF(x + 3.5, y + c), QPointF(x + GLYPH - 3.5, y + c))
        if plus:
            p.drawLine(QPointF(x + c, y + 3.5), QPointF(x + c, y + GLYPH - 3.5))

    def frame_title(self, f: int) -> tuple[str, float, float]:
        """A frame's title as drawn: (text, x of its left side, x of the collapse glyph). Where no edge runs
        through the title bar (an edge under the title vanished where one looks to see where it goes): the whole
        title, else the name alone, in the first stretch it fits; else at the left, elided, on its fill (the
        edge passes under it)."""
        sc = self.scene
        tree = sc.vg.tree
        s = int(sc.vg.frames[f])
        x0, _, x1, _ = sc.frame_box[f]
        gx = float(sc.glyph_x[f]) if sc.glyph_x is not None else x1 - GLYPH - 6
        label = f"{tree.label[s]}  \u00b7  {tree.count[s]:,} ops"
        fm = QFontMetricsF(self.font_frame)
        blocked = sorted((sc.frame_blocked[f] if sc.frame_blocked is not None else []) + [(gx - 4, gx + GLYPH + 4)])
        for text in (label, tree.label[s]):
            tx = free_spot(x0 + 8, x1 - 6, blocked, fm.horizontalAdvance(text) + 4)
            if tx is not None:
                return text, tx, gx
        room = x1 - x0 - GLYPH - 24
        if fm.horizontalAdvance(label) > room:  # drop the count first
            label = self._elide(tree.label[s], self.font_frame, room)
        return label, x0 + 8, gx

    def _paint_frame_titles(self, p: QPainter, sc: Scene, frames: np.ndarray) -> None:
        p.setFont(self.font_frame)
        for f in frames.tolist():
            y0 = sc.frame_box[f][1]
            p.setPen(QColor(self.pal.frame_text))
            label, tx, gx = self.frame_title(f)
            fm = QFontMetricsF(self.font_frame)
            # on the frame's own fill: an edge entering the frame under its title does not cross the text
            fill = QColor(self.pal.frame_fill[int(sc.layout.frame_depth[f]) % len(self.pal.frame_fill)])
            fill.setAlpha(225)
            p.fillRect(QRectF(tx, y0 + 6, fm.horizontalAdvance(label) + 4, fm.height()), fill)
            p.drawStaticText(QPointF(tx + 2, y0 + 6), self._static_text(label, None, self.font_frame))
            if self.draw_glyphs:
                self._glyph(p, gx, y0 + 6, plus=False)

    def _paint_edge_labels(self, p: QPainter, sc: Scene, view) -> None:
        vx0, vy0, vx1, vy1 = view
        at = sc.edge_label_at
        inside = np.flatnonzero((at[:, 0] >= vx0) & (at[:, 0] <= vx1) & (at[:, 1] >= vy0) & (at[:, 1] <= vy1))
        if len(inside) > EDGE_LABELS_MAX:
            return
        p.setFont(self.font_edge)
        p.setPen(QColor(self.pal.edge_label))
        depth = sc.edge_label_depth
        fills = [QColor(c) for c in self.pal.frame_fill]
        plain = QColor(self.pal.background)
        for c in fills + [plain]:
            c.setAlpha(225)
        for e, text, x, y, w, _ in self.placed_labels(inside):
            if depth is not None:  # on the fill it sits on: edges passing under it do not strike it through
                d = int(depth[e])
                p.fillRect(QRectF(x - 1.0, y + 0.5, w + 2.0, 9.5), fills[d % len(fills)] if d >= 0 else plain)
            p.drawStaticText(QPointF(x, y), self._static_text(text, None, self.font_edge))

    def placed_labels(self, edges: np.ndarray) -> list[tuple[int, str, float, float, float, str]]:
        """The tensor labels of these edges as painted: (an edge there, its text cut to its room, left x, top y,
        width, the whole text), one per place; right of where its edges leave, or ending left of it where an
        edge heads right through it (scene.py)."""
        sc = self.scene
        at, room, left = sc.edge_label_at, sc.edge_label_room, sc.edge_label_left
        fm = QFontMetricsF(self.font_edge)
        out = []
        for e, texts, shorts in self._label_texts(sc, edges):
            whole = text = "  \u00b7  ".join(texts)
            if room is not None:  # no longer than the room up to the next label, node or frame
                text = self._fit(text, float(room[e]), "  \u00b7  ".join(shorts))
                if not text:
                    continue
            w = fm.horizontalAdvance(text)
            x = at[e, 0] - w if left is not None and left[e] else at[e, 0]
            out.append((e, text, float(x), float(at[e, 1]), w, whole))
        return out

    def _at_sizes(self, tensor: int):
        """An .mnn input's shape at the sizes its shapes were computed at (input_at, for this scene's table), else
        None."""
        table, shapes = self.input_at
        return shapes.get(tensor) if table is self.scene.vg.tree.table else None

    def shape_of(self, tensor: int):
        """The shape drawn for a tensor: its own, or for an .mnn input with free dims the one it has at the sizes
        its shapes were computed at (input_at)."""
        got = self._at_sizes(tensor)
        return got if got is not None else self.scene.vg.tree.table.shapes[tensor]

    def _file_shape_note(self, tensor: int) -> str:
        """" at the input sizes (1\u00d7?\u00d764 in the file)" for a tensor drawn at them (input_at), else ""."""
        if self._at_sizes(tensor) is None:
            return ""
        return f" at the input sizes ({fmt_shape(self.scene.vg.tree.table.shapes[tensor])} in the file)"

    def _label_texts(self, sc: Scene, edges: np.ndarray) -> list:
        """The labels of these edges, one per place: (an edge there, the shapes of the tensors written there, one
        text per tensor, and their compact forms); none where a tensor's shape is unknown."""
        at = sc.edge_label_at
        places: dict = {}
        for e in edges.tolist():
            tensor = int(sc.vg.edge_tensor[e])
            shape = self.shape_of(tensor)
            if shape is None:
                continue
            text = fmt_shape(shape, values=self.dim_values)
            short = fmt_shape(shape, compact=True, values=self.dim_values)
            if sc.vg.edge_count[e] > 1:
                text += f"  (\u00d7{int(sc.vg.edge_count[e])})"
                short += f"  (\u00d7{int(sc.vg.edge_count[e])})"
            e0, texts, shorts, seen = places.setdefault((round(at[e, 0]), round(at[e, 1])), (e, [], [], set()))
            if tensor not in seen and text not in texts:
                texts.append(text)
                shorts.append(short)
                seen.add(tensor)
        return [(e, texts, shorts) for e, texts, shorts, _ in places.values() if texts]

    @staticmethod
    def detail_name(sc: Scene, item: int) -> str:
        """An op's name under its title when zoomed in: without the path of the frame around it, and nothing where
        what is left only repeats the title ("MatMul" under MatMul in frame "query", tryout 16: what tells it apart
        from its siblings, if anything)."""
        tree = sc.vg.tree
        t = tree.table
        name = t.names[item] or t.ids[item]
        scope = tree.path[tree.node_parent[item]]
        if scope and name.startswith(scope + "/"):  # the frame around it already says the rest
            name = name[len(scope) + 1:]
        if name.lower() in (sc.titles[item].lower(), t.op_types[item].lower()):
            name = sc.short[item]
        return name

    def _shape_in(self, shape, width: float) -> str:
        """A shape written in a node (small font) as the tensor labels are: whole if it fits, else its compact
        form, else that cut at its end (an input's subtitle was cut in its middle: `DynamicDimension.0x3xDynami...
        ension.1xDynamicDimension.2` above its own label `?x3x?x?`)."""
        return self._cut(fmt_shape(shape, values=self.dim_values), fmt_shape(shape, compact=True, values=self.dim_values),
                         self.font_small, width)

    @staticmethod
    def _cut(text: str, short: str | None, font: QFont, width: float) -> str:
        """`text` if it fits `width`, else `short` (or `text`) cut at its end with an ellipsis."""
        fm = QFontMetricsF(font)
        if fm.horizontalAdvance(text) <= width:
            return text
        return fm.elidedText(short if short else text, Qt.ElideRight, width)

    def _fit(self, text: str, room: float, short: str | None = None) -> str:
        """A tensor label cut to `room` scene units: whole if it fits, else its compact form (long symbols as
        '?'), cut with an ellipsis if that does not fit either ('' where not even a few characters fit: the
        tooltip and Properties have the whole shape)."""
        key = (text, int(room), short)
        fit = self._fitted.get(key)
        if fit is None:
            fit = "" if room < 14.0 else self._cut(text, short, self.font_edge, room)
            if fit == "\u2026":
                fit = ""
            if len(self._fitted) > 20000:
                self._fitted.clear()
            self._fitted[key] = fit
        return fit

    # ----- input ------------------------------------------------------------------------------------
    def mousePressEvent(self, e) -> None:
        self.setFocus()
        if e.button() in (Qt.LeftButton, Qt.MiddleButton):
            self._press = (e.position(), self.tx, self.ty)
            self._panning = False

    def mouseMoveEvent(self, e) -> None:
        if self._press is None:
            return
        start, tx, ty = self._press
        d = e.position() - start
        if self._panning or abs(d.x()) + abs(d.y()) > 4:
            self._panning = True
            self.setCursor(Qt.ClosedHandCursor)
            self.set_view(self.scale, tx + d.x(), ty + d.y())

    def mouseReleaseEvent(self, e) -> None:
        was_panning = self._panning
        self._press = None
        self._panning = False
        self.unsetCursor()
        if was_panning or e.button() != Qt.LeftButton:
            return
        item = self.item_at(e.position())
        if item >= 0:
            sc = self.scene
            lf = int(sc.leaf_of_item[item])
            x, y = self.to_scene(e.position())
            if sc.vg.is_scope(item) and x >= sc.x1[lf] - GLYPH - 10 and y <= sc.y0[lf] + GLYPH + 10:
                self.item_activated.emit(item)  # the + glyph expands at once
                return
            self.item_clicked.emit(item)
            return
        f, glyph = self.frame_hit(e.position())
        if f >= 0:
            s = int(self.scene.vg.frames[f])
            (self.frame_toggled if glyph else self.frame_clicked).emit(s)
            return
        self.item_clicked.emit(-1)

    def mouseDoubleClickEvent(self, e) -> None:
        item = self.item_at(e.position())
        if item >= 0:
            self.item_activated.emit(item)
            return
        f, _ = self.frame_hit(e.position())
        if f >= 0:
            self.frame_toggled.emit(int(self.scene.vg.frames[f]))

    def wheelEvent(self, e) -> None:
        delta = e.angleDelta()
        if e.modifiers() & Qt.ControlModifier:
            self.zoom(1.0015 ** delta.y(), e.position())
            return
        px = e.pixelDelta()
        dx, dy = (px.x(), px.y()) if not px.isNull() else (delta.x() / 2.0, delta.y() / 2.0)
        if e.modifiers() & Qt.ShiftModifier:
            dx, dy = dy, dx
        self.set_view(self.scale, self.tx + dx, self.ty + dy)

    def keyPressEvent(self, e) -> None:
        k = e.key()
        moves = {Qt.Key_Up: "producer", Qt.Key_Down: "consumer", Qt.Key_Left: "left", Qt.Key_Right: "right"}
        if k in moves and not (e.modifiers() & Qt.ShiftModifier):
            self.navigate.emit(moves[k])
        elif k in moves:  # Shift+arrows pan
            step = 80.0
            dx = {Qt.Key_Left: step, Qt.Key_Right: -step}.get(k, 0.0)
            dy = {Qt.Key_Up: step, Qt.Key_Down: -step}.get(k, 0.0)
            self.set_view(self.scale, self.tx + dx, self.ty + dy)
        elif k in (Qt.Key_Return, Qt.Key_Enter) and self.selected >= 0:
            self.item_activated.emit(self.selected)
        elif k in (Qt.Key_Plus, Qt.Key_Equal):
            self.zoom(1.25)
        elif k == Qt.Key_Minus:
            self.zoom(0.8)
        else:
            super().keyPressEvent(e)

    def event(self, e) -> bool:
        if e.type() == e.Type.ToolTip and self.scene is not None:
            item = self.item_at(e.position() if hasattr(e, "position") else QPointF(e.pos()))
            label = self.label_text_at(e.position() if hasattr(e, "position") else QPointF(e.pos()))
            if item >= 0:
                QToolTip.showText(e.globalPos(), self.describe(item), self)
            elif label:  # a tensor label, cut to its room: the whole shapes
                QToolTip.showText(e.globalPos(), label, self)
            else:
                QToolTip.hideText()
            return True
        return super().event(e)

    def label_text_at(self, pos: QPointF) -> str:
        """What the tensor label under a widget position stands for ('' for none): every tensor written at that
        place, by name, with its whole shape and type."""
        sc = self.scene
        if sc is None or sc.edge_label_room is None or self.scale < EDGE_LABEL_SCALE or not len(sc.edge_label_at):
            return ""
        x, y = self.to_scene(pos)
        at, room = sc.edge_label_at, sc.edge_label_room
        left = sc.edge_label_left if sc.edge_label_left is not None else np.zeros(len(at), bool)
        lo = np.where(left, at[:, 0] - room, at[:, 0])
        under = np.flatnonzero((lo <= x) & (x <= lo + room) & (at[:, 1] <= y) & (y <= at[:, 1] + 10.0))
        if not len(under):
            return ""
        placed = self.placed_labels(under)  # as written: only over the text itself
        if not placed or not placed[0][2] <= x <= placed[0][2] + placed[0][4]:
            return ""
        e = placed[0][0]
        # every tensor written there, by name, with its whole shape and type (two outputs of one shape, as
        # TopK's values and indices, are one text on the graph)
        t = sc.vg.tree.table
        same = np.flatnonzero(np.all(at == at[e], axis=1))
        lines = []
        for tensor in dict.fromkeys(int(k) for k in sc.vg.edge_tensor[same]):
            if t.shapes[tensor] is not None:
                # the sizes' shape next to the symbolic one, the type after both ("...x4  float32 = 1x96x4x4 at the
                # input sizes" read as float32 = ...: helper 110)
                lines.append(f"{t.tensor_names[tensor]}: {fmt_shape(self.shape_of(tensor))}"
                             + at_sizes(t.shapes[tensor], self.dim_values) + self._file_shape_note(tensor)
                             + (f" \u00b7 {t.dtypes[tensor]}" if t.dtypes[tensor] else ""))
        return "\n".join(lines) or placed[0][5].replace("  \u00b7  ", "\n")

    def describe(self, item: int) -> str:
        """The tooltip of a node: what it is, its output shapes, and what the overlay colouring it says."""
        text = self._describe(item)
        extra = self.value_text(item) if self.value_text is not None else None
        return f"{text}\n{extra}" if extra else text

    def _describe(self, item: int) -> str:
        vg = self.scene.vg
        t, tree = vg.tree.table, vg.tree
        if item < vg.n_ops:
            outs = [o for o in t.node_outputs(item) if o >= 0]
            shp = ", ".join(fmt_shape(t.shapes[o]) + at_sizes(t.shapes[o], self.dim_values) for o in outs[:3])
            op, title = t.op_types[item], self.scene.titles[item]
            kind = op if title == op else f"{title} ({op})"
            return f"{kind}  {t.names[item] or t.ids[item]}\n\u2192 {shp}"
        s = item - vg.n_ops
        if vg.is_io(item):
            k = tree.io_index(s)
            ti = int(tree.io_tensor[k])
            kind = "outer-scope input" if tree.io_outer[k] else "graph input" if tree.io_input[k] else \
                "graph output"
            return (f"{kind}  {tree.label[s]}\n{fmt_shape(self.shape_of(ti))}" + at_sizes(t.shapes[ti], self.dim_values)
                    + self._file_shape_note(ti) + (f" \u00b7 {t.dtypes[ti]}" if t.dtypes[ti] else ""))
        return f"{tree.display_path(s)}\n{tree.count[s]:,} ops (double-click to expand)"

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self.view_changed.emit()


def render_overview(scene: Scene, pal: Palette, max_side: int = 2048) -> QImage:
    """The whole scene as an image (no text): the far-zoom stand-in and the minimap's picture.
    Safe on a worker thread (QImage painting)."""
    x0, y0, x1, y1 = scene.bounds
    w, h = max(1.0, x1 - x0), max(1.0, y1 - y0)
    k = max_side / max(w, h)
    iw, ih = max(1, int(round(w * k))), max(1, int(round(h * k)))
    if iw < 48 and w / h < 1:  # a sliver: keep enough width for the minimap to show something
        k2 = 48 / w
        if h * k2 <= 16384:
            k, iw, ih = k2, 48, max(1, int(round(h * k2)))
    img = QImage(iw, ih, QImage.Format_ARGB32_Premultiplied)
    img.fill(QColor(pal.background))
    p = QPainter(img)
    p.setRenderHint(QPainter.Antialiasing, True)
    p.scale(k, k)
    p.translate(-x0, -y0)
    if len(scene.frame_box):
        b = scene.frame_box
        depth = scene.layout.frame_depth
        for d in np.unique(depth):  # shallow first, as in the canvas
            sel = depth == d
            t, xy = rect_elements(b[sel, 0], b[sel, 1], b[sel, 2], b[sel, 3])
            p.setPen(Qt.NoPen)
            p.setBrush(QColor(pal.frame_fill[int(d) % len(pal.frame_fill)]))
            p.drawPath(path_from_elements(t, xy))
    if len(scene.line_eptr) > 1:
        pen = QPen(QColor(pal.edge), 1.0)
        pen.setCosmetic(True)
        p.setPen(pen)
        p.setBrush(Qt.NoBrush)
        p.drawPath(path_from_elements(scene.line_types, scene.line_xy))
    for c in np.unique(scene.cat):
        ids = np.flatnonzero(scene.cat == c)
        t, xy = rect_elements(scene.x0[ids], scene.y0[ids], scene.x1[ids], scene.y1[ids])
        p.setPen(Qt.NoPen if c != SCOPE_CATEGORY else QPen(QColor(pal.box_border), 0))
        p.setBrush(QBrush(QColor(pal.categories[CATEGORIES[c]])))
        p.drawPath(path_from_elements(t, xy))
    p.end()
    return img
