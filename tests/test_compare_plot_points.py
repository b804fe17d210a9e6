"""The Compare dock's error-against-depth points, on the bundled encoder in full int8 (a new-user try at 1024x700,
2026-12-04): the mode read "int8 match, no divergence reaches the outputs" while the plot showed a red "over" at
depth 19 (the Reshape after a harmless Transpose, carrying its rel L2 0.0548 on), and hovering a point showed
pyqtgraph's "x: 19 y: -1.26 data=16". A tensor over tolerance only by carrying a harmless divergence is amber, as the
divergence is, and every point's tooltip names its node, its error and what its colour means."""
from __future__ import annotations

import json

import pytest

from mnnscope.inspector.compare import errormap


@pytest.fixture(scope="module")
def int8(tmp_path_factory, samples):
    from mnnscope.inspector.cli.app import main
    import contextlib
    import io
    model = tmp_path_factory.mktemp("plot") / "encoder_block.onnx"
    model.write_bytes((samples / "encoder_block.onnx").read_bytes())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["compare", str(model), "--modes", "int8", "--no-fix", "--json"])
    assert code == 0
    (mode,) = json.loads(out.getvalue())["modes"]
    return mode


def test_a_tensor_carrying_a_harmless_divergence_is_amber_not_over(int8):
    assert int8["ok"] and int8["first_divergence"] is None
    over = [t for t in int8["tensors"] if not t["within"]]
    assert len(over) >= 2, [t["onnx_node"] for t in over]  # the harmless divergence and what carried it on
    assert all(t["reaches_output"] is False for t in over)
    heads = {h["tensor"] for h in int8["harmless"]}
    carried = [t for t in over if t["name"] not in heads]
    assert carried, "only the harmless divergence itself is over tolerance: nothing carried it on"
    points = errormap.depth_points(int8)
    # every point over tolerance in a mode whose divergences all die out is amber (harmless), none red
    assert all(p["harmless"] for p in points if not p["within"]), \
        [(p["onnx_node"], p["rel_l2"]) for p in points if not p["within"] and not p["harmless"]]


def test_each_point_says_its_node_error_and_colour(int8):
    points = errormap.depth_points(int8)
    harmless = next(p for p in points if not p["within"])
    tip = errormap.point_tip(harmless)
    assert tip.startswith(harmless["onnx_node"]) and f"rel L2 {harmless['rel_l2']:.3g}" in tip
    assert "harmless" in tip and "x:" not in tip and "data=" not in tip
    within = next(p for p in points if p["within"] and p["rel_l2"] is not None)
    assert "within tolerance" in errormap.point_tip(within)
    # a point that only carries an error made upstream says so: helper 112 read "Harmless (0)" on the tab beside amber
    # points whose tooltips said "harmless", as if the tab had missed them
    heads = {h["tensor"] for h in int8["harmless"]}
    carried = next(p for p in points if not p["within"] and p["tensor"] not in heads)
    assert carried["carried"] and "by the error it carries from upstream" in errormap.point_tip(carried)
    made = next(p for p in points if p["tensor"] in heads)
    assert not made["carried"] and "carries from upstream" not in errormap.point_tip(made)


def test_the_ranking_says_harmless_where_the_harmless_tab_does(int8):
    """The ranking put Transpose_3 first, its output "over", while the Harmless tab listed it: read as blaming an op that
    cannot cause the error (helper 107). Its row and the rows that only carried its error say "over (harmless)"."""
    rows = errormap.ranking_rows(int8)
    said = {r[1]: r[5] for r in rows}
    heads = {h["onnx_node"] for h in int8["harmless"]}
    assert heads and all(said[n] == errormap.HARMLESS_OVER for n in heads if n in said), said
    assert "over" not in said.values(), said   # every divergence of this run dies out: none is plainly "over"
    assert rows[0][5] == errormap.HARMLESS_OVER   # (Transpose_3, first by error introduced)
