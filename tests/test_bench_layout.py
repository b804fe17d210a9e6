"""benchmarks/bench_layout.py measures dot's drawing as it is drawn: an edge's spline in `dot -Tplain` stops
where its arrowhead begins, 10 points short of the head's border; the arrowhead goes on to the border, as our
edges do, so a crossing there is a crossing."""
import numpy as np

from conftest import benchmark

TOP = 200.0  # points; -Tplain's y grows upwards from the bottom of the graph


def _plain(nodes: dict, edges: list) -> str:
    """-Tplain text for nodes {k: (x, y, w, h)} and straight edges [(tail, head, (x0, y0), (x1, y1))], all in
    points with y down (each edge one cubic Bezier)."""
    lines = [f"graph 1 4 {TOP / 72:.6f}"]
    for k, (x, y, w, h) in nodes.items():
        lines.append(f"node n{k} {x / 72:.6f} {(TOP - y) / 72:.6f} {w / 72:.6f} {h / 72:.6f} \"\" solid box black lightgrey")
    for a, b, p, q in edges:
        p, q = np.array(p, float), np.array(q, float)
        ctrl = [p, p + (q - p) / 3, p + 2 * (q - p) / 3, q]
        pts = " ".join(f"{c[0] / 72:.6f} {(TOP - c[1]) / 72:.6f}" for c in ctrl)
        lines.append(f"edge n{a} n{b} 4 {pts} solid black")
    lines.append("stop")
    return "\n".join(lines)


def test_dot_edges_are_measured_to_the_head_s_border_where_their_arrowhead_ends():
    B = benchmark("bench_layout")
    nodes = {0: (100, -16, 40, 32), 1: (60, 72, 40, 32), 2: (100, 116, 40, 32), 3: (150, 110, 40, 32)}
    # n0 -> n2 straight down, its spline ending at y 90 (n2's top is at 100); n1 -> n3 passes x 100 at y 95,
    # across n0 -> n2's arrowhead, and stops 5 points short of n3's left side
    text = _plain(nodes, [(0, 2, (100, 0), (100, 90)), (1, 3, (60, 88), (125, 100))])
    x, y, polys = B.parse_plain(text, 4)
    assert np.allclose(x, [100, 60, 100, 150]) and np.allclose(y, [-16, 72, 116, 110])
    assert np.allclose(polys[(0, 2)][-1], [100, 100])  # continued to n2's top border
    end = polys[(1, 3)][-1]  # continued along its direction into n3's left side
    assert np.allclose(end, [130, 100 + 12 * 5 / 65])
    ends = np.array([[0, 2], [1, 3]])
    assert B.count_crossings([polys[(0, 2)], polys[(1, 3)]], ends) == 1
    # the splines alone (what the benchmark measured before) miss it
    assert B.count_crossings([polys[(0, 2)][:-1], polys[(1, 3)][:-1]], ends) == 0


def test_a_ray_that_misses_the_head_adds_nothing():
    B = benchmark("bench_layout")
    assert B._to_border(np.array([0.0, 0.0]), np.array([1.0, 0.0]), 0.0, 50.0, 40.0, 32.0) is None
    assert B._to_border(np.array([0.0, 0.0]), np.array([0.0, 0.0]), 0.0, 50.0, 40.0, 32.0) is None
    hit = B._to_border(np.array([0.0, 0.0]), np.array([0.0, 1.0]), 0.0, 20.0, 40.0, 32.0)
    assert np.allclose(hit, [0, 4])


def test_the_split_line_totals_large_and_small_rows_apart():
    B = benchmark("bench_layout")
    rows = [{"nodes": 12, "time_ours_s": 0.001, "time_dot_s": 0.006},
            {"nodes": 464, "time_ours_s": 0.005, "time_dot_s": 0.100},
            {"nodes": 902, "time_ours_s": 0.010, "time_dot_s": 0.500}]
    line = B.split_line(rows, 0.008)
    assert "rows of 400 nodes or more (2): ours 15 ms / dot 600 ms (40x)" in line
    assert "smaller rows (1): ours 1 ms / dot 6 ms (6.0x)" in line and "8.0 ms CPU a row" in line
