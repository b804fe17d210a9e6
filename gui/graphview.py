"""One graph on screen: the canvas, its minimap and search bar, and the expanded scopes it shows.

Layouts run on a worker thread (gui.tasks); a new request cancels the one in flight, so expanding
quickly never paints a stale layout.
"""
from __future__ import annotations

import time

import numpy as np
from PySide6.QtCore import QEvent, QPointF, Qt, Signal
from PySide6.QtGui import QFontMetricsF, QGuiApplication
from PySide6.QtWidgets import QMenu, QVBoxLayout, QWidget

from mnnscope.inspector.model.layout import layout_visible
from mnnscope.inspector.model.table import GraphTable
from mnnscope.inspector.model.scopes import ROOT, ScopeTree, visible_graph

from mnnscope.gui.canvas import TITLE_SCALE, GraphCanvas, fmt_shape, render_overview
from mnnscope.gui.labels import node_titles, short_names
from mnnscope.gui.legend import fmt_value, leaf_values, leaf_values_detail
from mnnscope.gui.minimap import Minimap
from mnnscope.gui.scene import build_scene
from mnnscope.gui.search import SearchBar
from mnnscope.gui.tasks import TaskSlot
from mnnscope.gui.theme import LIGHT, Palette


IO_H = 36.0  # height of a graph input / output node (ops are 32, scope boxes 44)


def _compute_layout(tree, expanded, op_w, box_w, pal, titles, short=None, cancelled=None):
    t0 = time.perf_counter()
    vg = visible_graph(tree, expanded)
    n = tree.n_ops
    items = vg.leaves
    is_op = items < n
    w = np.where(is_op, op_w[np.minimum(items, n - 1)] if n else 0.0, box_w[np.maximum(items - n, 0)])
    h = np.where(is_op, 32.0 if len(items) else 0.0, np.where(items >= n + tree.n_real_scopes, IO_H, 44.0))
    lay = layout_visible(vg, w, h, cancelled=cancelled or (lambda: False))
    if lay is None:
        return None
    t1 = time.perf_counter()
    if short is None:  # once per graph, here rather than on the UI thread
        short = short_names(tree.table, titles, tree)
    scene = build_scene(vg, lay, titles, short)
    overview = render_overview(scene, pal) if scene.n_leaves > 2000 else None
    return {"scene": scene, "overview": overview, "layout_s": t1 - t0, "scene_s": time.perf_counter() - t1,
            "short": short}


FIT_MARGIN = 24.0  # px kept free at the pane's sides when a scope opened is moved into view


class GraphView(QWidget):
    selection_changed = Signal(int)        # item id (-1: none)
    layout_ready = Signal()                # a new layout is on screen
    first_painted = Signal()               # the first frame of a new table was painted
    subgraph_requested = Signal(int, str)  # node index, attribute
    bodies_requested = Signal(int)         # node index: open every body (If: then_branch and else_branch)
    counterpart_requested = Signal(int)    # item: show its counterparts in the other side-by-side pane
    profile_requested = Signal(int)        # op: profile the model from it on (the Profile dock, a cut at the op)
    busy = Signal(bool, str)
    problem = Signal(str)
    said = Signal(str)                     # a passing word for the status bar
    overlay_changed = Signal(object)       # the Overlay the nodes are coloured by now (None: op categories)

    def __init__(self, pal: Palette = LIGHT, parent=None):
        super().__init__(parent)
        self.table: GraphTable | None = None
        self.tree: ScopeTree | None = None
        self.expanded: set[int] = {ROOT}
        self.pal = pal
        self.canvas = GraphCanvas(self)
        self.canvas.set_palette(pal)
        self.canvas.value_text = self.overlay_text
        self.search_bar = SearchBar(self)
        self.search_bar.hide()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.search_bar)
        lay.addWidget(self.canvas, 1)
        self.minimap = Minimap(self.canvas, self)
        self.minimap.hide()
        self._layouts = TaskSlot(self)
        self._after_layout: list = []
        self._layout_pending = False
        self._await_first_paint = False
        self.timings: dict = {}
        self.op_w = np.zeros(0)
        self.box_w = np.zeros(0)
        self.titles: list[str] = []  # what each op's node says (gui.labels)
        self.overlay = None
        self.selected_many: list[int] = []  # a multi-selection (Select all matches), else []
        self._overlay_values: dict[int, float] = {}
        self.canvas.item_clicked.connect(self.select)
        self.canvas.item_activated.connect(self.activate)
        self.canvas.frame_toggled.connect(self.collapse)
        self.canvas.frame_clicked.connect(lambda s: self.select(self.tree.n_ops + s))
        self.canvas.navigate.connect(self.navigate)
        self.canvas.painted.connect(self._painted)
        self.search_bar.bind(self)
        # item -> its counterparts in the other side-by-side pane ([] none, None: no linked pane); the pane sets it
        self.counterparts = lambda item: None
        self.profile_why = lambda item: "no Profile dock"  # why "Profile from Here" is greyed out ("": it is not)
        self.last_menu: QMenu | None = None
        self.canvas.setContextMenuPolicy(Qt.CustomContextMenu)
        self.canvas.customContextMenuRequested.connect(self._context_menu_at)
        self._expanding: int | None = None  # the scope item being expanded: the relayout keeps it still
        self._fitted: tuple | None = None  # the view the last automatic fit chose (kept on resize until changed)
        self._fit_whole = False  # the last fit showed the whole graph (View > Fit to Window pressed twice)
        self.canvas.installEventFilter(self)

    # ----- model ------------------------------------------------------------------------------------
    def set_table(self, table: GraphTable, tree: ScopeTree | None = None, expanded=None) -> None:
        self.table = table
        self.tree = tree or ScopeTree(table, io_nodes=True)
        self.short: list | None = None
        self.selected_many = []
        self._measure()
        self.canvas.selected = -1
        self.canvas.set_marked([])
        self.canvas.set_failed([])
        self.canvas.set_fill_override({})
        self.overlay = None           # an overlay describes the previous model's nodes (their indices)
        self._overlay_values = {}
        self.overlay_changed.emit(None)
        self.timings = {}
        self._await_first_paint = True
        self.search_bar.new_model()
        self.relayout(self.tree.default_expanded() if expanded is None else expanded, then=self.fit)

    def clear(self) -> None:
        self._layouts.cancel()
        self._layout_pending = False
        self.table = self.tree = None
        self.canvas.set_scene(None)
        self.minimap.hide()

    def _measure(self) -> None:
        fm_op = QFontMetricsF(self.canvas.font_title)
        t, tree = self.table, self.tree
        self.titles = node_titles(t)
        widths = {op: max(60.0, fm_op.horizontalAdvance(op) + 26.0) for op in set(self.titles)}
        self.op_w = np.fromiter((widths[o] for o in self.titles), np.float64, t.node_count)
        fm_small = QFontMetricsF(self.canvas.font_small)
        self.box_w = np.fromiter(
            (max(110.0, min(340.0, max(fm_op.horizontalAdvance(lbl) + 50.0,
                                       fm_small.horizontalAdvance(f"{c:,} ops \u00b7 group") + 30.0)))
             for lbl, c in zip(tree.label, tree.count.tolist())), np.float64, tree.n_scopes)
        for k, ti in enumerate(tree.io_tensor.tolist()):  # an input / output pill: its name over its shape
            text = max(fm_op.horizontalAdvance(tree.label[tree.n_real_scopes + k]),
                       fm_small.horizontalAdvance(fmt_shape(t.shapes[ti])))
            self.box_w[tree.n_real_scopes + k] = max(70.0, min(300.0, text + 34.0))

    def set_palette(self, pal: Palette) -> None:
        self.pal = pal
        self.canvas.set_palette(pal)
        if self.canvas.scene is not None and self.canvas.scene.n_leaves > 2000:
            self.canvas.overview = render_overview(self.canvas.scene, pal)
        self.minimap.update()

    @property
    def scene(self):
        return self.canvas.scene

    @property
    def layout_busy(self) -> bool:
        """A layout was requested and its result is not on screen yet."""
        return self._layout_pending

    # ----- layout -----------------------------------------------------------------------------------
    def relayout(self, expanded, then=None) -> None:
        """Show exactly `expanded` scopes; `then()` runs once the new layout is on screen."""
        if self.tree is None:
            return
        self.expanded = set(int(s) for s in expanded) | {ROOT}
        self._after_layout = [then] if then else []
        self._layout_pending = True
        self.busy.emit(True, "laying out")
        self._layout_started = time.perf_counter()
        self._layouts.start(_compute_layout, self.tree, frozenset(self.expanded), self.op_w, self.box_w, self.pal,
                            self.titles, self.short, on_done=self._layout_done, on_fail=self._layout_failed, name="layout")

    def _layout_done(self, res) -> None:
        if res is None:
            return
        self._layout_pending = False
        self.short = res["short"]
        keep_view = self.canvas.scene is not None and not self._after_layout
        anchor = self._anchor() if keep_view else None
        self.canvas.set_scene(res["scene"], res["overview"])
        self.timings.setdefault("layout_s", res["layout_s"] + res["scene_s"])
        self.timings["last_layout_s"] = res["layout_s"] + res["scene_s"]
        if anchor is not None:
            self._restore(anchor)
        if self.overlay is not None:
            self._apply_overlay()
        self.minimap._place()
        for fn in self._after_layout:
            fn()
        self._after_layout = []
        self.busy.emit(False, "")
        self.layout_ready.emit()

    minimap_enabled = True

    def _layout_failed(self, msg: str) -> None:
        self._layout_pending = False
        self.busy.emit(False, "")
        self.problem.emit(f"layout failed: {msg}")

    def _anchor(self):
        """The selected (or centre) item and its screen position, to keep it still across relayouts."""
        sc = self.canvas.scene
        item = self._expanding if self._expanding is not None else self.canvas.selected
        self._expanding = None
        if item < 0:
            vx0, vy0, vx1, vy1 = self.canvas.view_rect()
            lf = sc.leaves_in(vx0, vy0, vx1, vy1)
            if len(lf) == 0:
                return None
            item = int(sc.vg.leaves[lf[len(lf) // 2]])
        lf = self.canvas._leaf_showing(sc, item)
        if lf < 0:
            return None
        x, y = (sc.x0[lf] + sc.x1[lf]) / 2, sc.y0[lf]
        return item, x * self.canvas.scale + self.canvas.tx, y * self.canvas.scale + self.canvas.ty

    def _restore(self, anchor) -> None:
        item, sx, sy = anchor
        sc = self.canvas.scene
        lf = self.canvas._leaf_showing(sc, item)
        if lf < 0 and item < sc.vg.n_ops:
            return
        if lf < 0:  # an expanded scope: anchor on its frame
            f = np.flatnonzero(sc.vg.frames == item - sc.vg.n_ops)
            if not len(f):
                return
            fx0, _, fx1, fy1 = sc.frame_box[f[0]]
            x, y = (fx0 + fx1) / 2, sc.frame_box[f[0], 1]
            s = self.canvas.scale
            # its title stays where the box was; a frame running past the pane's sides (titles cut at its left
            # edge, new-user tryout) is zoomed out to the pane's width, as far as titles stay readable, and moved
            # sideways into view, its left side first
            room = self.canvas.width() - 2 * FIT_MARGIN - (self.canvas.right_reserve if self.minimap.isVisible()
                                                            else 0.0)
            if room > 0 and (fx1 - fx0) * s > room:
                s = max(min(s, room / max(1.0, fx1 - fx0)), min(s, TITLE_SCALE))
            tx = sx - x * s
            if fx1 * s + tx > FIT_MARGIN + room:  # past the right side: moved left
                tx = FIT_MARGIN + room - fx1 * s
            if fx0 * s + tx < FIT_MARGIN:  # past the left side (also after that): its left side in view
                tx = FIT_MARGIN - fx0 * s
            # and up, as far as its title stays in view, where it runs below the pane (what opened was out of
            # sight)
            ty = sy - y * s
            below = fy1 * s + ty - (self.canvas.height() - FIT_MARGIN)
            if below > 0:
                ty -= max(0.0, min(below, y * s + ty - FIT_MARGIN))
            self.canvas.set_view(s, tx, ty)
            return
        x, y = (sc.x0[lf] + sc.x1[lf]) / 2, sc.y0[lf]
        s = self.canvas.scale
        self.canvas.set_view(s, sx - x * s, sy - y * s)

    def _painted(self, ms: float) -> None:
        if self._await_first_paint and self.canvas.scene is not None:
            self._await_first_paint = False
            self.first_painted.emit()

    # ----- overlays ---------------------------------------------------------------------------------
    def set_overlay(self, overlay) -> None:
        """Colour nodes by an inspector.overlay.Overlay (None: back to op categories). A collapsed scope takes
        the overlay's combination (sum or max) of the ops inside it."""
        self.overlay = overlay
        self._overlay_values = overlay.node_values(self.table) if (overlay and self.table) else {}
        self._apply_overlay()
        self.overlay_changed.emit(overlay)  # docks that name what the graph shows (Profile's "On the graph")

    def _harmless_ops(self) -> set[int]:
        """The ops an error overlay paints amber: its `harmless` nodes (with a `harmless_colour` to paint them)."""
        meta = getattr(self.overlay, "meta", None) or {}
        if not meta.get("harmless_colour") or self.table is None:
            return set()
        ops = (self.table.index_of(name) for name in meta.get("harmless") or ())
        return {op for op in ops if op is not None}

    def overlay_text(self, item: int) -> str | None:
        """What the overlay colouring the nodes says of a drawn node ("profile time: 2.06 ms, the sum over its ops"
        for a collapsed scope), None without an overlay: the colours alone gave no number (tryout 6)."""
        sc, ov = self.canvas.scene, self.overlay
        if sc is None or ov is None or not 0 <= item < len(sc.leaf_of_item):
            return None
        lf = int(sc.leaf_of_item[item])
        if lf < 0:
            return None
        v = leaf_values(self).get(lf)
        if v is None:
            muted = item < self.tree.n_ops and self.table.ids[item] in ov.muted
            return f"{ov.name}: " + ((getattr(ov, "meta", None) or {}).get("muted_why", "not measured") if muted
                                     else "no value here")
        box = item >= self.tree.n_ops
        how = {"sum": "the sum", "max": "the largest"}.get(ov.aggregate, ov.aggregate)
        meta = getattr(ov, "meta", None) or {}
        name = None if box else self.table.names[item] or self.table.ids[item]
        owner = meta.get("via", {}).get(name) if name else None
        harmless = bool(name) and name in (meta.get("harmless") or ())
        if box:  # a collapsed scope whose every op with a value is harmless (painted amber)
            harmless = lf in leaf_values_detail(self)[1]
        unread = harmless and name in (meta.get("unread") or ())
        floor = meta.get("floor")
        said = f"none (under {fmt_value(floor, ov.unit)})" if floor is not None and v <= floor else \
            fmt_value(v, ov.unit)
        return f"{ov.name}: {said}" + (f", {how} over the ops inside" if box else "") + \
            (f" (of {owner}'s region: the ONNX ops MNN fused into one op)" if owner else "") + \
            (" \u2014 harmless: nothing in the model reads this output" if unread else
             " \u2014 harmless: its error dies out before the outputs in this run" if harmless else "") + \
            (f"; {meta['unit_help']}" if meta.get("unit_help") and not box else "")

    def _apply_overlay(self) -> None:
        sc = self.canvas.scene
        # a scene of the previous model (the new one's layout not on screen yet) cannot take this model's op
        # indices: reopening a compared model drew its overlay on the other model's scene, IndexError (tryout 13);
        # the layout, once done, applies it
        if sc is None or self.overlay is None or sc.vg.tree is not self.tree:
            self.canvas.set_fill_override({})
            return
        values, harmless = leaf_values_detail(self)
        amber = (getattr(self.overlay, "meta", None) or {}).get("harmless_colour")
        # every op a leaf shows harmless: amber, as the depth plot's points (not red as a culprit)
        fills = {lf: amber if lf in harmless else self.overlay.scale.colour(v) for lf, v in values.items()}
        grey = self.canvas.pal.categories.get("muted")
        for key in self.overlay.muted:  # not measured: neither an op colour nor the ramp's cold end
            op = self.table.index_of(key)
            rep = int(sc.vg.rep[op]) if op is not None else -1
            lf = int(sc.leaf_of_item[rep]) if rep >= 0 else -1
            if lf >= 0 and lf not in fills and grey:
                fills[lf] = grey
        self.canvas.set_fill_override(fills)

    # ----- expand / collapse ------------------------------------------------------------------------
    def expand(self, scope: int) -> None:
        if self.tree is not None and scope not in self.expanded:
            # the scope opened stays where its box was (its title, then its first ops, stay in view); anchoring on
            # the centre item instead pushed a scope expanded at fit zoom above the view
            self._expanding = self.tree.n_ops + scope
            self.relayout(self.expanded | {scope} | set(self.tree.ancestors(scope)))

    def collapse(self, scope: int) -> None:
        if self.tree is None or scope == ROOT:
            return
        gone = {s for s in self.expanded if scope in self.tree.ancestors(s)}
        self.relayout(self.expanded - gone)
        if self.canvas.selected >= 0 and self.canvas.selected < self.tree.n_ops:
            pass
        self.select(self.tree.n_ops + scope)

    def expand_all(self) -> None:
        if self.tree is not None:
            self.relayout(set(range(self.tree.n_scopes)), then=self.fit)

    def collapse_all(self) -> None:
        if self.tree is not None:
            self.relayout({ROOT}, then=self.fit)

    # ----- fitting ----------------------------------------------------------------------------------
    def fit(self) -> None:
        """Fit the graph to the canvas, and keep it fitted as the canvas resizes (side by side opening, the
        window resizing) until the user pans or zooms."""
        self.canvas.fit()
        self._fitted = self._view_key()
        self._fit_whole = False

    def fit_pressed(self) -> None:
        """View > Fit to Window: the fit at a readable size; pressed again where that changes nothing (a tall
        graph already shown by its width from the top: the button seemed broken), the whole graph however
        small, and again the readable fit."""
        if self.canvas.scene is None:
            return
        before = self._view_key()
        whole_before = self._fit_whole and self._fitted == before
        self.fit()
        if whole_before or not self._same_view(before, self._view_key()):
            self.said.emit("Fit: at a readable size; Fit again shows the whole graph"
                           if self._view_key() != self.canvas.whole_view() else "Fit: the whole graph")
            return
        self.canvas.fit_all()
        self._fitted = self._view_key()
        self._fit_whole = not self._same_view(before, self._fitted)  # a small graph: the two fits are one
        self.said.emit("Fit: the whole graph; Fit again for a readable size" if self._fit_whole else
                       "Fit: the whole graph")

    @staticmethod
    def _same_view(a: tuple, b: tuple) -> bool:
        return abs(a[0] - b[0]) <= 1e-3 * max(a[0], b[0]) and abs(a[1] - b[1]) < 2 and abs(a[2] - b[2]) < 2

    def _view_key(self) -> tuple:
        c = self.canvas
        return (c.scale, c.tx, c.ty)

    def eventFilter(self, obj, e) -> bool:
        if obj is self.canvas and e.type() == QEvent.Resize and self.canvas.scene is not None:
            if self._fitted is not None and self._fitted == self._view_key():
                if self._fit_whole:
                    self.canvas.fit_all()
                    self._fitted = self._view_key()
                else:
                    self.fit()
            else:
                self._fitted = None  # moved by the user since: keep what they looked at in the middle
                self._keep_centre(e.oldSize(), e.size())
        return super().eventFilter(obj, e)

    def _keep_centre(self, old, new) -> None:
        """The scene point at the centre of the view stays at the centre when the pane is resized (a pane
        halved by side by side kept its left edge, and the graph the user looked at ended cut off at the side)."""
        if old.width() <= 0 or old.height() <= 0:
            return
        c = self.canvas
        dx, dy = (new.width() - old.width()) / 2, (new.height() - old.height()) / 2
        if dx or dy:
            tx, ty = c.tx + dx, c.ty + dy
            # along a side where the whole graph fits, none of it is left cut off at the edge: a pane that grew back
            # when side by side closed kept the centre and cut encoder/layer.0 at the right, with empty room at the
            # left (tryout 19)
            x0, y0, x1, y1 = c.scene.bounds
            tx = self._inside(x0 * c.scale + tx, x1 * c.scale + tx, new.width()) + tx
            ty = self._inside(y0 * c.scale + ty, y1 * c.scale + ty, new.height()) + ty
            c.set_view(c.scale, tx, ty)

    @staticmethod
    def _inside(lo: float, hi: float, size: float, margin: float = 8.0) -> float:
        """The shift that brings [lo, hi] (screen pixels) inside [0, size] where it fits; 0 where it does not, or
        is inside already."""
        if hi - lo > size - 2 * margin:
            return 0.0
        if lo < margin:
            return margin - lo
        if hi > size - margin:
            return size - margin - hi
        return 0.0

    def activate(self, item: int) -> None:
        """Double click / Enter: a box expands, an op with bodies opens them, a frame collapses."""
        if self.tree is None:
            return
        n = self.tree.n_ops
        if item >= n:
            s = item - n
            if self.tree.is_io(s):
                return
            if s in self.expanded:
                self.collapse(s)
            else:
                self.expand(s)
            return
        if self.table.subgraphs.get(item):
            self.bodies_requested.emit(item)

    # ----- context menu -----------------------------------------------------------------------------
    def _context_menu_at(self, pos) -> None:
        if self.canvas.scene is None or self.tree is None:
            return
        p = QPointF(pos)
        item = self.canvas.item_at(p)
        if item < 0:
            f, _ = self.canvas.frame_hit(p)
            if f >= 0:
                item = self.tree.n_ops + int(self.canvas.scene.vg.frames[f])
        if item < 0:
            return
        self.select(item)
        self.last_menu = self.context_menu(item)
        self.last_menu.setAttribute(Qt.WA_DeleteOnClose)
        self.last_menu.popup(self.canvas.mapToGlobal(pos))

    def _copy_name(self, name: str) -> None:
        """The clipboard takes the name, and the status bar says so (it gave no sign: tryout 2026-12-04)."""
        QGuiApplication.clipboard().setText(name)
        self.said.emit(f"Copied: {name}")

    def context_menu(self, item: int) -> QMenu:
        """What right-clicking an op, box or frame offers: copy its name, show it in the other pane, open its
        bodies, expand / collapse."""
        menu = QMenu(self)
        menu.setToolTipsVisible(True)
        t, tree, n = self.table, self.tree, self.tree.n_ops
        io = item >= n and tree.is_io(item - n)
        if item < n:
            name = t.names[item] or t.ids[item]
        else:
            name = tree.label[item - n] if io else tree.display_path(item - n)
        menu.addAction("Copy Name", lambda: self._copy_name(name))
        others = self.counterparts(item) if item < n else None
        show = menu.addAction("Show in Other Pane", lambda: self.counterpart_requested.emit(item))
        show.setEnabled(bool(others))
        if not others:
            # why, in its own words: greyed out alone, a new user could not tell (a disabled item's tooltip is
            # easy to miss)
            show.setText("Show in Other Pane (no other pane open)" if others is None else
                         "Show in Other Pane (no counterpart there)")
            show.setToolTip("open this model's conversion side by side (File \u25b8 Open Side by Side)"
                            if others is None else "no counterpart in the other model")
        if item < n:
            why = self.profile_why(item)
            prof = menu.addAction("Profile from Here", lambda: self.profile_requested.emit(item))
            prof.setEnabled(not why)
            prof.setToolTip(why or "time this op and everything after it (the model cut here, fed with the values "
                                   "ONNX Runtime computes for the cut's inputs), on the Profile dock's engine")
        menu.addSeparator()
        if item < n:
            for attr in t.subgraphs.get(item, {}):
                menu.addAction(f"Open {attr}", lambda a=attr: self.subgraph_requested.emit(item, a))
            parent = int(tree.node_parent[item])
            if parent != ROOT:
                menu.addAction(f"Collapse {tree.label[parent]}", lambda: self.collapse(parent))
        elif not io:
            s = item - n
            if s in self.expanded:
                menu.addAction("Collapse", lambda: self.collapse(s))
            else:
                menu.addAction("Expand", lambda: self.expand(s))
        return menu

    # ----- selection and navigation ------------------------------------------------------------------
    def select(self, item: int, center: bool = False) -> None:
        self.selected_many = []
        self.canvas.set_selected(item)
        if center and item >= 0 and self.canvas.scene is not None:
            self.canvas.show_leaf(self.canvas._leaf_showing(self.canvas.scene, item))
        self.selection_changed.emit(item)

    def select_many(self, items) -> None:
        """Select several ops at once (Select all matches): all outlined, Properties lists them."""
        items = [int(i) for i in items]
        self.canvas.set_marked(items)
        self.canvas.set_selected(-1)
        self.selected_many = items
        self.selection_changed.emit(-1)

    def reveal(self, op: int, select: bool = True) -> None:
        """Make op visible (expanding its scopes), then centre and select it."""
        if self.tree is None:
            return
        def show():
            if select:
                self.select(op, center=True)
            else:
                self.canvas.show_leaf(self.canvas._leaf_showing(self.canvas.scene, op))

        need = set(self.tree.node_ancestors(op))
        if need <= self.expanded and self.canvas.scene is not None:
            show()
            return
        if select:
            self.canvas.selected = op
        self.relayout(self.expanded | need, then=show)

    def keyPressEvent(self, e) -> None:
        """Esc with the graph focused closes this pane's Find bar (its own Esc works only while it has the focus:
        tryout 9 clicked a match on the graph and Esc did nothing). The canvas passes keys it does not use here."""
        if e.key() == Qt.Key_Escape and self.search_bar.isVisible():
            self.search_bar.close_bar()
            e.accept()
            return
        super().keyPressEvent(e)

    def navigate(self, direction: str) -> None:
        """Arrow keys: to a producer or consumer of the selected op, or its neighbours in the same layer."""
        t, item = self.table, self.canvas.selected
        sc = self.canvas.scene
        if t is None or sc is None or item < 0:
            return
        n = t.node_count
        if direction in ("producer", "consumer"):
            if item < n:
                near = t.producers_of(item) if direction == "producer" else t.consumers_of(item)
                near = [j for j in near if not self.tree.hidden[j]]
            else:  # a box: ops feeding it / fed by it
                vg = sc.vg
                if direction == "producer":
                    near = vg.edge_src[vg.edge_dst == item].tolist()
                else:
                    near = vg.edge_dst[vg.edge_src == item].tolist()
            if near:
                target = near[0]
                if target < n and self.canvas._leaf_showing(sc, target) >= 0 and sc.leaf_of_item[target] < 0:
                    target = int(sc.vg.rep[target])  # hidden in a collapsed box: go to the box
                self.select(target, center=True)
            return
        lf = self.canvas._leaf_showing(sc, item)
        if lf < 0:
            return
        cy = (sc.y0[lf] + sc.y1[lf]) / 2
        row = np.flatnonzero((sc.y0 <= cy) & (sc.y1 >= cy))
        row = row[np.argsort(sc.x0[row])]
        k = int(np.flatnonzero(row == lf)[0])
        k = k - 1 if direction == "left" else k + 1
        if 0 <= k < len(row):
            self.select(int(sc.vg.leaves[row[k]]), center=True)

    def show_search(self) -> None:
        self.search_bar.show()
        self.search_bar.focus()
        self.minimap._place()

    def resizeEvent(self, e) -> None:
        super().resizeEvent(e)
        self.minimap._place()

    def shutdown(self) -> None:
        self._layouts.shutdown()
