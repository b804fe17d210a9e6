"""What the canvas draws, as arrays prepared off the UI thread: rectangles, categories, edge path elements,
and the indexes used to cull to the view and to hit-test (no Qt objects here)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mnnscope.inspector.model.labelroom import LABEL_H, free_spot, header_blocks, label_room
from mnnscope.inspector.model.layout import Layout
from mnnscope.inspector.model.scopes import VisibleGraph

from mnnscope.gui.paths import edge_elements
from mnnscope.gui.labels import title_category
from mnnscope.gui.theme import CATEGORIES

SCOPE_CATEGORY = CATEGORIES.index("scope")
IO_CATEGORY = CATEGORIES.index("io")
MAX_LABEL_SHIFT = 40.0  # a label kept right of its edges starts at most this much further right, past one
MIN_LEFT_ROOM = 24.0  # a label moves left of its edges (away from one heading right) only with this much room
GLYPH = 14.0  # a frame's collapse glyph (scene units): 6 from its frame's right side unless an edge passes there


@dataclass
class Scene:
    vg: VisibleGraph
    layout: Layout
    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    cat: np.ndarray
    is_box: np.ndarray        # a collapsed scope's box
    is_io: np.ndarray         # a graph input or output node (a pill)
    by_y: np.ndarray          # leaves sorted by centre y (for culling and hit tests)
    y_sorted: np.ndarray
    half_h: float             # the tallest leaf's half height
    frame_box: np.ndarray
    frame_order: np.ndarray   # frames, shallow first (drawing order)
    edge_types: np.ndarray
    edge_xy: np.ndarray
    edge_eptr: np.ndarray
    line_types: np.ndarray    # the same edges as straight lines (cheap when zoomed out)
    line_xy: np.ndarray
    line_eptr: np.ndarray
    edge_box: np.ndarray      # (m, 4) bounding box of each edge
    edge_end: np.ndarray      # (m, 2) target port
    edge_up: np.ndarray       # edge arrives from below
    edge_label_at: np.ndarray  # (m, 2) where a tensor label goes
    leaf_of_item: np.ndarray  # item id -> leaf index, -1 when not drawn
    bounds: tuple
    titles: list              # op -> what its node says (gui.labels)
    short: list               # op -> the short name that tells it from the same-titled ops ('' for none)
    edge_label_room: np.ndarray | None = None  # (m,) how wide each tensor label may be (model/labelroom.py)
    edge_label_depth: np.ndarray | None = None  # (m,) depth of the frame each label is in (-1: none): its fill
    edge_label_left: np.ndarray | None = None  # (m,) the label ends at edge_label_at (left of its edges)
    frame_blocked: list | None = None  # per frame: the stretches (x from, x to) of its title bar edges pass through
    glyph_x: np.ndarray | None = None  # per frame: the left side of its collapse glyph

    @property
    def n_leaves(self) -> int:
        return len(self.x0)

    def leaves_in(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
        lo = np.searchsorted(self.y_sorted, y0 - self.half_h, "left")
        hi = np.searchsorted(self.y_sorted, y1 + self.half_h, "right")
        cand = self.by_y[lo:hi]
        keep = (self.x1[cand] >= x0) & (self.x0[cand] <= x1) & (self.y1[cand] >= y0) & (self.y0[cand] <= y1)
        return np.sort(cand[keep])

    def leaf_at(self, x: float, y: float) -> int:
        c = self.leaves_in(x, y, x, y)
        return int(c[0]) if len(c) else -1

    def frames_in(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
        b = self.frame_box
        if len(b) == 0:
            return np.zeros(0, np.int64)
        f = self.frame_order
        keep = (b[f, 2] >= x0) & (b[f, 0] <= x1) & (b[f, 3] >= y0) & (b[f, 1] <= y1)
        return f[keep]

    def frame_at(self, x: float, y: float) -> int:
        """The innermost frame under a point (-1 if none)."""
        f = self.frames_in(x, y, x, y)
        return int(f[-1]) if len(f) else -1

    def edges_in(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
        b = self.edge_box
        return np.flatnonzero((b[:, 2] >= x0) & (b[:, 0] <= x1) & (b[:, 3] >= y0) & (b[:, 1] <= y1))


def _first_reach(start: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per edge, how far right (negative: left) it has gone 12 units below (above) where it leaves: through the
    line of the label written there, or not."""
    dy = np.abs(second[:, 1] - start[:, 1])
    return (second[:, 0] - start[:, 0]) * np.minimum(1.0, 12.0 / np.maximum(dy, 1e-9))


def _labels_to_the_left(places, back, reach, room, boxes, frames, in_frame, parent) -> np.ndarray:
    """Per label place, whether its text goes to the left of where its edges leave (right-aligned there): where
    an edge leaving that place heads right through the label's line (the text hid it: `1xseq` under input_ids
    over the edge to the embedding's Gather) and none heads left, and the left has room (computed as the right
    side's, mirrored, with the labels staying on the right as obstacles as long as their room). `room` is
    updated to the left side's room for those that move."""
    P = len(places)
    right, left = np.zeros(P, bool), np.zeros(P, bool)
    np.logical_or.at(right, back, reach > 3.0)
    np.logical_or.at(left, back, reach < -3.0)
    out = np.zeros(P, bool)
    cand = np.flatnonzero(right & ~left)
    ax, ay = places[:, 0], places[:, 1]
    fm = np.stack([-frames[:, 2], frames[:, 1], -frames[:, 0], frames[:, 3]], axis=1) if len(frames) else frames
    while len(cand):
        # those without room on the left stay on the right, in the way of the others: counted again without them
        stay = np.setdiff1d(np.arange(P), cand)
        obst = np.concatenate([boxes, np.stack([ax[stay], ay[stay], ax[stay] + room[stay], ay[stay] + LABEL_H], 1)])
        mirror = np.stack([-obst[:, 2], obst[:, 1], -obst[:, 0], obst[:, 3]], axis=1)
        lroom = label_room(-(ax[cand] - 8.0), ay[cand], mirror, fm, in_frame[cand], parent)
        ok = lroom >= MIN_LEFT_ROOM
        if ok.all():
            out[cand] = True
            room[cand] = lroom
            break
        cand = cand[ok]
    return out


def _labels_past_their_edges(places, back, reach, room, left) -> np.ndarray:
    """Per label place kept right of where its edges leave, how far right it starts later: past an edge of its
    own heading right through its line (edges leaving both ways, or no room on the left), where that is a
    short way and leaves it room; `room` is cut by as much (it ends where it did)."""
    far = np.zeros(len(places))
    np.maximum.at(far, back, reach)
    shift = np.where(left, 0.0, np.maximum(far + 3.0 - 4.0, 0.0))  # the text starts 4 right of the edges' start
    shift[(far <= 3.0) | (shift > MAX_LABEL_SHIFT) | (room - shift < MIN_LEFT_ROOM)] = 0.0
    room -= shift
    return shift


def build_scene(vg: VisibleGraph, lay: Layout, titles: list | None = None, short: list | None = None) -> Scene:
    t, tree = vg.tree.table, vg.tree
    titles = list(t.op_types) if titles is None else titles
    n = tree.n_ops
    items = vg.leaves
    x0, x1 = lay.x - lay.w / 2, lay.x + lay.w / 2
    y0, y1 = lay.y - lay.h / 2, lay.y + lay.h / 2
    is_io = items >= n + tree.n_real_scopes
    is_box = (items >= n) & ~is_io
    cats = {k: title_category(*k) for k in set(zip(t.op_types, titles))}
    cat = np.full(len(items), SCOPE_CATEGORY, np.int64)
    cat[is_io] = IO_CATEGORY
    is_op = items < n
    ops = items[is_op]
    cat[is_op] = np.fromiter((cats[t.op_types[i], titles[i]] for i in ops.tolist()), np.int64, len(ops))
    by_y = np.argsort(lay.y, kind="stable")
    frame_order = np.argsort(lay.frame_depth, kind="stable")
    ptr, pts = lay.edge_ptr, lay.edge_pts
    etypes, exy, eptr = edge_elements(ptr, pts, curved=True)
    ltypes, lxy, leptr = edge_elements(ptr, pts, curved=False)
    m = len(ptr) - 1
    if m:
        owner = np.repeat(np.arange(m), np.diff(ptr))
        ebox = np.empty((m, 4))
        for j, (fn, col) in enumerate(((np.minimum, 0), (np.minimum, 1), (np.maximum, 0), (np.maximum, 1))):
            v = np.full(m, np.inf if fn is np.minimum else -np.inf)
            fn.at(v, owner, pts[:, col])
            ebox[:, j] = v
        end = pts[ptr[1:] - 1]
        before = pts[ptr[1:] - 2]
        up = before[:, 1] > end[:, 1]
        # a tensor's shape is written once, just below the op that makes it (edges into one op would
        # pile their labels up at its top)
        start = pts[ptr[:-1]]
        leaves_up = pts[ptr[:-1] + 1, 1] < start[:, 1]
        label_at = np.stack([start[:, 0] + 4.0, np.where(leaves_up, start[:, 1] - 12.0, start[:, 1] + 2.0)], axis=1)
    else:
        ebox = np.zeros((0, 4))
        end = np.zeros((0, 2))
        up = np.zeros(0, bool)
        label_at = np.zeros((0, 2))
    leaf_of_item = np.full(n + tree.n_scopes, -1, np.int64)
    leaf_of_item[items] = np.arange(len(items))
    if len(items):
        bx0 = min(float(x0.min()), float(lay.frame_box[:, 0].min()) if len(lay.frame_box) else np.inf)
        by0 = min(float(y0.min()), float(lay.frame_box[:, 1].min()) if len(lay.frame_box) else np.inf)
        bx1 = max(float(x1.max()), float(lay.frame_box[:, 2].max()) if len(lay.frame_box) else -np.inf)
        by1 = max(float(y1.max()), float(lay.frame_box[:, 3].max()) if len(lay.frame_box) else -np.inf)
        if m:  # edges routed around the nodes may run further out than any node (fit cut them off at the left)
            bx0, by0 = min(bx0, float(ebox[:, 0].min())), min(by0, float(ebox[:, 1].min()))
            bx1, by1 = max(bx1, float(ebox[:, 2].max())), max(by1, float(ebox[:, 3].max()))
    else:
        bx0 = by0 = 0.0
        bx1 = by1 = 1.0
    room, depth, left_lab = np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool)
    if m:
        # one label per place (the texts of several tensors at one place are joined where they are written)
        places, first, back = np.unique(label_at, axis=0, return_index=True, return_inverse=True)
        frame_of_scope = np.full(tree.n_scopes, -1, np.int64)
        frame_of_scope[vg.frames] = np.arange(len(vg.frames))
        src_leaf = leaf_of_item[vg.edge_src]
        in_frame = frame_of_scope[vg.parent_of_leaf[src_leaf[first]]]
        back = back.reshape(-1)
        boxes = np.stack([x0, y0, x1, y1], axis=1)
        parent = frame_of_scope[vg.parent_of_frame]
        room_p = label_room(places[:, 0], places[:, 1], boxes, lay.frame_box, in_frame, parent)
        reach = _first_reach(start, pts[ptr[:-1] + 1])
        left_p = _labels_to_the_left(places, back, reach, room_p, boxes, lay.frame_box, in_frame, parent)
        left_lab = left_p[back]
        label_at[left_lab, 0] -= 8.0  # the right end of the text, 4 left of where the edges leave
        label_at[:, 0] += _labels_past_their_edges(places, back, reach, room_p, left_p)[back]
        room = room_p[back]
        depth = np.where(in_frame >= 0, lay.frame_depth[np.maximum(in_frame, 0)] if len(vg.frames) else 0,
                         -1)[back]
    fb = lay.frame_box
    blocked = header_blocks(fb, ptr, pts)
    glyph_x = fb[:, 2] - GLYPH - 6 if len(fb) else np.zeros(0)
    for f, iv in enumerate(blocked):  # the glyph where no edge passes, as far right as that allows
        if iv and free_spot(glyph_x[f] - 2, fb[f, 2] - 4, iv, GLYPH + 4) is None:
            at = free_spot(fb[f, 0] + 8, fb[f, 2] - 4, iv, GLYPH + 4, from_right=True)
            if at is not None:
                glyph_x[f] = at + 2
    return Scene(vg, lay, x0, y0, x1, y1, cat, is_box, is_io, by_y, lay.y[by_y],
                 float(lay.h.max() / 2) if len(items) else 0.0, lay.frame_box, frame_order,
                 etypes, exy, eptr, ltypes, lxy, leptr, ebox, end, up, label_at, leaf_of_item,
                 (bx0, by0, bx1, by1), titles, [""] * n if short is None else short, room, depth, left_lab,
                 blocked, glyph_x)
