"""Layout of a visible graph: every expanded scope laid out on its own, frames around them, in numpy.

Each expanded scope is laid out on its own (its children: ops, collapsed boxes, nested frames), deepest
first, so a frame's size is known before its parent is laid out; all scopes at one depth go through the
layered layout (model/layered.py) together, as one batch of independent problems, which keeps the work
vectorised even with thousands of small scopes.

The result is arrays (positions, sizes, frames, edge polylines), never Qt objects.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mnnscope.inspector.model.layered import DUMMY_W, _cat, _segments, layered
from mnnscope.inspector.model.scopes import ROOT, VisibleGraph

FRAME_PAD, FRAME_HEAD = 14.0, 28.0
# A frame's title is the canvas's bold 12 px font, drawn in scene units (so its width does not depend on the
# zoom) 10 units from the left, with the 14-unit collapse glyph 6 from the right: the canvas elides the label
# once it needs more than width - 38. Measured on that font, lowercase scope names take 6.5-8.4 units a
# character (e.g. "embed_tokens" 8.1, "mlp" 8.4), so 8.5 keeps nearly every title whole without measuring text.
TITLE_CHAR_W, TITLE_EXTRA = 8.5, 38.0
INPUT_GAP = 10.0  # the most apart two edges into one node end (scene units)


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
    mean = _mean_rank(tree)
    key[:L][~is_op] = mean[leaf_items[~is_op] - n]
    key[L:] = mean[vg.frames]
    mw = np.concatenate([np.asarray(w, np.float64), np.zeros(F)])
    mh = np.concatenate([np.asarray(h, np.float64), np.zeros(F)])
    frame_member = np.full(tree.n_scopes, -1, np.int64)
    frame_member[vg.frames] = L + np.arange(F)

    # ancestors of every member by depth: scopes as scope ids, the member itself as BASE + member index
    D = int(member_depth.max(initial=0))
    open_scopes = _cat(ROOT, vg.frames).astype(np.int64)
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
    key = _sibling_order(key, legs["src"], legs["dst"])
    leg_depth = tree.depth[legs["problem"]] if len(legs["problem"]) else np.zeros(0, np.int64)

    lx, ly = np.zeros(M), np.zeros(M)  # member centre relative to its parent's content origin
    # how far each member's layer reaches above and below the member's centre (an op beside a frame: to the
    # frame's top and bottom; a frame that spans layers upwards counts where it is)
    lup, ldown = np.zeros(M), np.zeros(M)
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
    chunks, halves, route_base = [], [], 0
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
        port_leg = _cat(es[pin], es[pout])
        # a leg from (into) a frame starts (ends) at that frame's exit (entry) port, laid out already: the
        # leg before (after) it, inside the frame
        s_off, d_off = np.zeros(len(es)), np.zeros(len(es))
        sf, df = np.flatnonzero(ls >= L), np.flatnonzero(ld >= L)
        if len(sf):
            f = vg.frames[ls[sf] - L]
            s_off[sf] = FRAME_PAD + shift[f] + port_x[es[sf] - 1] - frame_size[f, 0] / 2
        if len(df):
            f = vg.frames[ld[df] - L]
            d_off[df] = FRAME_PAD + shift[f] + port_x[es[df] + 1] - frame_size[f, 0] / 2
        res = layered(_cat(pindex[member_parent[mem]], lp[pin], lp[pout]),
                      _cat(mw[mem], np.full(n_ports, DUMMY_W)), _cat(mh[mem], np.zeros(n_ports)),
                      _cat(key[mem], np.full(int(pin.sum()), -1.0), np.full(int(pout.sum()), 1e18)),
                      s_loc, d_loc, len(probs), src_off=s_off, dst_off=d_off,
                      port=_cat(np.zeros(len(mem), np.int8), np.ones(int(pin.sum()), np.int8),
                                 np.full(int(pout.sum()), 2, np.int8)))
        lx[mem], ly[mem] = res.x[:len(mem)], res.y[:len(mem)]
        if len(mem):
            pl = pindex[member_parent[mem]] * (int(res.layer[:len(mem)].max(initial=0)) + 1) + res.layer[:len(mem)]
            u, inv = np.unique(pl, return_inverse=True)
            inv = inv.reshape(-1)
            top, bottom = np.full(len(u), np.inf), np.full(len(u), -np.inf)
            np.minimum.at(top, inv, ly[mem] - mh[mem] / 2)
            np.maximum.at(bottom, inv, ly[mem] + mh[mem] / 2)
            lup[mem], ldown[mem] = ly[mem] - top[inv], bottom[inv] - ly[mem]
        port_x[port_leg], port_y[port_leg] = res.x[len(mem):], res.y[len(mem):]
        content_w = res.bbox[:, 2] + 2 * FRAME_PAD
        frame_size[probs, 0] = np.maximum(content_w, title_w[probs])
        shift[probs] = (frame_size[probs, 0] - content_w) / 2
        frame_size[probs, 1] = res.bbox[:, 3] + FRAME_HEAD + FRAME_PAD
        leg_route_ptr[es] = route_base + res.route_ptr[:-1]
        leg_route_len[es] = np.diff(res.route_ptr)
        leg_up[es] = res.upward
        chunks.append(res.route_pts)
        halves.append(res.route_half)
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
    route_half = np.concatenate(halves) if halves else np.zeros(0)
    edge_ptr, edge_pts = _assemble(legs, L, ax, ay, mw, mh, frame_box, frame_member, origin, port_x, leg_up,
                                   leg_route_ptr, leg_route_len, route_pts, route_half, len(vg.edge_src), lup,
                                   ldown)
    width = float(frame_size[ROOT, 0] - 2 * FRAME_PAD) if M else 0.0
    height = float(frame_size[ROOT, 1] - FRAME_HEAD - FRAME_PAD) if M else 0.0
    return Layout(vg, ax[:L], ay[:L], mw[:L], mh[:L], frame_box, tree.depth[vg.frames], edge_ptr, edge_pts,
                  width, height)


def _sibling_order(key: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A topological order of the members (boxes, frames, ops) over the legs that join siblings, as new keys:
    a member comes after every sibling that feeds it, whatever the ranks of the ops inside say; where the
    legs form a cycle (two blocks that feed each other), the member with the smallest old key goes first.
    The layout points an edge downwards exactly when its source's key is the smaller one."""
    import heapq
    M = len(key)
    sel = (src >= 0) & (dst >= 0) & (src != dst)
    a, b = src[sel], dst[sel]
    if len(a) == 0:
        return key
    if (key[a] < key[b]).all():
        # the keys are a topological order already (most models): the heap below would take the members in key order
        # (the smallest key left is always ready), so the new keys are their places in it, ties by index as there
        new = np.empty(M)
        new[np.lexsort((np.arange(M), key))] = np.arange(M)
        return new
    pair = np.unique(a * M + b)
    a, b = pair // M, pair % M
    indeg = np.bincount(b, minlength=M).tolist()
    o = np.argsort(a, kind="stable")
    out_b = b[o].tolist()
    out_ptr = np.concatenate([[0], np.cumsum(np.bincount(a, minlength=M))]).tolist()
    k = key.tolist()
    ready = [(k[v], v) for v in range(M) if indeg[v] == 0]
    heapq.heapify(ready)
    rest = sorted(range(M), key=k.__getitem__)  # for breaking cycles: smallest old key first
    done = [False] * M
    new = np.empty(M)
    r = 0
    for n_done in range(M):
        if ready:
            _, v = heapq.heappop(ready)
        else:
            while done[rest[r]]:
                r += 1
            v = rest[r]
        done[v] = True
        new[v] = n_done
        for t in out_b[out_ptr[v]:out_ptr[v + 1]]:
            indeg[t] -= 1
            if indeg[t] == 0 and not done[t]:
                heapq.heappush(ready, (k[t], t))
    return new


def _mean_rank(tree) -> np.ndarray:
    """Per scope, the mean topological rank of the ops inside it (a quarter added, so it never equals an op's
    rank): the key that orders a box or frame among its siblings. Its first op is no good: a block whose
    weights come first (an unrolled LSTM with its constants at rank 0) would sit above everything that feeds
    it, all its inputs pointing upwards."""
    t = tree.table
    keep = ~np.asarray(tree.hidden, bool)
    total = np.bincount(tree.node_parent, weights=np.where(keep, t.rank, 0.0), minlength=tree.n_scopes)
    count = np.bincount(tree.node_parent, weights=keep, minlength=tree.n_scopes)
    for d in range(int(tree.depth.max(initial=0)), 0, -1):
        sc = np.flatnonzero(tree.depth == d)
        np.add.at(total, tree.parent[sc], total[sc])
        np.add.at(count, tree.parent[sc], count[sc])
    return np.where(count > 0, total / np.maximum(count, 1), tree.first_rank) + 0.25


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


def _spread_inputs(dst, leaf, sign, mw, start_x, rptr, rlen, rpts, ox) -> np.ndarray:
    """How far from its node's centre each leg ending at a leaf ends: the legs into one node from one side
    spread along its border in the order they arrive from (the x of the point before the end), INPUT_GAP apart
    at most, so that two inputs read as two (they met in one point: an Add looked like it had one input)."""
    off = np.zeros(len(dst))
    sel = np.flatnonzero(leaf)
    if len(sel) < 2:
        return off
    last = np.maximum(rptr[sel] + rlen[sel] - 1, 0)
    came = np.where(rlen[sel] > 0, rpts[last, 0] + ox[sel] if len(rpts) else 0.0, start_x[sel])
    o = np.lexsort((sel, came, sign[sel], dst[sel]))
    d = dst[sel][o]
    gid, first = _segments(2 * d + (sign[sel][o] > 0))  # one group per node and side
    k = np.diff(_cat(first, len(d)))[gid]
    rank = np.arange(len(d)) - first[gid]
    gap = np.minimum(INPUT_GAP, 0.6 * mw[d] / np.maximum(k - 1, 1))
    off[sel[o]] = (rank - (k - 1) / 2.0) * gap
    return off


def _assemble(legs, L, ax, ay, mw, mh, frame_box, frame_member, origin, port_x, leg_up, rptr, rlen, rpts, rhalf,
              m, lup, ldown):
    """Edge polylines from their legs: a leaf end is its port on the node (bottom, or top for an edge that
    points upwards), a frame end is skipped (the next leg starts on that frame's border), a port is on the
    border of its frame at the x the layout chose for it. A bend becomes two points, at the top and the bottom
    of its layer, so the edge runs straight down beside a tall box or frame instead of cutting its corner.
    lup, ldown: per member, how far its layer reaches above and below its centre."""
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
    sm = np.maximum(src, 0)
    dm = np.maximum(dst, 0)
    # a leaf shorter than its layer (an op beside a frame): its edges run straight down to the layer's bottom
    # (into it: from the layer's top) before they turn, so they turn between layers, not across the frame beside
    # it (captcha_crnn: a leg from above one cell to an op right of it ran diagonally over the cell's title)
    s_out = np.where(leg_up, lup[sm], ldown[sm])  # how far the source's layer reaches on the side the leg leaves
    d_in = np.where(leg_up, ldown[dm], lup[dm])   # and the target's on the side it comes in
    deep_s = s_leaf & (s_out > mh[sm] / 2 + 1.0)
    deep_d = d_leaf & (d_in > mh[dm] / 2 + 1.0)
    cnt = has_s.astype(np.int64) + deep_s + 2 * rlen + deep_d + has_d
    lptr = _cat(0, np.cumsum(cnt))
    pts = np.empty((int(lptr[-1]), 2))
    fb = frame_box[np.maximum(f_of_prob, 0)] if len(frame_box) else np.zeros((len(prob), 4))
    start = np.stack([np.where(s_port, origin[prob, 0] + port_x, ax[sm]),
                      np.where(s_port, fb[:, 1], ay[sm] + sign * mh[sm] / 2)], axis=1)
    end = np.stack([np.where(d_port, origin[prob, 0] + port_x, ax[dm]),
                    np.where(d_port, fb[:, 3], ay[dm] - sign * mh[dm] / 2)], axis=1)
    end[:, 0] += _spread_inputs(dm, d_leaf, sign, mw, start[:, 0], rptr, rlen, rpts, origin[prob, 0])
    pts[lptr[:-1][has_s]] = start[has_s]
    pts[lptr[1:][has_d] - 1] = end[has_d]
    pts[lptr[:-1][deep_s] + 1] = np.stack([start[deep_s, 0], ay[sm[deep_s]] + sign[deep_s] * s_out[deep_s]], 1)
    pts[lptr[1:][deep_d] - 2] = np.stack([end[deep_d, 0], ay[dm[deep_d]] - sign[deep_d] * d_in[deep_d]], 1)
    owner = np.repeat(np.arange(len(src)), rlen)
    step = np.arange(len(owner)) - np.repeat(np.cumsum(rlen) - rlen, rlen)
    at = lptr[:-1][owner] + has_s[owner] + deep_s[owner] + 2 * step
    p = rpts[rptr[owner] + step] + origin[prob[owner]]
    dy = (rhalf[rptr[owner] + step] * sign[owner])[:, None] * np.array([0.0, 1.0])
    pts[at] = p - dy
    pts[at + 1] = p + dy
    per_edge = np.bincount(edge, weights=cnt, minlength=m).astype(np.int64)
    return _cat(0, np.cumsum(per_edge)), pts  # legs are already grouped by edge, in order
