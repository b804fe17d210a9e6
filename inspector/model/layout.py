"""Layered (Sugiyama-style) top-to-bottom layout of a visible graph, in numpy.

Each expanded scope is laid out on its own (its children: ops, collapsed boxes, nested frames), deepest
first, so a frame's size is known before its parent is laid out; all scopes at one depth go through the
layered layout together, as one batch of independent problems, which keeps the work vectorised even
with thousands of small scopes. Within a problem:

1. layers by longest path (one pass over the edges in topological order; sources are pulled down next
   to their first consumer so constants do not hang at the top),
2. dummy nodes on edges that span several layers (edges longer than `long_span` layers are drawn
   straight instead, so one tensor read by every layer cannot create millions of dummies),
3. order within layers by a few barycentre sweeps, all layers at once,
4. x by repeatedly moving nodes towards the mean of their neighbours and resolving overlaps with
   segmented running max/min (no per-layer Python loop), y by layer heights.

The result is arrays (positions, sizes, frames, edge polylines), never Qt objects.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mnnscope.inspector.model.scopes import ROOT, VisibleGraph

NODE_GAP, DUMMY_GAP, LAYER_GAP = 20.0, 8.0, 30.0
FRAME_PAD, FRAME_HEAD = 14.0, 28.0
DUMMY_W, EMPTY_LAYER_H = 6.0, 10.0
LONG_SPAN = 48
# A frame's title is the canvas's bold 12 px font, drawn in scene units (so its width does not depend on the
# zoom) 10 units from the left, with the 14-unit collapse glyph 6 from the right: the canvas elides the label
# once it needs more than width - 38. Measured on that font, lowercase scope names take 6.5-8.4 units a
# character (e.g. "embed_tokens" 8.1, "mlp" 8.4), so 8.5 keeps nearly every title whole without measuring text.
TITLE_CHAR_W, TITLE_EXTRA = 8.5, 38.0


@dataclass
class Layered:
    """Positions of one batch: centres x, y per node; bbox (P, 4) per problem as x0, y0, x1, y1; for every
    edge its bend points (route_pts[route_ptr[e]:route_ptr[e + 1]], from its source towards its target),
    whether it points upwards (against the layer order), and each node's layer."""

    x: np.ndarray
    y: np.ndarray
    bbox: np.ndarray
    route_ptr: np.ndarray
    route_pts: np.ndarray
    upward: np.ndarray
    layer: np.ndarray


def _segments(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a sorted key array: segment id of each element and the start index of each segment."""
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    seg = np.cumsum(np.r_[True, keys[1:] != keys[:-1]]) - 1
    return seg, start


def _seg_cummax(v: np.ndarray, seg: np.ndarray) -> np.ndarray:
    span = float(v.max() - v.min()) + 1.0 if len(v) else 1.0
    return np.maximum.accumulate(v + seg * span) - seg * span


def _seg_rcummin(v: np.ndarray, seg: np.ndarray) -> np.ndarray:
    span = float(v.max() - v.min()) + 1.0 if len(v) else 1.0
    z = (v + seg * span)[::-1]
    return (np.minimum.accumulate(z) - (seg * span)[::-1])[::-1]


def _layers(n: int, a: np.ndarray, b: np.ndarray, key: np.ndarray, pinned: np.ndarray) -> np.ndarray:
    """Longest-path layers for edges a -> b with key[a] < key[b] (so key order is topological)."""
    L = [0] * n
    order = np.argsort(key[b], kind="stable")
    for s, d in zip(a[order].tolist(), b[order].tolist()):
        v = L[s] + 1
        if v > L[d]:
            L[d] = v
    layer = np.asarray(L, np.int64)
    if len(a):
        indeg = np.bincount(b, minlength=n)
        nearest = np.full(n, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(nearest, a, layer[b])
        pull = (indeg == 0) & (nearest < np.iinfo(np.int64).max) & ~pinned
        layer[pull] = nearest[pull] - 1
    return layer


def layered(problem: np.ndarray, w: np.ndarray, h: np.ndarray, key: np.ndarray, src: np.ndarray,
            dst: np.ndarray, n_problems: int, *, port: np.ndarray | None = None, node_gap: float = NODE_GAP,
            layer_gap: float = LAYER_GAP, long_span: int = LONG_SPAN, sweeps: int = 6,
            iterations: int = 8) -> Layered:
    """Lay out a batch of independent layered problems (edges must stay within one problem).

    key: a distinct number per node that orders it (e.g. topological rank); edges from a higher key to a
    lower one are treated as pointing backwards, which breaks cycles. port: 1 marks a point where an edge
    enters the problem from outside (kept above every layer), 2 one where an edge leaves it (below every
    layer); ports take no room of their own.
    """
    n, m = len(w), len(src)
    port = np.zeros(n, np.int8) if port is None else np.asarray(port, np.int8)
    w = np.asarray(w, np.float64)
    h = np.asarray(h, np.float64)
    key = np.asarray(key, np.float64)
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    upward = key[src] > key[dst]
    a = np.where(upward, dst, src)
    b = np.where(upward, src, dst)
    real = (port[a] == 0) & (port[b] == 0)  # ports follow the layers of what they join
    layer = _layers(n, a[real], b[real], key, pinned=port > 0)
    if port.any():
        layer[port == 1] = -1
        inner = np.full(n_problems, -1, np.int64)
        np.maximum.at(inner, np.asarray(problem, np.int64)[port == 0], layer[port == 0])
        outs = np.flatnonzero(port == 2)
        layer[outs] = inner[np.asarray(problem, np.int64)[outs]] + 1

    # dummy nodes along edges that span several layers
    span = layer[b] - layer[a]
    use = (span > 1) & (span <= long_span)
    k = np.where(use, span - 1, 0)
    nd = int(k.sum())
    owner = np.repeat(np.arange(m), k)
    first = np.cumsum(k) - k
    step = np.arange(nd) - first[owner]
    dummy = n + np.arange(nd)
    N = n + nd
    layer2 = np.concatenate([layer, layer[a][owner] + step + 1])
    prob2 = np.concatenate([np.asarray(problem, np.int64), np.asarray(problem, np.int64)[a][owner]])
    w2 = np.concatenate([w, np.full(nd, DUMMY_W)])
    h2 = np.concatenate([h, np.zeros(nd)])
    is_dummy = np.r_[np.zeros(n, bool), np.ones(nd, bool)]
    # edges between adjacent layers: a -> first dummy -> ... -> last dummy -> b (long edges: none)
    prev = np.where(step == 0, a[owner], dummy - 1)
    last = np.where(k > 0, n + first + k - 1, a)
    short = span <= long_span
    seg_a = np.concatenate([prev, last[short]])
    seg_b = np.concatenate([dummy, b[short]])
    keep = seg_a != seg_b
    seg_a, seg_b = seg_a[keep], seg_b[keep]

    # order within layers: start from key order, then barycentre sweeps (down, up, ...), all layers at once
    key2 = np.concatenate([key, key[a][owner] + 0.5])
    perm = np.lexsort((key2, layer2, prob2))
    group = prob2 * (int(layer2.max(initial=0)) + 2) + layer2 + 1
    seg, start = _segments(group[perm])
    seg_len = np.diff(np.r_[start, N])

    def positions(perm):
        pos = np.empty(N)
        pos[perm] = np.arange(N) - start[seg] - (seg_len[seg] - 1) / 2.0
        return pos

    pos = positions(perm)
    for it in range(sweeps):
        tgt, nb = (seg_b, seg_a) if it % 2 == 0 else (seg_a, seg_b)
        cnt = np.bincount(tgt, minlength=N)
        bary = np.bincount(tgt, weights=pos[nb], minlength=N) / np.maximum(cnt, 1)
        bary = np.where(cnt > 0, bary, pos)
        perm = np.lexsort((pos, bary, group))
        pos = positions(perm)

    # x: towards the mean of the neighbours, keeping order and spacing (segmented running max/min)
    ws = w2[perm]
    dd = is_dummy[perm]
    gap = np.where(dd[1:] & dd[:-1], DUMMY_GAP, node_gap) if N > 1 else np.zeros(0)
    sep = np.r_[0.0, (ws[1:] + ws[:-1]) / 2.0 + gap] if N else np.zeros(0)
    sep[start] = 0.0
    csum = np.cumsum(sep)
    offs = csum - csum[start][seg]
    width = offs[np.r_[start[1:] - 1, N - 1]] if N else np.zeros(0)
    xs = offs - width[seg] / 2.0
    x2 = np.empty(N)
    x2[perm] = xs
    weight = np.where(is_dummy[seg_a] | is_dummy[seg_b], 2.0, 1.0)
    ea = np.concatenate([seg_a, seg_b])
    eb = np.concatenate([seg_b, seg_a])
    ew = np.concatenate([weight, weight])
    cnt = np.bincount(ea, weights=ew, minlength=N)
    for _ in range(iterations):
        want = np.bincount(ea, weights=x2[eb] * ew, minlength=N) / np.maximum(cnt, 1e-9)
        want = np.where(cnt > 0, want, x2)
        v = want[perm] - offs
        xs = (_seg_cummax(v, seg) + _seg_rcummin(v, seg)) / 2.0 + offs
        x2[perm] = xs

    # y: each layer as tall as its tallest node
    hs = h2[perm]
    seg_h = np.maximum.reduceat(hs, start) if N else np.zeros(0)
    port2 = np.concatenate([port, np.zeros(nd, np.int8)])
    only_ports = np.minimum.reduceat(port2[perm], start) > 0 if N else np.zeros(0, bool)
    seg_h = np.where(seg_h > 0, seg_h, np.where(only_ports, 0.0, EMPTY_LAYER_H))
    seg_prob = prob2[perm][start] if N else np.zeros(0, np.int64)
    adv = np.where(only_ports, 0.0, seg_h + layer_gap)
    c = np.cumsum(adv)
    pstart = np.searchsorted(seg_prob, np.arange(n_problems))
    base = np.r_[0.0, c][np.minimum(pstart, len(c))]
    top = c - adv - base[seg_prob]
    y2 = np.empty(N)
    y2[perm] = (top + seg_h / 2.0)[seg]

    # bounding box per problem, then shift each problem to start at (0, 0)
    bbox = np.zeros((n_problems, 4))
    lo_x = np.full(n_problems, np.inf)
    lo_y = np.full(n_problems, np.inf)
    hi_x = np.full(n_problems, -np.inf)
    hi_y = np.full(n_problems, -np.inf)
    np.minimum.at(lo_x, prob2, x2 - w2 / 2)
    np.minimum.at(lo_y, prob2, y2 - h2 / 2)
    np.maximum.at(hi_x, prob2, x2 + w2 / 2)
    np.maximum.at(hi_y, prob2, y2 + h2 / 2)
    empty = ~np.isfinite(lo_x)
    lo_x[empty] = lo_y[empty] = hi_x[empty] = hi_y[empty] = 0.0
    x2 -= lo_x[prob2]
    y2 -= lo_y[prob2]
    bbox[:, 2] = hi_x - lo_x
    bbox[:, 3] = hi_y - lo_y

    # routes: the dummies of each edge, from its real source to its real target
    idx = n + first[owner] + np.where(upward[owner], k[owner] - 1 - step, step)
    route_pts = np.stack([x2[idx], y2[idx]], axis=1) if nd else np.zeros((0, 2))
    route_ptr = np.r_[0, np.cumsum(k)]
    return Layered(x2[:n], y2[:n], bbox, route_ptr, route_pts, upward, layer)


@dataclass
class Layout:
    """A drawn graph in scene coordinates (y grows downwards).

    Leaves in the order of VisibleGraph.leaves: centres x, y and sizes w, h; frames (expanded scopes, in
    VisibleGraph.frames order) as x0, y0, x1, y1 with their depth; edges in VisibleGraph order as
    polylines pts[ptr[e]:ptr[e + 1]] from source port to target port.
    """

    vg: VisibleGraph
    x: np.ndarray
    y: np.ndarray
    w: np.ndarray
    h: np.ndarray
    frame_box: np.ndarray
    frame_depth: np.ndarray
    edge_ptr: np.ndarray
    edge_pts: np.ndarray
    width: float
    height: float


def estimate_sizes(vg: VisibleGraph, char_w: float = 7.2) -> tuple[np.ndarray, np.ndarray]:
    """Box sizes from label lengths, for callers without a font (the GUI measures real text)."""
    t, tree = vg.tree.table, vg.tree
    n = tree.n_ops
    w = np.empty(len(vg.leaves))
    h = np.empty(len(vg.leaves))
    for k, item in enumerate(vg.leaves.tolist()):
        if item < n:
            w[k] = max(56.0, char_w * len(t.op_types[item]) + 24.0)
            h[k] = 32.0
        else:
            w[k] = max(96.0, char_w * len(tree.label[item - n]) + 48.0)
            h[k] = 44.0
    return w, h


def layout_visible(vg: VisibleGraph, w: np.ndarray, h: np.ndarray, cancelled=lambda: False,
                   title_char_w: float = TITLE_CHAR_W) -> Layout | None:
    """Lay out the leaves (sizes w, h) and frames of a visible graph; None if `cancelled()` turns true.

    A frame is at least as wide as its title needs (`title_char_w` per character of the scope's label, plus
    room for the collapse glyph), with its contents centred when the title is the wider.

    An edge between leaves in different frames is cut into legs, one per frame it crosses: inside each
    frame it runs to (or from) a port on the frame's border, so it is routed around that frame's contents
    instead of being drawn straight through them.
    """
    tree = vg.tree
    n = tree.n_ops
    L, F = len(vg.leaves), len(vg.frames)
    M = L + F
    member_parent = np.concatenate([vg.parent_of_leaf, vg.parent_of_frame]).astype(np.int64)
    member_depth = tree.depth[member_parent] + 1 if M else np.zeros(0, np.int64)
    leaf_items = vg.leaves
    key = np.empty(M)
    is_op = leaf_items < n
    key[:L][is_op] = tree.table.rank[leaf_items[is_op]]
    key[:L][~is_op] = tree.first_rank[leaf_items[~is_op] - n]
    key[L:] = tree.first_rank[vg.frames]
    mw = np.concatenate([np.asarray(w, np.float64), np.zeros(F)])
    mh = np.concatenate([np.asarray(h, np.float64), np.zeros(F)])
    frame_member = np.full(tree.n_scopes, -1, np.int64)
    frame_member[vg.frames] = L + np.arange(F)

    # ancestors of every member by depth: scopes as scope ids, the member itself as BASE + member index
    D = int(member_depth.max(initial=0))
    open_scopes = np.r_[ROOT, vg.frames].astype(np.int64)
    scope_anc = np.full((D + 1, tree.n_scopes), -1, np.int64)
    sd = tree.depth[open_scopes]
    for d in range(int(sd.max(initial=0)) + 1):
        idx = open_scopes[sd == d]
        if d > 0:
            scope_anc[:, idx] = scope_anc[:, tree.parent[idx]]
        scope_anc[d, idx] = idx
    BASE = tree.n_scopes + 1
    anc = scope_anc[:, member_parent]
    anc[member_depth, np.arange(M)] = BASE + np.arange(M)

    def member_of(v):
        return np.where(v >= BASE, v - BASE, frame_member[np.clip(v, 0, tree.n_scopes - 1)])

    legs = _legs(vg, anc, member_depth, L, member_of)
    leg_depth = tree.depth[legs["problem"]] if len(legs["problem"]) else np.zeros(0, np.int64)

    lx, ly = np.zeros(M), np.zeros(M)  # member centre relative to its parent's content origin
    n_legs = len(legs["problem"])
    port_x, port_y = np.zeros(n_legs), np.zeros(n_legs)
    frame_size = np.zeros((tree.n_scopes, 2))
    title_w = np.zeros(tree.n_scopes)  # the root has no title
    if F:
        title_w[vg.frames] = title_char_w * np.fromiter(
            (len(tree.label[s]) for s in vg.frames.tolist()), np.float64, F) + TITLE_EXTRA
    shift = np.zeros(tree.n_scopes)  # how far a frame's contents move right to sit centred under its title
    leg_route_ptr = np.zeros(n_legs, np.int64)
    leg_route_len = np.zeros(n_legs, np.int64)
    leg_up = np.zeros(n_legs, bool)
    chunks, route_base = [], 0
    for d in range(int(sd.max(initial=0)), -1, -1):
        if cancelled():
            return None
        probs = open_scopes[sd == d]
        pindex = np.full(tree.n_scopes, -1, np.int64)
        pindex[probs] = np.arange(len(probs))
        mem = np.flatnonzero(pindex[member_parent] >= 0)
        if len(mem) == 0:
            continue
        es = np.flatnonzero(leg_depth == d)
        local = np.full(M, -1, np.int64)
        local[mem] = np.arange(len(mem))
        fm = mem >= L
        mw[mem[fm]] = frame_size[vg.frames[mem[fm] - L], 0]
        mh[mem[fm]] = frame_size[vg.frames[mem[fm] - L], 1]
        # ports: one node per leg that enters (src < 0) or leaves (dst < 0) its frame
        ls, ld = legs["src"][es], legs["dst"][es]
        pin, pout = ls < 0, ld < 0
        n_ports = int(pin.sum() + pout.sum())
        port_ids = len(mem) + np.arange(n_ports)
        in_ids, out_ids = port_ids[:int(pin.sum())], port_ids[int(pin.sum()):]
        s_loc = np.where(pin, 0, local[np.maximum(ls, 0)])
        d_loc = np.where(pout, 0, local[np.maximum(ld, 0)])
        s_loc[pin] = in_ids
        d_loc[pout] = out_ids
        lp = pindex[legs["problem"][es]]
        port_leg = np.r_[es[pin], es[pout]]
        res = layered(np.r_[pindex[member_parent[mem]], lp[pin], lp[pout]],
                      np.r_[mw[mem], np.full(n_ports, DUMMY_W)], np.r_[mh[mem], np.zeros(n_ports)],
                      np.r_[key[mem], np.full(int(pin.sum()), -1.0), np.full(int(pout.sum()), 1e18)],
                      s_loc, d_loc, len(probs),
                      port=np.r_[np.zeros(len(mem), np.int8), np.ones(int(pin.sum()), np.int8),
                                 np.full(int(pout.sum()), 2, np.int8)])
        lx[mem], ly[mem] = res.x[:len(mem)], res.y[:len(mem)]
        port_x[port_leg], port_y[port_leg] = res.x[len(mem):], res.y[len(mem):]
        content_w = res.bbox[:, 2] + 2 * FRAME_PAD
        frame_size[probs, 0] = np.maximum(content_w, title_w[probs])
        shift[probs] = (frame_size[probs, 0] - content_w) / 2
        frame_size[probs, 1] = res.bbox[:, 3] + FRAME_HEAD + FRAME_PAD
        leg_route_ptr[es] = route_base + res.route_ptr[:-1]
        leg_route_len[es] = np.diff(res.route_ptr)
        leg_up[es] = res.upward
        chunks.append(res.route_pts)
        route_base += len(res.route_pts)

    # absolute positions, top-down: a frame's content starts below its title
    origin = np.zeros((tree.n_scopes, 2))
    ax, ay = np.zeros(M), np.zeros(M)
    for d in range(int(sd.max(initial=0)) + 1):
        mem = np.flatnonzero(tree.depth[member_parent] == d)
        ax[mem] = origin[member_parent[mem], 0] + lx[mem]
        ay[mem] = origin[member_parent[mem], 1] + ly[mem]
        fm = mem[mem >= L]
        sc = vg.frames[fm - L]
        origin[sc, 0] = ax[fm] - mw[fm] / 2 + FRAME_PAD + shift[sc]
        origin[sc, 1] = ay[fm] - mh[fm] / 2 + FRAME_HEAD
    fx0, fy0 = ax[L:] - mw[L:] / 2, ay[L:] - mh[L:] / 2
    frame_box = np.stack([fx0, fy0, fx0 + mw[L:], fy0 + mh[L:]], axis=1) if F else np.zeros((0, 4))

    route_pts = np.concatenate(chunks) if chunks else np.zeros((0, 2))
    edge_ptr, edge_pts = _assemble(legs, L, ax, ay, mw, mh, frame_box, frame_member, origin, port_x, leg_up,
                                   leg_route_ptr, leg_route_len, route_pts, len(vg.edge_src))
    width = float(frame_size[ROOT, 0] - 2 * FRAME_PAD) if M else 0.0
    height = float(frame_size[ROOT, 1] - FRAME_HEAD - FRAME_PAD) if M else 0.0
    return Layout(vg, ax[:L], ay[:L], mw[:L], mh[:L], frame_box, tree.depth[vg.frames], edge_ptr, edge_pts,
                  width, height)


def _legs(vg: VisibleGraph, anc: np.ndarray, member_depth: np.ndarray, L: int, member_of) -> dict:
    """Cut every edge into legs: inside each frame that holds only its source, from the source side to
    an exit port (dst -1); at the lowest common scope, child to child; inside each frame that holds only
    its target, from an entry port (src -1) to the target side. Legs come out grouped by edge, in order."""
    leaf_member = np.full(vg.n_ops + vg.tree.n_scopes, -1, np.int64)
    leaf_member[vg.leaves] = np.arange(L)
    eu, ev = leaf_member[vg.edge_src], leaf_member[vg.edge_dst]
    m = len(eu)
    A, B = anc[:, eu], anc[:, ev]
    common = np.cumprod((A == B) & (A >= 0), axis=0).sum(axis=0)
    du, dv = member_depth[eu], member_depth[ev]
    cols = np.arange(m)
    parts = []  # (edge, order, problem, src member or -1, dst member or -1)
    D = anc.shape[0] - 1
    for k in range(1, D):  # frames holding only the source: A[k] for common <= k < du
        sel = np.flatnonzero((k >= common) & (k < du))
        parts.append((sel, du[sel] - 1 - k, A[k, sel], member_of(A[k + 1, sel]), np.full(len(sel), -1)))
    lca = A[common - 1, cols] if m else np.zeros(0, np.int64)
    parts.append((cols, du - common, lca, member_of(A[common, cols]) if m else cols,
                  member_of(B[common, cols]) if m else cols))
    for k in range(1, D):  # frames holding only the target
        sel = np.flatnonzero((k >= common) & (k < dv))
        parts.append((sel, du[sel] - common[sel] + 1 + (k - common[sel]), B[k, sel], np.full(len(sel), -1),
                      member_of(B[k + 1, sel])))
    edge = np.concatenate([p[0] for p in parts])
    order = np.concatenate([p[1] for p in parts])
    idx = np.lexsort((order, edge))
    return {"edge": edge[idx], "problem": np.concatenate([p[2] for p in parts])[idx].astype(np.int64),
            "src": np.concatenate([p[3] for p in parts])[idx].astype(np.int64),
            "dst": np.concatenate([p[4] for p in parts])[idx].astype(np.int64), "eu": eu, "ev": ev}


def _assemble(legs, L, ax, ay, mw, mh, frame_box, frame_member, origin, port_x, leg_up, rptr, rlen, rpts, m):
    """Edge polylines from their legs: a leaf end is its port on the node (bottom, or top for an edge that
    points upwards), a frame end is skipped (the next leg starts on that frame's border), a port is on the
    border of its frame at the x the layout chose for it."""
    if m == 0:
        return np.zeros(1, np.int64), np.zeros((0, 2))
    src, dst, prob, edge = legs["src"], legs["dst"], legs["problem"], legs["edge"]
    sign = np.where(leg_up, -1.0, 1.0)
    f_of_prob = frame_member[prob] - L  # frame index of each leg's problem (-1 - L for the root)
    s_leaf = (src >= 0) & (src < L)
    d_leaf = (dst >= 0) & (dst < L)
    s_port, d_port = src < 0, dst < 0
    has_s = s_leaf | s_port
    has_d = d_leaf | d_port
    cnt = has_s.astype(np.int64) + rlen + has_d
    lptr = np.r_[0, np.cumsum(cnt)]
    pts = np.empty((int(lptr[-1]), 2))
    sm = np.maximum(src, 0)
    dm = np.maximum(dst, 0)
    fb = frame_box[np.maximum(f_of_prob, 0)] if len(frame_box) else np.zeros((len(prob), 4))
    start = np.stack([np.where(s_port, origin[prob, 0] + port_x, ax[sm]),
                      np.where(s_port, fb[:, 1], ay[sm] + sign * mh[sm] / 2)], axis=1)
    end = np.stack([np.where(d_port, origin[prob, 0] + port_x, ax[dm]),
                    np.where(d_port, fb[:, 3], ay[dm] - sign * mh[dm] / 2)], axis=1)
    pts[lptr[:-1][has_s]] = start[has_s]
    pts[lptr[1:][has_d] - 1] = end[has_d]
    owner = np.repeat(np.arange(len(src)), rlen)
    step = np.arange(len(owner)) - np.repeat(np.cumsum(rlen) - rlen, rlen)
    pts[lptr[:-1][owner] + has_s[owner] + step] = rpts[rptr[owner] + step] + origin[prob[owner]]
    per_edge = np.bincount(edge, weights=cnt, minlength=m).astype(np.int64)
    return np.r_[0, np.cumsum(per_edge)], pts  # legs are already grouped by edge, in order
