"""The .mnn adapter against MNN's own view of the same files (MNN.expr.load_as_list in the runner)."""
from __future__ import annotations

import json

import pytest

from inspector.graph import ModelGraph
from inspector.loader import load_model
from inspector.mnn_loader import load_mnn

MNN_SAMPLES = ["cnn", "encoder_block", "moe_llm", "external_data", "control_flow"]


@pytest.mark.parametrize("name", MNN_SAMPLES)
def test_structure_matches_mnn(samples, shared_runner, name):
    path = samples / f"{name}.mnn"
    mnn_view = shared_runner.request("load_structure", {"path": str(path)}, timeout=120)["vars"]
    g = load_model(path, client=shared_runner)
    ours = {t: d["op_type"] for _, d in g.g.nodes(data=True) for t in d["outputs"]}
    theirs = {v["name"]: v["op_type"] for v in mnn_view}
    assert set(ours) == set(theirs)
    # MNN's expr API names BinaryOp/UnaryOp ops by their operation (ADD, SQRT, ...).
    for t, op in theirs.items():
        assert ours[t] == op or ours[t] in ("BinaryOp", "UnaryOp", "Eltwise"), (t, ours[t], op)
    # Shapes come from MNN: every tensor MNN could shape has that shape here.
    for v in mnn_view:
        if v["shape"] is not None and v["op_type"] != "Input":
            assert g.tensors[v["name"]].shape == v["shape"], v["name"]
    assert not g.warnings


def test_conv_attributes_and_weights(samples):
    g = load_mnn(samples / "cnn.mnn")
    convs = [d for _, d in g.g.nodes(data=True) if d["op_type"] == "Convolution"]
    assert convs
    first = convs[0]["attrs"]
    assert first["kernel"] == [3, 3] and first.get("outputCount")
    assert any(d["attrs"].get("relu") for d in convs), "Conv+BN+Relu should fuse relu into the conv"
    assert g.params() > 0
    assert all(w["dtype"] == "float32" for d in convs for w in d["attrs"]["weights"])


def test_control_flow_bodies_are_nested(samples):
    g = load_mnn(samples / "control_flow.mnn")
    subs = {(g.g.nodes[owner]["op_type"], attr) for owner, attr, _ in g.subgraphs()}
    assert {("If", "then_graph"), ("If", "else_graph"), ("While", "body_graph")} <= subs
    back = ModelGraph.from_dict(json.loads(json.dumps(g.to_dict())))
    assert sum(s.node_count for _, _, s in back.subgraphs()) == sum(s.node_count for _, _, s in g.subgraphs())


def test_unknown_mnn_dtypes_are_null_not_a_string(samples, shared_runner):
    """MNN cannot type tensors behind a dynamic input until a resize: that is unknown, not the dtype "None"."""
    vars_ = shared_runner.request("load_structure", {"path": str(samples / "moe_llm.mnn")}, timeout=120)["vars"]
    dtypes = {v["dtype"] for v in vars_}
    assert "None" not in dtypes and None in dtypes and "float32" in dtypes
