"""Layout quality and speed, ours against Graphviz `dot` (the quality anchor) on the same visible graphs.

    apt-get install -y graphviz      # dev/benchmark only, never a project dependency
    .venv/bin/python benchmarks/bench_layout.py [MODEL.onnx ...] [--expand default all] [--out benchmarks/out]

For every model (default: the ONNX samples in resources/samples, plus the real models of
/work/shared/REAL_MODELS.md whose packages are installed in this Python) and every expansion (`default`: what
the app opens with; `all`: every scope expanded; `top`: only the root open), the same visible graph is laid
out by mnnscope (model/layout.py) and by `dot`: the DOT file has the same node sizes (fixedsize boxes), the
same node and layer gaps, and one cluster per frame (expanded scope). Positions come back from `dot -Tplain`.

Measured with one rule for both:
- crossings: pairs of edges, sharing no end node, whose drawn polylines properly intersect (ours: the edge
  polylines the canvas draws; dot's: its Bezier splines, each cubic flattened to 8 straight pieces, continued
  through the arrowhead to the head's border, where -Tplain's spline stops 10 points short of it);
- longest-path bends: the longest path of the visible graph (most edges, forward edges only) drawn as the
  polyline through its node centres; a bend is a turn of more than 5 degrees at a node;
- overlaps: pairs of node boxes that overlap, and (ours) pairs of a node and a frame it is not inside, or of
  two frames neither inside the other; must be 0;
- time: CPU time (user + system; on a shared, loaded machine wall times swing threefold from run to run):
  ours is `layout_visible` in this process (median of 5); dot's is the `dot -Tplain` child process (1 run).
  Wall times go to the JSON as well. A last line splits the totals at 400 nodes and gives dot's process
  start (its time on a two-node graph), which is most of its time on graphs of a few dozen nodes.
Prints a table and writes bench_layout.json to --out.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ["cnn.onnx", "encoder_block.onnx", "moe_llm.onnx", "external_data.onnx", "control_flow.onnx",
           "unsupported_op.onnx"]
REAL = [("arabic_name_romanizer", "resources/encoder.onnx"), ("arabic_name_romanizer", "resources/decoder.onnx"),
        ("captcha_whisperer", "models/captcha_crnn.onnx"), ("rapidocr", "models/PP-OCRv6_det_small.onnx"),
        ("rapidocr", "models/PP-OCRv6_rec_small.onnx")]


def real_models() -> list[Path]:
    out = []
    for pkg, rel in REAL:
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            continue
        p = Path(list(spec.submodule_search_locations)[0]) / rel
        if p.exists():
            out.append(p)
    return out


def load_tree(path: Path):
    from mnnscope.inspector.formats.onnx import load_onnx
    from mnnscope.inspector.model.scopes import ScopeTree
    from mnnscope.inspector.model.table import GraphTable
    return ScopeTree(GraphTable.from_graph(load_onnx(path)))


def expansion(tree, how: str) -> set[int]:
    from mnnscope.inspector.model.scopes import ROOT as R
    if how == "all":
        return set(range(tree.n_scopes))
    if how == "top":
        return {R}
    return tree.default_expanded()


# ---------------------------------------------------------------- geometry, one rule for both layouts

def segments(polys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """All straight pieces of a list of polylines: (K, 4) as x0, y0, x1, y1, and the polyline of each."""
    segs, owner = [], []
    for e, p in enumerate(polys):
        if len(p) >= 2:
            segs.append(np.concatenate([p[:-1], p[1:]], axis=1))
            owner.append(np.full(len(p) - 1, e))
    if not segs:
        return np.zeros((0, 4)), np.zeros(0, np.int64)
    return np.concatenate(segs), np.concatenate(owner)


def count_crossings(polys: list[np.ndarray], ends: np.ndarray, pairs_out: set | None = None) -> int:
    """Pairs of edges (sharing no end node) whose polylines properly cross; a pair counts once."""
    s, own = segments(polys)
    if len(s) < 2:
        return 0
    lo_x, hi_x = np.minimum(s[:, 0], s[:, 2]), np.maximum(s[:, 0], s[:, 2])
    lo_y, hi_y = np.minimum(s[:, 1], s[:, 3]), np.maximum(s[:, 1], s[:, 3])
    pairs = set() if pairs_out is None else pairs_out
    K = len(s)
    for c0 in range(0, K, 256):
        i = np.arange(c0, min(K, c0 + 256))[:, None]
        j = np.arange(K)[None, :]
        cand = (j > i) & (lo_x[j] <= hi_x[i]) & (lo_x[i] <= hi_x[j]) & (lo_y[j] <= hi_y[i]) & (lo_y[i] <= hi_y[j])
        ei, ej = own[i], own[j]
        cand &= ei != ej
        cand &= (ends[ei, 0] != ends[ej, 0]) & (ends[ei, 0] != ends[ej, 1]) & \
                (ends[ei, 1] != ends[ej, 0]) & (ends[ei, 1] != ends[ej, 1])
        ii, jj = np.nonzero(cand)
        if not len(ii):
            continue
        a, b = s[ii + c0], s[jj]

        def orient(p, q, r):
            return (q[:, 0] - p[:, 0]) * (r[:, 1] - p[:, 1]) - (q[:, 1] - p[:, 1]) * (r[:, 0] - p[:, 0])
        p1, p2, p3, p4 = a[:, :2], a[:, 2:], b[:, :2], b[:, 2:]
        eps = 1e-9
        d1, d2 = orient(p3, p4, p1), orient(p3, p4, p2)
        d3, d4 = orient(p1, p2, p3), orient(p1, p2, p4)
        hit = (((d1 > eps) & (d2 < -eps)) | ((d1 < -eps) & (d2 > eps))) & \
              (((d3 > eps) & (d4 < -eps)) | ((d3 < -eps) & (d4 > eps)))
        for x, y in zip(own[ii[hit] + c0].tolist(), own[jj[hit]].tolist()):
            pairs.add((min(x, y), max(x, y)))
    return len(pairs)


def overlaps(x, y, w, h, vg=None, frame_box=None) -> int:
    """Pairs of node rectangles that overlap; with frames, also a node overlapping a frame it is not inside
    and two frames neither of which holds the other."""
    x0, x1, y0, y1 = x - w / 2, x + w / 2, y - h / 2, y + h / 2
    hit = (x0[:, None] < x1[None, :]) & (x0[None, :] < x1[:, None]) & (y0[:, None] < y1[None, :]) & \
          (y0[None, :] < y1[:, None])
    count = int(np.triu(hit, 1).sum())
    if vg is None or not len(vg.frames):
        return count
    tree = vg.tree
    fb = frame_box
    inside = np.zeros((len(vg.frames), len(x)), bool)  # leaf k inside frame i
    fidx = {int(f): i for i, f in enumerate(vg.frames.tolist())}
    for k, p in enumerate(vg.parent_of_leaf.tolist()):
        for s in [int(p)] + tree.ancestors(int(p)):
            if s in fidx:
                inside[fidx[s], k] = True
    over = (x0[None, :] < fb[:, 2:3]) & (fb[:, 0:1] < x1[None, :]) & (y0[None, :] < fb[:, 3:4]) & \
           (fb[:, 1:2] < y1[None, :])
    count += int((over & ~inside).sum())
    nested = np.zeros((len(fb), len(fb)), bool)
    for i, f in enumerate(vg.frames.tolist()):
        for s in tree.ancestors(int(f)):
            if s in fidx:
                nested[fidx[s], i] = nested[i, fidx[s]] = True
    fo = (fb[:, None, 0] < fb[None, :, 2]) & (fb[None, :, 0] < fb[:, None, 2]) & \
         (fb[:, None, 1] < fb[None, :, 3]) & (fb[None, :, 1] < fb[:, None, 3])
    return count + int(np.triu(fo & ~nested, 1).sum())


def longest_path(n: int, src: np.ndarray, dst: np.ndarray, key: np.ndarray) -> list[int]:
    """Nodes of the longest path (most edges) over the edges that go forward in key order."""
    fwd = key[src] < key[dst]
    s, d = src[fwd], dst[fwd]
    order = np.argsort(key[s], kind="stable")
    dist = [0] * n
    prev = [-1] * n
    for a, b in zip(s[order].tolist(), d[order].tolist()):
        if dist[a] + 1 > dist[b]:
            dist[b], prev[b] = dist[a] + 1, a
    v = int(np.argmax(dist)) if n else -1
    path = []
    while v >= 0:
        path.append(v)
        v = prev[v]
    return path[::-1]


def bends(x: np.ndarray, y: np.ndarray, path: list[int], degrees: float = 5.0) -> int:
    p = np.stack([x[path], y[path]], axis=1)
    if len(p) < 3:
        return 0
    d = np.diff(p, axis=0)
    ang = np.arctan2(d[:, 1], d[:, 0])
    turn = np.abs((np.diff(ang) + np.pi) % (2 * np.pi) - np.pi)
    return int((turn > np.radians(degrees)).sum())


# ---------------------------------------------------------------- dot

def to_dot(vg, w, h) -> str:
    from mnnscope.inspector.model.layered import LAYER_GAP, NODE_GAP
    from mnnscope.inspector.model.scopes import ROOT as R
    lines = ["digraph g {", f"  graph [rankdir=TB, nodesep={NODE_GAP / 72:.4f}, ranksep={LAYER_GAP / 72:.4f}];",
             "  node [shape=box, fixedsize=true, label=\"\"];"]
    children: dict[int, list[str]] = {}
    for k, (item, parent) in enumerate(zip(vg.leaves.tolist(), vg.parent_of_leaf.tolist())):
        children.setdefault(parent, []).append(f"n{k} [width={w[k] / 72:.4f}, height={h[k] / 72:.4f}];")
    sub: dict[int, list[int]] = {}
    for f, parent in zip(vg.frames.tolist(), vg.parent_of_frame.tolist()):
        sub.setdefault(parent, []).append(f)

    def emit(s: int, indent: str) -> None:
        for line in children.get(s, []):
            lines.append(indent + line)
        for f in sub.get(s, []):
            lines.append(f"{indent}subgraph cluster_{f} {{")
            emit(f, indent + "  ")
            lines.append(indent + "}")
    emit(R, "  ")
    leaf_of = {int(it): k for k, it in enumerate(vg.leaves.tolist())}
    for a, b in zip(vg.edge_src.tolist(), vg.edge_dst.tolist()):
        lines.append(f"  n{leaf_of[a]} -> n{leaf_of[b]};")
    lines.append("}")
    return "\n".join(lines)


def bezier_polyline(ctrl: np.ndarray, pieces: int = 8) -> np.ndarray:
    t = np.linspace(0, 1, pieces + 1)[:, None]
    out = [ctrl[:1]]
    for k in range(0, len(ctrl) - 3, 3):
        p0, p1, p2, p3 = ctrl[k:k + 4]
        out.append(((1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t ** 2 * p2 + t ** 3 * p3)[1:])
    return np.concatenate(out)


def run_dot(text: str, n: int):
    t0 = time.perf_counter()
    u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(["dot", "-Tplain"], input=text, capture_output=True, text=True, timeout=3600)
    u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = time.perf_counter() - t0
    cpu = (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    x, y, polys = parse_plain(r.stdout, n)
    return x, y, polys, cpu, elapsed


def parse_plain(text: str, n: int):
    """Node centres and edge polylines (y down, in points) of `dot -Tplain` output for nodes n0..n<n-1>."""
    x, y = np.zeros(n), np.zeros(n)
    bw, bh = np.zeros(n), np.zeros(n)
    edges = []
    top = 0.0
    for line in text.splitlines():
        tok = line.split()
        if tok[0] == "graph":
            top = float(tok[3])
        elif tok[0] == "node":
            k = int(tok[1][1:])
            x[k], y[k] = float(tok[2]) * 72, float(tok[3]) * 72
            bw[k], bh[k] = float(tok[4]) * 72, float(tok[5]) * 72
        elif tok[0] == "edge":
            m = int(tok[3])
            ctrl = np.array(tok[4:4 + 2 * m], float).reshape(m, 2) * 72
            edges.append((int(tok[1][1:]), int(tok[2][1:]), ctrl))
    y = top * 72 - y  # y grows downwards, as ours
    polys = {}
    for a, b, ctrl in edges:
        ctrl = ctrl.copy()
        ctrl[:, 1] = top * 72 - ctrl[:, 1]
        poly = bezier_polyline(ctrl)
        # the spline stops where the arrowhead begins (10 points short of the head's border): the drawn edge
        # goes on to the border, as ours does, so its line is extended there
        tip = _to_border(poly[-1], poly[-1] - poly[-2], x[b], y[b], bw[b], bh[b])
        polys[(a, b)] = poly if tip is None else np.concatenate([poly, tip[None]])
    return x, y, polys


def _to_border(p: np.ndarray, d: np.ndarray, cx: float, cy: float, w: float, h: float) -> np.ndarray | None:
    """Where the ray from p along d first meets the box centred at (cx, cy); None if it does not."""
    norm = float(np.hypot(d[0], d[1]))
    if norm == 0:
        return None
    d = d / norm
    t_in, t_out = -np.inf, np.inf
    for c, lo, hi in ((0, cx - w / 2, cx + w / 2), (1, cy - h / 2, cy + h / 2)):
        if abs(d[c]) < 1e-12:
            if not lo <= p[c] <= hi:
                return None
            continue
        t0, t1 = sorted(((lo - p[c]) / d[c], (hi - p[c]) / d[c]))
        t_in, t_out = max(t_in, t0), min(t_out, t1)
    if t_in > t_out or t_in <= 0 or t_in > 30:
        return None
    return p + t_in * d


# ---------------------------------------------------------------- one row

def measure(path: Path, how: str) -> dict | None:
    from mnnscope.inspector.model.layout import estimate_sizes, layout_visible
    from mnnscope.inspector.model.scopes import visible_graph
    tree = load_tree(path)
    vg = visible_graph(tree, expansion(tree, how))
    L = len(vg.leaves)
    if L < 2:
        return None
    w, h = estimate_sizes(vg)
    times, walls = [], []
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        lay = layout_visible(vg, w, h)
        times.append(time.process_time() - c0)
        walls.append(time.perf_counter() - t0)
    leaf_of = np.full(tree.n_ops + tree.n_scopes, -1, np.int64)
    leaf_of[vg.leaves] = np.arange(L)
    src, dst = leaf_of[vg.edge_src], leaf_of[vg.edge_dst]
    ends = np.stack([src, dst], axis=1)
    ours = [lay.edge_pts[lay.edge_ptr[e]:lay.edge_ptr[e + 1]] for e in range(len(src))]
    n = tree.n_ops
    key = np.where(vg.leaves < n, tree.table.rank[np.minimum(vg.leaves, n - 1)],
                   tree.first_rank[np.maximum(vg.leaves - n, 0)]).astype(np.float64)
    path_nodes = longest_path(L, src, dst, key)
    dx, dy, dpolys, dot_s, dot_wall = run_dot(to_dot(vg, w, h), L)
    theirs = [dpolys.get((int(a), int(b)), np.zeros((0, 2))) for a, b in zip(src, dst)]
    return {"model": path.name, "expand": how, "nodes": L, "frames": len(vg.frames), "edges": len(src),
            "crossings_ours": count_crossings(ours, ends), "crossings_dot": count_crossings(theirs, ends),
            "overlaps_ours": overlaps(lay.x, lay.y, w, h, vg, lay.frame_box), "overlaps_dot": overlaps(dx, dy, w, h),
            "path_len": len(path_nodes), "bends_ours": bends(lay.x, lay.y, path_nodes),
            "bends_dot": bends(dx, dy, path_nodes), "time_ours_s": statistics.median(times), "time_dot_s": dot_s,
            "wall_ours_s": statistics.median(walls), "wall_dot_s": dot_wall,
            "size_ours": [lay.width, lay.height]}


def table(rows: list[dict]) -> str:
    out = ["| model | expansion | nodes | edges | crossings ours / dot (ratio) | longest-path bends ours / dot "
           "(path nodes) | overlaps ours / dot | layout CPU time ours / dot (speed-up) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        co, cd = r["crossings_ours"], r["crossings_dot"]
        ratio = "=" if co == cd else (f"{co / cd:.2f}x" if cd else "-")
        out.append(f"| {r['model']} | {r['expand']} | {r['nodes']} | {r['edges']} | {co} / {cd} ({ratio}) | "
                   f"{r['bends_ours']} / {r['bends_dot']} ({r['path_len']}) | "
                   f"{r['overlaps_ours']} / {r['overlaps_dot']} | "
                   f"{r['time_ours_s'] * 1000:.1f} ms / "
                   f"{r['time_dot_s'] * 1000:.0f} ms ({_speedup(r['time_dot_s'], r['time_ours_s'])}) |")
    tc = sum(r["crossings_ours"] for r in rows)
    td = sum(r["crossings_dot"] for r in rows)
    to = sum(r["time_ours_s"] for r in rows)
    tdot = sum(r["time_dot_s"] for r in rows)
    out.append(f"| **all** | | {sum(r['nodes'] for r in rows)} | {sum(r['edges'] for r in rows)} | {tc} / {td} "
               f"({tc / max(td, 1):.2f}x) | {sum(r['bends_ours'] for r in rows)} / {sum(r['bends_dot'] for r in rows)} "
               f"| {sum(r['overlaps_ours'] for r in rows)} / {sum(r['overlaps_dot'] for r in rows)} "
               f"| {to * 1000:.1f} ms / {tdot * 1000:.0f} ms ({tdot / max(to, 1e-9):.2f}x) |")  # (the 10x target)
    return "\n".join(out)


def dot_start(runs: int = 5) -> float:
    """dot's CPU time on a graph of two nodes (median of `runs`): its process start, paid once per layout."""
    return statistics.median(run_dot("digraph { n0 -> n1 }", 2)[3] for _ in range(runs))


def split_line(rows: list[dict], start_s: float, at: int = 400) -> str:
    """The totals of the rows of `at` nodes or more and of the smaller ones, and dot's process start."""
    def part(rs):
        to, td = sum(r["time_ours_s"] for r in rs), sum(r["time_dot_s"] for r in rs)
        return f"ours {to * 1000:.0f} ms / dot {td * 1000:.0f} ms ({_speedup(td, to)})"
    big = [r for r in rows if r["nodes"] >= at]
    small = [r for r in rows if r["nodes"] < at]
    return (f"rows of {at} nodes or more ({len(big)}): {part(big)}; smaller rows ({len(small)}): {part(small)}; "
            f"dot's process start (a two-node graph, median of 5): {start_s * 1000:.1f} ms CPU a row")


def _speedup(dot_s: float, ours_s: float) -> str:
    r = dot_s / max(ours_s, 1e-9)
    return f"{r:.1f}x" if r < 10 else f"{r:.0f}x"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("models", nargs="*", type=Path)
    p.add_argument("--expand", nargs="+", default=["default", "all"], choices=["default", "all", "top"])
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    args = p.parse_args(argv)
    if not shutil.which("dot"):
        print("skipped: Graphviz `dot` is not installed (apt-get install -y graphviz)")
        return 0
    models = args.models or [ROOT / "resources" / "samples" / s for s in SAMPLES] + real_models()
    rows = []
    for m in models:
        for how in args.expand:
            r = measure(m, how)
            if r is None:
                continue
            rows.append(r)
            print(f"{r['model']:>28} {how:>7}: {r['nodes']:>5} nodes, crossings {r['crossings_ours']} / "
                  f"{r['crossings_dot']}, bends {r['bends_ours']} / {r['bends_dot']}, time "
                  f"{r['time_ours_s'] * 1000:.1f} / {r['time_dot_s'] * 1000:.0f} ms", flush=True)
    print()
    print(table(rows))
    if rows:
        print()
        print(split_line(rows, dot_start()))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_layout.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
