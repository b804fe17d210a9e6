"""Layered (Sugiyama-style) top-to-bottom layout of a batch of independent graph problems, in numpy.

Within a problem:

1. layers by longest path (one pass over the edges in topological order; sources are pulled down next
   to their first consumer so constants do not hang at the top),
2. dummy nodes on edges that span several layers (edges longer than `long_span` layers get them too,
   shortest first, within a budget of extra dummies; the rest are drawn straight, so one tensor read by
   every layer cannot create millions of dummies),
3. order within layers: on graphs of up to PY_NODES nodes + dummies + edges (every scope of a model as the
   app shows it), in plain Python (on such graphs faster than numpy calls), one problem at a time and
   within it one piece between layers of a single node at a time, only where the first fill left
   crossings: layer-by-layer barycentre sweeps down and up with adjacent exchanges, keeping the order with
   the fewest crossings seen, and where crossings remain Graphviz dot's own mincross scheme too (two
   starts, weighted medians, ties exchanged), the better order kept, then bundles of long edges sent to
   opposite sides where that gains (crossing counts per pair of layers kept up to date, so exchanges skip
   what cannot gain); on larger ones median sweeps (even layers, then odd ones) and adjacent exchanges,
   all layers at once in numpy. Edges that end at a frame's port are ordered by where that port is
   (src_off/dst_off),
4. x: one longest path per problem (the main data path) on one vertical line, the other nodes by
   repeatedly moving towards the mean of their neighbours and resolving overlaps with segmented running
   max/min, pushed aside from the main path (no per-layer Python loop); y by layer heights.

model/layout.py feeds it the scopes of a visible graph, one batch per nesting depth.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

import numpy as np

NODE_GAP, DUMMY_GAP, LAYER_GAP = 20.0, 8.0, 30.0
DUMMY_W, EMPTY_LAYER_H = 6.0, 10.0
LONG_SPAN = 48
GS_LOOPS = 800  # layer-by-layer ordering sweeps while layers x sweeps stays within this (else all at once)
# layer-by-layer sweeps made (down, up): they keep the last order, not the best, and two ended with fewer crossings than
# four on every expansion of the models that take this path (captcha_crnn, 4 of 4 layouts: 603-714 against 631-775)
GS_SWEEPS = 2
PY_NODES = 3000  # graphs up to this many nodes + dummies + edges are ordered by _order_lists (in Python)
PY_BUDGET = 10_000  # sweeps per start: at most this over the number of nodes + dummies + edges (>= 2)
PY_SWEEPS, PY_STALE = 12, 2  # at most this many sweeps per start; stop after this many without a gain
PY_ROUNDS = 3  # rounds of adjacent exchanges after each sweep
PY_DOT, PY_ITER, PY_QUIT = 1, 24, 4  # dot's scheme where crossings remain: on or off, sweeps, quit after
CHECK_COUNTS = False  # tests: check the crossing counts kept during the ordering after every sweep
PY_SIFT = 1  # bundles of long edges moved whole to opposite sides where that gains
PY_FILL_IT = 3  # sweeps of dot's scheme from the start filled from the sources, before the better start converges
PY_SINK_IT = 1  # sweeps of dot's scheme from the start filled from the sinks, before the one from the sources
PY_MEDIAN = 1  # dot's scheme sorts by weighted medians (1) or barycentres (0)
PY_OLD = 300  # problems larger than this go straight to dot's scheme where crossings remain
PY_SECOND = 300  # graphs up to this many nodes + dummies + edges get a second start
COPIES_WORTH = 64  # problems that may be copies of others are looked for where they hold this many nodes + edges


def _cat(*parts) -> np.ndarray:
    """np.r_ for 1-d pieces and scalars, without its indexing machinery (a tenth of the cost per call)."""
    return np.concatenate([np.asarray(p).reshape(-1) for p in parts])


@dataclass
class Layered:
    """Positions of one batch: centres x, y per node; bbox (P, 4) per problem as x0, y0, x1, y1; for every
    edge its bend points (route_pts[route_ptr[e]:route_ptr[e + 1]], from its source towards its target; the
    layer of each is route_half[...] above and below it: an edge drawn through a tall layer runs down beside
    what is in it, from the layer's top to its bottom, not diagonally across it),
    whether it points upwards (against the layer order), and each node's layer."""

    x: np.ndarray
    y: np.ndarray
    bbox: np.ndarray
    route_ptr: np.ndarray
    route_pts: np.ndarray
    upward: np.ndarray
    layer: np.ndarray
    route_half: np.ndarray | None = None
    crossings: int = -1  # crossings between adjacent layers the ordering left, all problems (-1: not counted)
    problem_crossings: np.ndarray | None = None  # the same per problem (None: not counted)


def _segments(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a sorted key array: segment id of each element and the start index of each segment."""
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = np.flatnonzero(_cat(True, keys[1:] != keys[:-1]))
    seg = np.cumsum(_cat(True, keys[1:] != keys[:-1])) - 1
    return seg, start


def _seg_cummax(v: np.ndarray, seg: np.ndarray) -> np.ndarray:
    span = float(v.max() - v.min()) + 1.0 if len(v) else 1.0
    return np.maximum.accumulate(v + seg * span) - seg * span


def _seg_rcummin(v: np.ndarray, seg: np.ndarray) -> np.ndarray:
    span = float(v.max() - v.min()) + 1.0 if len(v) else 1.0
    z = (v + seg * span)[::-1]
    return (np.minimum.accumulate(z) - (seg * span)[::-1])[::-1]


def _median(tgt: np.ndarray, val: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the median of `val` over its edges (tgt: the node of each edge), and whether it has any;
    an even count takes the mean of the two middle values."""
    cnt = np.bincount(tgt, minlength=N)
    med = np.zeros(N)
    if len(tgt):
        o = np.lexsort((val, tgt))
        v = val[o]
        first = np.cumsum(cnt) - cnt
        lo = first + (cnt - 1) // 2
        hi = first + cnt // 2
        ok = cnt > 0
        med[ok] = (v[lo[ok]] + v[hi[ok]]) / 2.0
    return med, cnt > 0


def _csr(key: np.ndarray, val: np.ndarray, N: int):
    o = np.argsort(key, kind="stable")
    cnt = np.bincount(key, minlength=N)
    return val[o], np.cumsum(cnt) - cnt, cnt


def _transpose(perm, pos, seg, start, seg_a, seg_b, N, cap: int = 256):
    """One round of adjacent exchange, all layers at once: swap neighbours u, v of a layer when that makes
    fewer crossings with the layers above and below; pairs at even then odd places, so swaps never overlap."""
    moved = False
    up = _csr(seg_b, seg_a, N)
    down = _csr(seg_a, seg_b, N)
    for parity in (0, 1):
        place = np.arange(len(perm)) - start[seg]
        i = np.flatnonzero((place[:-1] % 2 == parity) & (seg[1:] == seg[:-1]))
        if len(i) == 0:
            continue
        u, v = perm[i], perm[i + 1]
        gain = np.zeros(len(i))
        for nb, ptr, cnt in (up, down):
            du, dv = cnt[u], cnt[v]
            prod = du * dv
            ok = (prod > 0) & (prod <= cap)
            pi = np.repeat(np.flatnonzero(ok), prod[ok])
            if len(pi) == 0:
                continue
            k = np.arange(len(pi)) - np.repeat(np.cumsum(prod[ok]) - prod[ok], prod[ok])
            a = pos[nb[ptr[u[pi]] + k // dv[pi]]]
            b = pos[nb[ptr[v[pi]] + k % dv[pi]]]
            gain += np.bincount(pi, weights=(a > b).astype(np.float64) - (a < b), minlength=len(i))
        sw = gain > 0
        if sw.any():
            moved = True
            perm = perm.copy()
            perm[i[sw]], perm[i[sw] + 1] = v[sw], u[sw]
            pos = pos.copy()
            pos[perm[i[sw]]], pos[perm[i[sw] + 1]] = pos[u[sw]], pos[v[sw]]
    return perm, moved


def _cross_pair(es) -> int:
    """Crossings among edges between two adjacent layers, given as (upper position, lower position)."""
    es.sort()
    seen: list = []
    c = 0
    top = -1e300
    for _, b in es:
        if b >= top:  # right of all seen so far (mostly so): no crossing, no search
            seen.append(b)
            top = b
            continue
        i = bisect_right(seen, b)
        c += len(seen) - i
        seen.insert(i, b)
    return c


def _order_lists(N, group, perm, seg_a, seg_b, fa, fb, budget=None, span=0, n_real=None):
    """Order within layers, for graphs small enough to walk in Python: barycentre sweeps down and up (on
    these graphs they beat median sweeps: the decoder of arabic-name-romanizer, 63 crossings against 134), each
    followed by adjacent exchanges (transpose) that cut crossings with both neighbouring layers, keeping the
    best order seen (fewest crossings), as Graphviz `dot` does. fa, fb: where along its upper and lower node
    each edge attaches, as a fraction of one place (an edge into a frame enters at its port). Returns the new
    perm (nodes grouped by layer group, in order)."""
    g = group[perm].tolist()
    pl = perm.tolist()
    layers: list[list[int]] = []
    gid: list[int] = []
    for v, k in zip(pl, g):
        if not gid or gid[-1] != k:
            gid.append(k)
            layers.append([])
        layers[-1].append(v)
    pos = [0.0] * N
    for lay in layers:
        for i, v in enumerate(lay):
            pos[v] = float(i)
    up: list[list] = [[] for _ in range(N)]    # (neighbour above, offset there, offset here)
    down: list[list] = [[] for _ in range(N)]
    for a, b, x, y in zip(seg_a.tolist(), seg_b.tolist(), fa.tolist(), fb.tolist()):
        up[b].append((a, x, y))
        down[a].append((b, y, x))
    # a node's one neighbour on a side, (neighbour, offset there), or None: most nodes (dummies above all) have one
    up1 = [es[0][:2] if len(es) == 1 else None for es in up]
    down1 = [es[0][:2] if len(es) == 1 else None for es in down]
    # for each layer: the index of the layer above it in `layers` (-1: none), to count crossings per pair
    lidx = {k: i for i, k in enumerate(gid)}
    above = [lidx.get(k - 1, -1) for k in gid]
    # layers entered by fewer than two edges from above can have no crossings there (most of a deep chain)
    crossable = [sum(len(up[b]) for b in lay) > 1 for lay in layers]

    def crossings_between(i):  # layer i and the one above it
        if not crossable[i]:
            return 0
        es = [(pos[a] + x, pos[b] + y) for b in layers[i] for a, x, y in up[b]]
        return _cross_pair(es)

    pc = [0] * len(layers)  # crossings between each layer and the one above it
    pc_at = [(-1, -1)] * len(layers)  # the versions of the two layers each count was made for

    def recount(which, lo, hi):
        """Crossings of layers lo..hi-1 (one problem), those of the layers in `which` counted again where
        either layer changed since."""
        for i in which:
            if lo <= i < hi and above[i] >= 0:
                stamp = (ver[i], ver[above[i]])
                if pc_at[i] != stamp:
                    pc[i], pc_at[i] = crossings_between(i), stamp
        return sum(pc[lo + 1:hi])

    def sweep(order, nb, rev=False, med=False):
        """Each layer sorted by the barycentres of its neighbours on one side (rev: equal ones change
        places); the layers that changed."""
        changed = set()
        one = up1 if nb is up else down1
        for i in order:
            lay = layers[i]
            if len(lay) < 2:
                continue
            keyed, slots = [], []
            for j, v in enumerate(lay):
                o = one[v]
                if o is not None:
                    keyed.append((pos[o[0]] + o[1], -j if rev else j, v))
                    slots.append(j)
                elif nb[v]:
                    if med and len(nb[v]) > 2:
                        ps = sorted([pos[u] + x for u, x, _ in nb[v]])
                        m = len(ps) // 2
                        if len(ps) % 2:
                            kv = ps[m]
                        else:  # dot's weighted median: towards the side whose positions lie closer
                            left, right = ps[m - 1] - ps[0], ps[-1] - ps[m]
                            kv = (ps[m - 1] * right + ps[m] * left) / (left + right) if left + right else \
                                (ps[m - 1] + ps[m]) / 2
                    else:
                        kv = sum([pos[u] + x for u, x, _ in nb[v]]) / len(nb[v])
                    keyed.append((kv, -j if rev else j, v))
                    slots.append(j)
            if len(keyed) < 2:
                continue
            keyed.sort()
            for j, (_, _, v) in zip(slots, keyed):
                if lay[j] != v:
                    lay[j] = v
                    pos[v] = float(j)
                    changed.add(i)
        for i in changed:
            ver[i] += 1
        return changed

    def near(which, lo, hi):
        return {k for i in which for k in (i - 1, i, i + 1) if lo <= k < hi}

    below = [-1] * len(layers)  # the index of the layer below each one (-1: none)
    for i, k in enumerate(above):
        if k >= 0:
            below[k] = i
    ver = [0] * len(layers)  # bumped whenever a layer's order changes
    ends_at: dict = {}  # per layer and side: the version of the layer on that side, where each node's edges end

    def side_ends(nodes, nb):
        one = up1 if nb is up else down1
        return {v: [pos[o[0]] + o[1]] if (o := one[v]) is not None else sorted([pos[q] + x for q, x, _ in nb[v]])
                for v in nodes}

    def ends_of(i):
        """Where the edges of each node of layer i end above and below, sorted (swaps within layer i do not
        move them: each side cached until the layer on that side changes), and a memo of pair counts."""
        va = ver[above[i]] if above[i] >= 0 else -1
        vb = ver[below[i]] if below[i] >= 0 else -1
        hit = ends_at.get(i)
        if hit is not None and hit[0] == va and hit[2] == vb:
            return hit[1], hit[3], hit[4]
        ups = hit[1] if hit is not None and hit[0] == va else side_ends(layers[i], up)
        dns = hit[3] if hit is not None and hit[2] == vb else side_ends(layers[i], down)
        ends_at[i] = (va, ups, vb, dns, {})
        return ups, dns, ends_at[i][4]

    def pair(ups, dns, u, v):
        """Crossings between the edges of u and v (u left of v): above as they are, swapped; below as they
        are, swapped."""
        cc = []
        for U, V in ((ups[u], ups[v]), (dns[u], dns[v])):  # each side: where the edges end (sorted)
            if not U or not V:
                cc += (0, 0)
            elif len(U) == 1 and len(V) == 1:
                cc += (U[0] > V[0], U[0] < V[0])
            else:
                a = b = 0
                nv = len(V)
                for pu in U:
                    a += bisect_left(V, pu)
                    b += nv - bisect_right(V, pu)
                cc += (a, b)
        return cc

    def transpose(dirty, rev, lo, hi):
        """Rounds of adjacent exchanges over the layers that may gain (next to one that changed, with
        crossings above or below); the layers that changed. Keeps the crossing counts `pc` up to date (an
        exchange changes only the crossings between the two nodes' edges)."""
        moved = set()
        for _ in range(PY_ROUNDS):
            if not dirty:
                break
            changed = set()
            for i in sorted(dirty):
                lay = layers[i]
                bi = below[i]
                if len(lay) < 2 or not (pc[i] or (bi >= 0 and pc[bi])):
                    continue  # no crossings either side: no exchange can gain
                ups, dns, memo = ends_of(i)
                for j in range(len(lay) - 1):
                    u, v = lay[j], lay[j + 1]
                    Uu, Ud, Vu, Vd = ups[u], dns[u], ups[v], dns[v]
                    if (not Uu or not Vu or Uu[-1] <= Vu[0]) and (not Ud or not Vd or Ud[-1] <= Vd[0]):
                        continue  # their edges do not cross: an exchange cannot gain
                    cc = memo.get((u, v))
                    if cc is None:
                        cc = memo[u, v] = pair(ups, dns, u, v)
                    c0, c1 = cc[0] + cc[2], cc[1] + cc[3]
                    if c1 < c0 or (rev and c1 == c0 and c0 > 0):
                        lay[j], lay[j + 1] = v, u
                        pos[u], pos[v] = float(j + 1), float(j)
                        pc[i] += cc[1] - cc[0]
                        if bi >= 0:
                            pc[bi] += cc[3] - cc[2]
                        memo[v, u] = [cc[1], cc[0], cc[3], cc[2]]
                        changed.add(i)
                if i in changed:  # the layers next to it see new ends; the counts kept exact stay valid
                    ok_up = above[i] >= 0 and pc_at[i] == (ver[i], ver[above[i]])
                    ok_down = bi >= 0 and pc_at[bi] == (ver[bi], ver[i])
                    ver[i] += 1
                    if ok_up:
                        pc_at[i] = (ver[i], ver[above[i]])
                    if ok_down:
                        pc_at[bi] = (ver[bi], ver[i])
            moved |= changed
            dirty = near(changed, lo, hi)
        return moved

    def settle(changed, first, rev, lo, hi):
        """After a sweep over layers lo..hi-1: the counts of the layers it changed made exact, adjacent
        exchanges (over every layer after the first sweep, else next to what changed), the crossings left."""
        recount({k for i in changed for k in (i, i + 1)}, lo, hi)
        transpose(set(range(lo, hi)) if first else near(changed, lo, hi), rev, lo, hi)
        c = sum(pc[lo + 1:hi])
        if CHECK_COUNTS:  # the counts kept up to date must be those counted afresh (tests turn this on)
            assert c == sum(crossings_between(i) for i in range(lo + 1, hi) if above[i] >= 0), "stale counts"
        return c

    def improve_dot(lo, hi, max_it, quit, best, best_layers, worth=None):
        """dot's mincross loop over layers lo..hi-1 (one problem) from their current order: sweeps down and
        up, equal barycentres exchanged in two of every four and adjacent exchanges on ties in the other two
        (which lets the order drift over plateaus), an order as good as the best kept, stopping after `quit`
        sweeps without a gain of half a percent. `worth`: a start with more crossings than this is not swept."""
        cur = recount(range(lo, hi), lo, hi)
        if cur < best:  # a new start replaces the best order only when it is better
            best, best_layers = cur, [lay[:] for lay in layers[lo:hi]]
        if worth is not None and cur > worth:
            max_it = 0  # a start worse than one already had: not swept
        fwd = range(lo, hi)
        back = range(hi - 1, lo - 1, -1)
        trying = 0
        for it in range(max_it):
            if not best or trying >= quit:
                break
            trying += 1
            rev = it % 4 < 2
            changed = sweep(fwd, up, rev, PY_MEDIAN) if it % 2 == 0 else sweep(back, down, rev, PY_MEDIAN)
            c = settle(changed, it == 0, not rev, lo, hi)
            if c <= best:
                if c < 0.995 * best:
                    trying = 0
                best, best_layers = c, [lay[:] for lay in layers[lo:hi]]
        return best, best_layers

    def improve(lo, hi, max_it):
        """Sweeps over layers lo..hi-1 (one problem) from their current order; the best order seen and its
        crossings."""
        best = recount(range(lo, hi), lo, hi)
        best_layers = [lay[:] for lay in layers[lo:hi]]
        fwd = range(lo, hi)
        back = range(hi - 1, lo - 1, -1)
        stale = 0
        for it in range(max_it if best else 0):
            changed = sweep(fwd, up) if it % 2 == 0 else sweep(back, down)
            c = settle(changed, it == 0, False, lo, hi)
            if c < best:
                best, best_layers, stale = c, [lay[:] for lay in layers[lo:hi]], 0
                if c == 0:
                    break
            else:
                stale += 1
                if stale >= PY_STALE:
                    break
        return best, best_layers

    def place(order, lo):
        for i, lay in enumerate(order, lo):
            if layers[i] == lay:
                continue  # unchanged: its version (and the crossing counts made for it) stay
            layers[i] = lay[:]
            ver[i] += 1
            for j, v in enumerate(lay):
                pos[v] = float(j)

    start = [lay[:] for lay in layers]
    where = [0] * N
    for i, lay in enumerate(start):
        for v in lay:
            where[v] = i
    # the fills walk each node's neighbours in the order of their places in `start` (the first fill of a problem
    # is made before any sweep moved it), sorted once here (stable: neighbours at one place, in different
    # layers, keep the order of their edges)
    pos0 = np.asarray(pos)
    ptr = _cat(0, np.cumsum(np.bincount(seg_a, minlength=N))).tolist()
    flat = seg_b[np.lexsort((pos0[seg_b], seg_a))].tolist()
    down_by_place = [flat[ptr[v]:ptr[v + 1]] for v in range(N)]
    ptr = _cat(0, np.cumsum(np.bincount(seg_b, minlength=N))).tolist()
    flat = seg_a[np.lexsort((pos0[seg_a], seg_b))].tolist()
    up_by_place = [flat[ptr[v]:ptr[v + 1]] for v in range(N)]

    def bfs(lo, hi, from_sinks):
        """Layers lo..hi-1 filled breadth first from the sources (or the sinks), along the edges both ways,
        neighbours in their order in `start` (key order)."""
        out: list[list[int]] = [[] for _ in range(lo, hi)]
        rows = start[lo:hi][::-1] if from_sinks else start[lo:hi]
        first, then = (up_by_place, down_by_place) if from_sinks else (down_by_place, up_by_place)
        for root in (v for lay in rows for v in lay):
            if seen[root] or (down[root] if from_sinks else up[root]):
                continue
            seen[root] = True
            queue = [root]
            for v in queue:
                out[where[v] - lo].append(v)
                for b in first[v]:
                    if not seen[b]:
                        seen[b] = True
                        queue.append(b)
                for b in then[v]:
                    if not seen[b]:
                        seen[b] = True
                        queue.append(b)
        for i, lay in enumerate(start[lo:hi]):  # what no source reaches (cannot happen in a DAG) keeps its place
            out[i] += [v for v in lay if not seen[v]]
        return out

    def sink_fill(lo, hi):
        """Layers lo..hi-1 filled from the sinks (which follow key order); the current order stays as it is (the
        fill walks neighbours in their order in `start`, not in the current one)."""
        for lay in start[lo:hi]:
            for v in lay:
                seen[v] = False
        return bfs(lo, hi, True)

    def order_piece(lo, hi, fill, sink):
        """Places the order of layers lo..hi-1 with the fewest crossings the schemes find, from `fill` (placed);
        `sink()` gives the start filled from the sinks; `pc` holds its crossings."""
        size = sum(len(lay) for lay in layers[lo:hi])
        n_edges = sum(len(up[v]) for lay in layers[lo:hi] for v in lay)
        max_it = max(2, min(PY_SWEEPS, (PY_BUDGET if budget is None else budget) // max(1, size + n_edges)))
        if PY_DOT and size + n_edges > PY_OLD:
            best, best_layers = recount(range(lo, hi), lo, hi), fill
        else:
            best, best_layers = improve(lo, hi, max_it)
        if best and size + n_edges <= PY_SECOND:
            place(start[lo:hi], lo)  # a second start from key order, on graphs where it is cheap
            c, alt = improve(lo, hi, max_it)
            if c < best:
                best, best_layers = c, alt
        if best and PY_DOT:
            # crossings left: dot's own scheme from two starts, filled from the sinks (one sweep: on a model with
            # long skip connections it reaches no crossings at once, elsewhere it is rarely the better one) and
            # from the sources (three sweeps: a fourth, an up sweep, never held the best order on the benchmark's
            # models), the better one on to convergence; kept only where it is better (where both reach none, the
            # first order stays: which order a frame's ports take changes its parent's layout)
            c, alt = 1 << 62, fill
            for init, sweeps in (("sink", PY_SINK_IT), ("fill", PY_FILL_IT)):
                if c:
                    place(fill if init == "fill" else sink(), lo)
                    # (the sinks' start swept only where it starts no worse than the order had: on the decoder it
                    # starts at 125 against 107 and never won; PP-OCRv6 det's at 3 against 20 reaches 0)
                    c, alt = improve_dot(lo, hi, sweeps, 4, c, alt, best if init == "sink" else None)
            if c:
                place(alt, lo)
                c, alt = improve_dot(lo, hi, PY_ITER, PY_QUIT, c, alt)
            if c < best:
                best, best_layers = c, alt
        place(best_layers, lo)
        recount(range(lo, hi), lo, hi)
        if best and PY_SIFT and n_real is not None:
            sift(lo, hi)

    def sift(lo, hi):
        """Long edges moved whole: two bundles of long edges (the chains of dummies one node sends down to
        several places) that pass through the same layers, sent to opposite sides, the far left and the far
        right of every layer they pass, kept where that has fewer crossings. The sweeps and exchanges move one
        node at a time, and taking one dummy of a chain across a node costs two crossings with that node's own
        edges before the rest of the chain follows, so a bundle stays on the side it started on, crossing
        whatever leaves the other side (moe_llm: the hidden state sent down to four stacked experts and the
        routing weights sent to the same experts, 8 crossings per MoE layer; sent to opposite sides, 3).
        Moving single chains or one bundle alone gained nothing on the benchmark's models. Within a side the
        shortest chain goes innermost."""
        chains = []
        for i in range(lo, hi):
            for v in layers[i]:
                if v >= n_real and not (up[v] and up[v][0][0] >= n_real):
                    chain = [v]
                    while down[chain[-1]] and down[chain[-1]][0][0] >= n_real:
                        chain.append(down[chain[-1]][0][0])
                    chains.append(chain)
        chains.sort(key=len)
        by_source: dict = {}
        for c in chains:
            if up[c[0]]:
                by_source.setdefault(up[c[0]][0][0], []).append(c)
        bundles = [cs for cs in by_source.values() if len(cs) > 1]
        # per bundle and layer: the leftmost and rightmost place of its dummies there
        spans = []
        for cs in bundles:
            span_at: dict = {}
            for c in cs:
                for v in c:
                    i, p = where[v], pos[v]
                    lo_hi = span_at.get(i)
                    span_at[i] = (p, p) if lo_hi is None else (min(lo_hi[0], p), max(lo_hi[1], p))
            spans.append(span_at)

        def interleaved(x, y):  # the two bundles are not on one side of each other in every layer they share
            shared = spans[x].keys() & spans[y].keys()
            return bool(shared) and not (all(spans[x][i][1] < spans[y][i][0] for i in shared) or
                                         all(spans[y][i][1] < spans[x][i][0] for i in shared))
        moves = [[(c, far) for c in bundles[x]] + [(c, not far) for c in bundles[y]]
                 for x in range(len(bundles)) for y in range(x + 1, len(bundles)) if interleaved(x, y)
                 for far in (False, True)]
        total = sum(pc[lo + 1:hi])
        for move in moves:
            if not total:
                break
            rows = sorted({where[v] for c, _ in move for v in c})
            a, b = max(lo, rows[0] - 1), min(hi, rows[-1] + 2)  # the layer pairs its edges are in
            before = sum(pc[a + 1:b])
            if not before:
                continue
            keep = [layers[i][:] for i in rows]
            moved = {i: layers[i][:] for i in rows}
            for c, far in move:
                for v in c:
                    lay = [q for q in moved[where[v]] if q != v]
                    moved[where[v]] = lay + [v] if far else [v] + lay
            for i, lay in moved.items():
                place([lay], i)
            after = recount(range(a, b), a, b)
            if after < before:
                total += after - before
            else:
                for lay, i in zip(keep, rows):
                    place([lay], i)
                recount(range(a, b), a, b)

    # one problem (a run of layers of one scope) at a time, and within it one piece at a time: a layer with a
    # single node cuts a problem in two (what is ordered above it cannot change a barycentre, a median or a
    # crossing below it), so a chain with side branches pays only for the pieces that have crossings
    prob = [k // span if span else 0 for k in gid]
    bounds = [i for i in range(1, len(layers)) if prob[i] != prob[i - 1]]
    per_problem: dict = {}  # crossings left, by problem (those with none left out)
    seen = [False] * N  # reached by a fill (each problem's own nodes)
    for lo, hi in zip([0] + bounds, bounds + [len(layers)]):
        # the first start, as dot's: filled breadth first from the sources (in key order), which puts what
        # one node feeds, and what feeds it, next to each other (on the decoder of arabic-name-romanizer
        # sweeps from it end at 48 crossings, from key order at 152)
        fill = bfs(lo, hi, False)
        place(fill, lo)
        if not recount(range(lo, hi), lo, hi):
            continue
        sinks: list = []

        def sink(a, b, lo=lo, hi=hi, sinks=sinks):
            if not sinks:
                sinks.append(sink_fill(lo, hi))
            return [lay[:] for lay in sinks[0][a - lo:b - lo]]
        cuts = [i for i in range(lo + 1, hi - 1) if len(layers[i]) == 1]
        for a, b in zip([lo] + cuts, [c + 1 for c in cuts] + [hi]):
            if sum(pc[a + 1:b]):
                order_piece(a, b, [lay[:] for lay in layers[a:b]], lambda a=a, b=b: sink(a, b))
        per_problem[prob[lo]] = sum(pc[lo + 1:hi])
    return np.fromiter((v for lay in layers for v in lay), np.int64, N), per_problem


def _own_dummies(v, b, n, first, k) -> np.ndarray:
    """The dummies of the edges into node v (b: each edge's lower end)."""
    es = np.flatnonzero((b == v) & (k > 0))
    if len(es) == 0:
        return np.zeros(0, np.int64)
    return np.concatenate([n + first[e] + np.arange(k[e]) for e in es.tolist()])


def _rises(n, N, a, b, real, port, w2, h2, x2, perm, seg, start, seg_len, seg_prob, only_ports, first, k, gap):
    """Tall nodes (frames) fed only from outside the problem (through its ports), which the layering pulled
    down next to their first consumer: how many layers above their own each may span, as {node: (its
    segment, layers)}. One spans upwards while nothing but its own incoming edges is in its way (an embedding
    block beside the ops of a mask computation, instead of below them with everything after it pushed down)."""
    out = {}
    if n == 0:
        return out
    real_in = np.bincount(b[real], minlength=n)
    inv = np.empty(N, np.int64)
    inv[perm] = np.arange(N)
    cand = np.flatnonzero((real_in == 0) & (port == 0) & (h2[:n] > 0))
    for v in cand.tolist():
        s_v = int(seg[inv[v]])
        if s_v == 0 or seg_prob[s_v - 1] != seg_prob[s_v] or only_ports[s_v - 1]:
            continue
        others = perm[start[s_v]:start[s_v] + seg_len[s_v]]
        if h2[v] < 2 * h2[others[others != v]].max(initial=EMPTY_LAYER_H):
            continue  # only a block twice as tall as the rest of its layer (a frame beside ops)
        own = set(_own_dummies(v, b, n, first, k).tolist())
        lo, hi = x2[v] - w2[v] / 2 - gap / 4, x2[v] + w2[v] / 2 + gap / 4
        r, j = 0, s_v - 1
        while j >= 0 and seg_prob[j] == seg_prob[s_v] and not only_ports[j]:
            mem = perm[start[j]:start[j] + seg_len[j]]
            mem = mem[[m not in own for m in mem.tolist()]]
            if ((x2[mem] + w2[mem] / 2 > lo) & (x2[mem] - w2[mem] / 2 < hi)).any():
                break
            r += 1
            j -= 1
        if r:
            out[v] = (s_v, r)
    return out


def _main_paths(n: int, a: np.ndarray, b: np.ndarray, key: np.ndarray, problem: np.ndarray, real: np.ndarray,
                n_problems: int, weight: np.ndarray) -> np.ndarray:
    """Nodes on one heaviest path (the most `weight` summed over its nodes, first inputs in key order on ties)
    of every problem: the main data path, which the x placement keeps on one vertical line. Weighted by area,
    a chain of blocks outweighs a chain of small ops beside it (a mask computed in four ops next to an
    embedding block of three: by edge count the mask would be the main path and the data path would bend)."""
    wt = np.where(real, weight, 0.0).tolist()
    dist = list(wt)
    prev = [-1] * n
    order = np.argsort(key[b], kind="stable")
    for s, d in zip(a[order].tolist(), b[order].tolist()):
        if dist[s] + wt[d] > dist[d]:
            dist[d], prev[d] = dist[s] + wt[d], s
    on = np.zeros(n, bool)
    cand = np.flatnonzero(real)
    if len(cand) == 0:
        return on
    dv = np.asarray(dist)[cand]
    o = np.lexsort((key[cand], -dv, problem[cand]))
    first = _cat(True, problem[cand][o][1:] != problem[cand][o][:-1])
    for v in cand[o][first].tolist():
        if prev[v] < 0:
            continue  # a path of one node (a problem without edges) has nothing to keep straight
        while v >= 0:
            on[v] = True
            v = prev[v]
    return on


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
            dst: np.ndarray, n_problems: int, *, port: np.ndarray | None = None,
            src_off: np.ndarray | None = None, dst_off: np.ndarray | None = None, **options) -> Layered:
    """Lay out a batch of independent layered problems (edges must stay within one problem).

    key: a distinct number per node that orders it (e.g. topological rank); edges from a higher key to a
    lower one are treated as pointing backwards, which breaks cycles. port: 1 marks a point where an edge
    enters the problem from outside (kept above every layer), 2 one where an edge leaves it (below every
    layer); ports take no room of their own. src_off, dst_off: where an edge leaves its source and enters its
    target, as an x offset from that node's centre (an edge into a frame enters at the frame's port), so
    ordering and placement line up the points the edges are really drawn from. options: node_gap, layer_gap,
    long_span, sweeps, transposes, iterations, straighten (see _layered).

    Problems that are copies of one another (the expanded layers of a transformer, the cells of an unrolled
    LSTM: same sizes, same edges and offsets, keys in the same order) are laid out once, and every copy takes
    that layout: the layout of a problem depends on nothing else, so the result is the one each would get.
    """
    n, m = len(w), len(src)
    port = np.zeros(n, np.int8) if port is None else np.asarray(port, np.int8)
    so = np.zeros(m) if src_off is None else np.asarray(src_off, np.float64)
    do = np.zeros(m) if dst_off is None else np.asarray(dst_off, np.float64)
    problem = problem
    w, h, key = (np.asarray(v, np.float64) for v in (w, h, key))
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    copies = _copies(problem, w, h, key, src, dst, n_problems, port, so, do) if n_problems > 1 else None
    if copies is None:
        return _layered(problem, w, h, key, src, dst, n_problems, port, so, do, **options)
    cls, n_cls, node_of, edge_of, sub_nodes, sub_edges, sub_problem = copies
    one = _layered(sub_problem, w[sub_nodes], h[sub_nodes], key[sub_nodes], node_of[src[sub_edges]],
                   node_of[dst[sub_edges]], n_cls, port[sub_nodes], so[sub_edges], do[sub_edges], **options)
    # every node and edge takes its counterpart's place in the copy that was laid out
    cnt = np.diff(one.route_ptr)[edge_of]
    route_ptr = _cat(0, np.cumsum(cnt))
    at = np.repeat(one.route_ptr[:-1][edge_of], cnt) + np.arange(int(route_ptr[-1])) - np.repeat(route_ptr[:-1], cnt)
    crossings = -1
    if one.problem_crossings is not None:
        crossings = int(one.problem_crossings[cls].sum())
    return Layered(one.x[node_of], one.y[node_of], one.bbox[cls], route_ptr, one.route_pts[at], one.upward[edge_of],
                   one.layer[node_of], one.route_half[at], crossings,
                   None if one.problem_crossings is None else one.problem_crossings[cls])


def _copies(problem, w, h, key, src, dst, n_problems, port, so, do):
    """Which problems of a batch are copies of an earlier one, or None if none is (or too few nodes are in
    problems that could be). A problem's layout depends on its nodes' sizes and ports, its edges (in their
    order) and offsets, and on the order of its keys and of the keys its dummies get (key + 0.5 at an edge's
    upper end): two problems alike in all of these, nodes and edges taken in index order, are copies. Returns (class of every problem, number of classes, every node's
    and edge's counterpart in the batch of one problem per class, that batch's nodes, edges and problems)."""
    n, m = len(w), len(src)
    eprob = problem[src]
    ncnt, ecnt = np.bincount(problem, minlength=n_problems), np.bincount(eprob, minlength=n_problems)
    # only problems of as many nodes and edges as an earlier one can be copies: worth the look where such
    # problems hold enough to lay out (on a few small ones the look costs more than it saves)
    size = ncnt * (m + 1) + ecnt
    _, first, count = np.unique(size, return_index=True, return_counts=True)
    if int(((ncnt + ecnt)[first] * (count - 1)).sum()) < COPIES_WORTH:
        return None
    a = np.where(key[src] > key[dst], dst, src)
    # the order of every key (nodes' and dummies') within its problem, ties alike
    val = _cat(key, key[a] + 0.5)
    pv = _cat(problem, eprob)
    o = np.lexsort((val, pv))
    sv, sp = val[o], pv[o]
    step = _cat(True, (sv[1:] != sv[:-1]) | (sp[1:] != sp[:-1]))
    dense = np.cumsum(step)
    first_of = np.full(n_problems, 0, np.int64)
    new_p = _cat(True, sp[1:] != sp[:-1])
    first_of[sp[new_p]] = dense[new_p]
    rank = np.empty(n + m)
    rank[o] = dense - first_of[sp]
    on = np.argsort(problem, kind="stable")
    nptr = _cat(0, np.cumsum(ncnt))
    local = np.empty(n, np.int64)
    local[on] = np.arange(n) - nptr[problem[on]]
    oe = np.argsort(eprob, kind="stable")
    eptr = _cat(0, np.cumsum(ecnt))
    # sizes and offsets to a millionth: those of frames that are copies themselves differ in the last bits (each
    # copy was moved to its own origin)
    nodes = np.stack([np.round(w, 6), np.round(h, 6), port.astype(np.float64), rank[:n]], axis=1)[on]
    edges = np.stack([local[src].astype(np.float64), local[dst].astype(np.float64), np.round(so, 6),
                      np.round(do, 6), rank[n:]], axis=1)[oe]
    nptr_l, eptr_l = nptr.tolist(), eptr.tolist()
    cls = np.empty(n_problems, np.int64)
    seen: dict = {}
    reps: list = []
    for p in range(n_problems):
        sig = (nodes[nptr_l[p]:nptr_l[p + 1]].tobytes(), edges[eptr_l[p]:eptr_l[p + 1]].tobytes())
        c = seen.get(sig)
        if c is None:
            c = seen[sig] = len(reps)
            reps.append(p)
        cls[p] = c
    if len(reps) == n_problems:
        return None
    reps_a = np.asarray(reps, np.int64)
    ncount, ecount = np.diff(nptr)[reps_a], np.diff(eptr)[reps_a]
    sub_nodes = on[np.concatenate([np.arange(nptr_l[p], nptr_l[p + 1]) for p in reps])] if n else on
    sub_edges = oe[np.concatenate([np.arange(eptr_l[p], eptr_l[p + 1]) for p in reps])] if m else oe
    sub_nstart = _cat(0, np.cumsum(ncount))
    sub_estart = _cat(0, np.cumsum(ecount))
    node_of = sub_nstart[cls[problem]] + local
    elocal = np.empty(m, np.int64)
    elocal[oe] = np.arange(m) - eptr[eprob[oe]]
    edge_of = sub_estart[cls[eprob]] + elocal
    sub_problem = np.repeat(np.arange(len(reps)), ncount)
    return cls, len(reps), node_of, edge_of, sub_nodes, sub_edges, sub_problem


def _layered(problem, w, h, key, src, dst, n_problems, port, so, do, *, node_gap: float = NODE_GAP,
             layer_gap: float = LAYER_GAP, long_span: int = LONG_SPAN, sweeps: int = 4, transposes: int = 4,
             iterations: int = 8, straighten: bool = True) -> Layered:
    """layered() of one batch, problem by problem (copies included); arrays as numpy, offsets given."""
    n, m = len(w), len(src)
    upward = key[src] > key[dst]
    a = np.where(upward, dst, src)
    b = np.where(upward, src, dst)
    real = (port[a] == 0) & (port[b] == 0)  # ports follow the layers of what they join
    layer = _layers(n, a[real], b[real], key, pinned=port > 0)
    main = _main_paths(n, a[real], b[real], key, problem, port == 0, n_problems, w * h) \
        if straighten else np.zeros(n, bool)
    if port.any():
        layer[port == 1] = -1
        inner = np.full(n_problems, -1, np.int64)
        np.maximum.at(inner, problem[port == 0], layer[port == 0])
        outs = np.flatnonzero(port == 2)
        layer[outs] = inner[problem[outs]] + 1

    # dummy nodes along edges that span several layers
    span = layer[b] - layer[a]
    use = (span > 1) & (span <= long_span)
    # longer edges also get dummies (so they are routed between the nodes, not straight over them) while
    # they stay within a budget of extra dummies, shortest first: one tensor read by every layer of a deep
    # model cannot create millions of them
    longer = np.flatnonzero(span > long_span)
    if len(longer):
        longer = longer[np.argsort(span[longer], kind="stable")]
        fits = np.cumsum(span[longer] - 1) <= 4 * n + 20000
        use[longer[fits]] = True
    k = np.where(use, span - 1, 0)
    nd = int(k.sum())
    owner = np.repeat(np.arange(m), k)
    first = np.cumsum(k) - k
    step = np.arange(nd) - first[owner]
    dummy = n + np.arange(nd)
    N = n + nd
    layer2 = np.concatenate([layer, layer[a][owner] + step + 1])
    prob2 = np.concatenate([problem, problem[a][owner]])
    w2 = np.concatenate([w, np.full(nd, DUMMY_W)])
    h2 = np.concatenate([h, np.zeros(nd)])
    is_dummy = _cat(np.zeros(n, bool), np.ones(nd, bool))
    # edges between adjacent layers: a -> first dummy -> ... -> last dummy -> b (long edges: none)
    prev = np.where(step == 0, a[owner], dummy - 1)
    last = np.where(k > 0, n + first + k - 1, a)
    short = use | (span <= 1)
    seg_a = np.concatenate([prev, last[short]])
    seg_b = np.concatenate([dummy, b[short]])
    # offsets of the segment ends: an edge's own offset at its real ends, none at dummies
    off_a, off_b = np.where(upward, do, so), np.where(upward, so, do)
    e_short = np.flatnonzero(short)
    seg_oa = np.concatenate([np.where(step == 0, off_a[owner], 0.0), np.where(k[e_short] > 0, 0.0, off_a[e_short])])
    seg_ob = np.concatenate([np.zeros(nd), off_b[e_short]])
    keep = seg_a != seg_b
    seg_a, seg_b, seg_oa, seg_ob = seg_a[keep], seg_b[keep], seg_oa[keep], seg_ob[keep]

    # order within layers: start from key order, then barycentre sweeps (down, up, ...), all layers at once
    key2 = np.concatenate([key, key[a][owner] + 0.5])
    perm = np.lexsort((key2, layer2, prob2))
    group = prob2 * (int(layer2.max(initial=0)) + 2) + layer2 + 1
    seg, start = _segments(group[perm])
    seg_len = np.diff(_cat(start, N))

    def positions(perm):
        pos = np.empty(N)
        pos[perm] = np.arange(N) - start[seg] - (seg_len[seg] - 1) / 2.0
        return pos

    pos = positions(perm)
    n_layers = int(layer2.max(initial=0) - layer2.min(initial=0)) + 1
    crossings, problem_crossings = -1, None
    if N + len(seg_a) <= PY_NODES:
        # offsets as a fraction of one place: a port a third of a frame's width right of its centre sits a
        # third of the way towards the next place
        slot = w2 + node_gap
        perm, per_problem = _order_lists(N, group, perm, seg_a, seg_b, 0.9 * seg_oa / slot[seg_a],
                                         0.9 * seg_ob / slot[seg_b], span=int(layer2.max(initial=0)) + 2, n_real=n)
        problem_crossings = np.zeros(n_problems, np.int64)
        problem_crossings[list(per_problem)] = list(per_problem.values())
        crossings = int(problem_crossings.sum())
        pos = positions(perm)
        transposes = 0
    elif n_layers * sweeps <= GS_LOOPS:
        # few layers (a batch of frames, a small model): true layer-by-layer sweeps, each layer placed by
        # the medians of the layer just placed above (down) or below (up), all problems at once
        lo = int(layer2.min(initial=0))
        by_layer = np.argsort(layer2, kind="stable")
        lstart = np.searchsorted(layer2[by_layer], np.arange(lo, lo + n_layers + 1))
        down_e = np.argsort(layer2[seg_b], kind="stable")
        dstart = np.searchsorted(layer2[seg_b][down_e], np.arange(lo, lo + n_layers + 1))
        up_e = np.argsort(layer2[seg_a], kind="stable")
        ustart = np.searchsorted(layer2[seg_a][up_e], np.arange(lo, lo + n_layers + 1))
        for it in range(min(sweeps, GS_SWEEPS)):
            down = it % 2 == 0
            for li in range(1, n_layers) if down else range(n_layers - 2, -1, -1):
                nodes = by_layer[lstart[li]:lstart[li + 1]]  # ascending ids (stable sort)
                es = down_e[dstart[li]:dstart[li + 1]] if down else up_e[ustart[li]:ustart[li + 1]]
                if len(nodes) < 2 or len(es) == 0:
                    continue
                tgt, nb = (seg_b[es], seg_a[es]) if down else (seg_a[es], seg_b[es])
                o = np.lexsort((pos[nb], tgt))
                t_s, v_s = tgt[o], pos[nb][o]
                ufirst = np.flatnonzero(_cat(True, t_s[1:] != t_s[:-1]))  # np.unique's, at a third of the cost
                u, ucnt = t_s[ufirst], np.diff(_cat(ufirst, len(t_s)))
                keyv = pos[nodes].copy()  # nodes without neighbours that side keep their place
                keyv[np.searchsorted(nodes, u)] = (v_s[ufirst + (ucnt - 1) // 2] + v_s[ufirst + ucnt // 2]) / 2.0
                g = group[nodes]
                oo = np.lexsort((pos[nodes], keyv, g))
                gs = g[oo]
                gfirst = _cat(True, gs[1:] != gs[:-1])
                gstart = np.maximum.accumulate(np.where(gfirst, np.arange(len(gs)), 0))
                gid = np.cumsum(gfirst) - 1
                gsize = np.bincount(gid)[gid]
                pos[nodes[oo]] = np.arange(len(gs)) - gstart - (gsize - 1) / 2.0
            perm = np.lexsort((pos, group))
            perm, _ = _transpose(perm, pos, seg, start, seg_a, seg_b, N)
            pos = positions(perm)
    else:
        par = layer2 % 2
        for it in range(sweeps):
            # down sweeps place a layer by its predecessors, up sweeps by its successors; even layers, then
            # odd ones from the even layers just placed (all layers at once: thousands of layers stay fast)
            tgt, nb = (seg_b, seg_a) if it % 2 == 0 else (seg_a, seg_b)
            for parity in (0, 1) if it % 2 == 0 else (1, 0):
                med, has = _median(tgt, pos[nb], N)
                sortkey = np.where(has & (par == parity), med, pos)
                perm = np.lexsort((pos, sortkey, group))
                pos = positions(perm)
            perm, _ = _transpose(perm, pos, seg, start, seg_a, seg_b, N)
            pos = positions(perm)
    for _ in range(transposes):
        perm, moved = _transpose(perm, pos, seg, start, seg_a, seg_b, N)
        pos = positions(perm)
        if not moved:
            break

    # x: towards the mean of the neighbours, keeping order and spacing (segmented running max/min)
    ws = w2[perm]
    dd = is_dummy[perm]
    gap = np.where(dd[1:] & dd[:-1], DUMMY_GAP, node_gap) if N > 1 else np.zeros(0)
    sep = _cat(0.0, (ws[1:] + ws[:-1]) / 2.0 + gap) if N else np.zeros(0)
    sep[start] = 0.0
    csum = np.cumsum(sep)
    offs = csum - csum[start][seg]
    width = offs[_cat(start[1:] - 1, N - 1)] if N else np.zeros(0)
    xs = offs - width[seg] / 2.0
    x2 = np.empty(N)
    x2[perm] = xs
    weight = np.where(is_dummy[seg_a] | is_dummy[seg_b], 2.0, 1.0)
    ea = np.concatenate([seg_a, seg_b])
    eb = np.concatenate([seg_b, seg_a])
    eoff = np.concatenate([seg_ob - seg_oa, seg_oa - seg_ob])  # where ea must be for a straight edge, from eb
    ew = np.concatenate([weight, weight])
    cnt = np.bincount(ea, weights=ew, minlength=N)
    # the main path of each problem stays at x = 0; in its layers the other nodes are pushed aside from it
    # (left of it by the running min, right of it by the running max) instead of pushing it
    pinned = _cat(main, np.zeros(nd, bool))
    place = np.arange(N)
    pin_at = np.full(len(start), -1, np.int64)
    pin_at[seg[pinned[perm]]] = place[pinned[perm]]
    q = pin_at[seg]
    right, left = (q >= 0) & (place > q), (q >= 0) & (place < q)
    x2[pinned] = 0.0
    for _ in range(iterations):
        want = np.bincount(ea, weights=(x2[eb] + eoff) * ew, minlength=N) / np.maximum(cnt, 1e-9)
        want = np.where(cnt > 0, want, x2)
        want[pinned] = 0.0
        v = want[perm] - offs
        vq = v[np.maximum(q, 0)]
        cm = _seg_cummax(np.where(left, np.minimum(v, vq), v), seg)
        rm = _seg_rcummin(np.where(right, np.maximum(v, vq), v), seg)
        xs = np.where(right, cm, np.where(left, rm, (cm + rm) / 2.0)) + offs
        if N and np.abs(x2[perm] - xs).max() < 1e-6:
            break  # settled: the remaining rounds would change nothing
        x2[perm] = xs

    # y: each layer as tall as its tallest node
    hs = h2[perm]
    port2 = np.concatenate([port, np.zeros(nd, np.int8)])
    only_ports = np.minimum.reduceat(port2[perm], start) > 0 if N else np.zeros(0, bool)
    seg_prob = prob2[perm][start] if N else np.zeros(0, np.int64)
    rise = _rises(n, N, a, b, real, port, w2, h2, x2, perm, seg, start, seg_len, seg_prob, only_ports, first, k,
                  node_gap) if N + len(seg_a) <= PY_NODES else {}
    if rise:
        hs = hs.copy()
        inv = np.empty(N, np.int64)
        inv[perm] = np.arange(N)
        hs[inv[list(rise)]] = 0.0  # a risen node does not set its layer's height alone
    seg_h = np.maximum.reduceat(hs, start) if N else np.zeros(0)
    seg_h = np.where(seg_h > 0, seg_h, np.where(only_ports, 0.0, EMPTY_LAYER_H))
    for v, (s_v, r) in rise.items():  # the layers it spans must hold it: the last one grows if they do not
        need = h2[v] - (seg_h[s_v - r:s_v + 1].sum() + r * layer_gap)
        if need > 0:
            seg_h[s_v] += need
    adv = np.where(only_ports, 0.0, seg_h + layer_gap)
    c = np.cumsum(adv)
    pstart = np.searchsorted(seg_prob, np.arange(n_problems))
    base = _cat(0.0, c)[np.minimum(pstart, len(c))]
    top = c - adv - base[seg_prob]
    y2 = np.empty(N)
    y2[perm] = (top + seg_h / 2.0)[seg]
    half = np.empty(N)
    half[perm] = seg_h[seg] / 2 if N else np.zeros(0)
    for v, (s_v, r) in rise.items():  # its top where the first layer it spans starts
        y2[v] = top[s_v - r] + h2[v] / 2
        own = _own_dummies(v, b, n, first, k)
        y2[own] = top[s_v - r]  # the edges into it end at its top, not beside it
        half[own] = 0.0

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
    route_ptr = _cat(0, np.cumsum(k))
    return Layered(x2[:n], y2[:n], bbox, route_ptr, route_pts, upward, layer, half[idx], crossings,
                   problem_crossings)
