"""Room for the tensor labels written under the ops that make them: how far right each may run before it would
run into another label, a node or a frame, so the canvas shortens it there instead of writing text over text.

A label is a line of text whose left top corner is its anchor; its room is the distance to the nearest thing to
its right on the same line (another label's anchor, a node's left side, a frame's left side) and to the right side
of the frame it is in, less a gap; a label whose anchor is already covered by a node has none.
"""
from __future__ import annotations

import numpy as np

LABEL_H = 10.0    # the canvas writes labels in an 8-unit font: a line is 10 units tall
GAP = 4.0         # kept free between a label and what follows it
MAX_ROOM = 400.0  # no label runs further than this


def label_room(ax: np.ndarray, ay: np.ndarray, boxes: np.ndarray, frames: np.ndarray, in_frame: np.ndarray,
               frame_parent: np.ndarray | None = None, label_h: float = LABEL_H, gap: float = GAP,
               max_room: float = MAX_ROOM) -> np.ndarray:
    """Per label (anchor ax, ay: left top), the width it may take. boxes: (L, 4) node boxes x0, y0, x1, y1;
    frames: (F, 4) frame boxes; in_frame: per label the index of the innermost frame its anchor is in (-1:
    none); frame_parent: per frame the index of the frame it is in (-1: none; default: none). Labels with the
    same anchor are one label (their texts are joined where they are written)."""
    K = len(ax)
    room = np.full(K, max_room + gap)
    if K == 0:
        return np.zeros(0)
    # obstacles: the other labels (a line of text starting at its anchor) and the nodes
    ox0 = np.concatenate([ax, boxes[:, 0]])
    oy0 = np.concatenate([ay, boxes[:, 1]])
    ox1 = np.concatenate([ax, boxes[:, 2]])
    oy1 = np.concatenate([ay + label_h, boxes[:, 3]])
    order = np.argsort(oy0, kind="stable")
    sy0 = oy0[order]
    tallest = float((oy1 - oy0).max())
    # candidates of label i: obstacles starting less than `tallest` above its line and before its line ends
    lo = np.searchsorted(sy0, ay - tallest, "right")
    hi = np.searchsorted(sy0, ay + label_h, "left")
    _nearest(room, ax, lo, hi, order, lambda who, j: _on_line(j, who, K, ax, ay, ox1, oy0, oy1, label_h), ox0)
    F = len(frames)
    if F:
        inner = in_frame >= 0
        room[inner] = np.minimum(room[inner], frames[in_frame[inner], 2] - ax[inner])
        # frames right of a label on its line: only those directly inside the label's own frame (or at the top
        # level) can be; any other is beyond its own frame's side, or inside one of those
        par = (np.full(F, -1, np.int64) if frame_parent is None else np.asarray(frame_parent, np.int64)) + 1
        by_parent = np.argsort(par, kind="stable")
        count = np.bincount(par, minlength=F + 1)
        first = np.cumsum(count) - count
        own = in_frame + 1
        _nearest(room, ax, first[own], first[own] + count[own], by_parent,
                 lambda who, c: (frames[c, 0] > ax[who]) & (frames[c, 1] < ay[who] + label_h) &
                 (frames[c, 3] > ay[who]), frames[:, 0])
    return np.clip(room - gap, 0.0, max_room)


def _nearest(room, ax, lo, hi, order, hits, left) -> None:
    """room[i] = min(room[i], left[j] - ax[i]) over the candidates j = order[lo[i]:hi[i]] that `hits`."""
    cnt = np.maximum(hi - lo, 0)
    total = int(cnt.sum())
    if not total:
        return
    who = np.repeat(np.arange(len(ax)), cnt)
    j = order[_ranges(lo, cnt)]
    hit = hits(who, j)
    if hit.any():
        np.minimum.at(room, who[hit], left[j[hit]] - ax[who[hit]])


def _ranges(lo: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """lo[0], ..., lo[0] + cnt[0] - 1, lo[1], ...: the ranges one after the other."""
    cnt = np.maximum(cnt, 0)
    return np.repeat(lo, cnt) + np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)


def _on_line(j, who, K, ax, ay, ox1, oy0, oy1, label_h):
    """Obstacle j is on label who's line and in its way: a label starting right of its anchor, or at the same x
    on a line above (of two labels one above the other at one x, the lower gives way); a node not wholly left
    of the anchor."""
    hit = (oy1[j] > ay[who]) & (oy0[j] < ay[who] + label_h)
    lab = j < K
    jj = np.where(lab, j, 0)
    return hit & np.where(lab, (ax[jj] > ax[who]) | ((ax[jj] == ax[who]) & (ay[jj] < ay[who])), ox1[j] > ax[who])


def header_blocks(frames: np.ndarray, ptr: np.ndarray, pts: np.ndarray, head: float = 28.0,
                  pad: float = 4.0, bin_h: float = 256.0) -> list[list[tuple[float, float]]]:
    """Per frame (F, 4 boxes), the stretches of its title bar (the top `head` units) that edges pass through, as
    (x from, x to), from the left (they may overlap: free_spot steps over them): the edges entering the frame at
    its top and running down from there, and any other that crosses the bar, so that the title and the collapse
    glyph go where no edge is (an edge's path under a title is hidden by its fill; a title written over an edge
    is struck through). ptr, pts: the edges' polylines. Segments are found per frame through bins of `bin_h`
    units of height."""
    out: list[list[tuple[float, float]]] = [[] for _ in range(len(frames))]
    if len(frames) == 0 or len(pts) < 2:
        return out
    ok = np.ones(len(pts) - 1, bool)
    ok[np.asarray(ptr[1:-1], np.int64) - 1] = False  # from one edge's last point to the next edge's first
    seg = np.flatnonzero(ok)
    a, b = pts[seg], pts[seg + 1]
    ylo, yhi = np.minimum(a[:, 1], b[:, 1]), np.maximum(a[:, 1], b[:, 1])
    blo, bhi = np.floor(ylo / bin_h).astype(np.int64), np.floor(yhi / bin_h).astype(np.int64)
    cnt = bhi - blo + 1
    ent_seg = np.repeat(np.arange(len(seg)), cnt)
    ent_bin = _ranges(blo, cnt)
    o = np.argsort(ent_bin, kind="stable")
    ent_seg, ent_bin = ent_seg[o], ent_bin[o]
    fy0, fy1 = frames[:, 1], frames[:, 1] + head
    pairs_f, pairs_s = [], []
    for fb in (np.floor(fy0 / bin_h).astype(np.int64), np.floor(fy1 / bin_h).astype(np.int64)):
        lo, hi = np.searchsorted(ent_bin, fb, "left"), np.searchsorted(ent_bin, fb, "right")
        c = hi - lo
        pairs_f.append(np.repeat(np.arange(len(frames)), c))
        pairs_s.append(ent_seg[_ranges(lo, c)])
    pf, ps = np.concatenate(pairs_f), np.concatenate(pairs_s)
    if len(pf) == 0:
        return out
    key = np.unique(pf * len(seg) + ps)
    pf, ps = key // len(seg), key % len(seg)
    keep = (yhi[ps] > fy0[pf]) & (ylo[ps] < fy1[pf])  # through the bar, not only touching its top
    pf, ps = pf[keep], ps[keep]
    ax, ay, bx, by = a[ps, 0], a[ps, 1], b[ps, 0], b[ps, 1]
    dy = by - ay
    flat = np.abs(dy) < 1e-9
    sdy = np.where(flat, 1.0, dy)
    t0 = np.clip(np.where(flat, 0.0, (fy0[pf] - ay) / sdy), 0.0, 1.0)
    t1 = np.clip(np.where(flat, 1.0, (fy1[pf] - ay) / sdy), 0.0, 1.0)
    xa, xb = ax + (bx - ax) * t0, ax + (bx - ax) * t1
    x_lo = np.maximum(np.minimum(xa, xb) - pad, frames[pf, 0])
    x_hi = np.minimum(np.maximum(xa, xb) + pad, frames[pf, 2])
    inside = x_hi > x_lo
    o = np.lexsort((x_lo, pf))  # by frame, then from the left
    o = o[inside[o]]
    for f, lo_, hi_ in zip(pf[o].tolist(), x_lo[o].tolist(), x_hi[o].tolist()):
        out[f].append((lo_, hi_))
    return out


def free_spot(lo: float, hi: float, blocked: list[tuple[float, float]], width: float,
              from_right: bool = False) -> float | None:
    """The leftmost (or rightmost) x in [lo, hi - width] where [x, x + width] meets no blocked stretch, else
    None."""
    gaps, at = [], lo
    for a, b in blocked:
        if a > at:
            gaps.append((at, min(a, hi)))
        at = max(at, b)
    if at < hi:
        gaps.append((at, hi))
    fits = [(a, b) for a, b in gaps if b - a >= width]
    if not fits:
        return None
    return fits[-1][1] - width if from_right else fits[0][0]
