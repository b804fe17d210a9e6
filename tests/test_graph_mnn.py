"""The .mnn adapter against MNN's own view of the same files (MNN.expr.load_as_list in the runner)."""
from __future__ import annotations

import json

import pytest

from mnnscope.inspector.model.graph import ModelGraph
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.formats.mnn import load_mnn

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


def _real_shapes(graph):
    """{tensor: shape} of every computed tensor of the main graph (inputs and weights left out)."""
    produced = {t: d["op_type"] for _, d in graph.g.nodes(data=True) for t in d["outputs"] if d["op_type"] != "Input"}
    return {t: graph.tensors[t].shape for t in produced}, produced


def test_free_input_dims_get_default_sizes(samples, shared_runner):
    """moe_llm.mnn's input_ids is [1, -1]: MNN shapes nothing behind it until the runner sizes it."""
    from mnnscope.inspector.inputs.data import DEFAULT_BATCH, DEFAULT_SEQUENCE
    g = load_model(samples / "moe_llm.mnn", client=shared_runner)
    assert g.meta["shapes_for_inputs"] == {"input_ids": [DEFAULT_BATCH, DEFAULT_SEQUENCE]}
    assert g.tensors["input_ids"].shape == [1, -1], "the input keeps the file's own free shape"
    shapes, _ = _real_shapes(g)
    assert all(s is not None for s in shapes.values()), [t for t, s in shapes.items() if s is None][:5]
    assert g.tensors["logits"].shape[:2] == [DEFAULT_BATCH, DEFAULT_SEQUENCE]
    assert not g.warnings
    # A fixed-shape model is left as it is: no sizes to report.
    assert "shapes_for_inputs" not in load_model(samples / "cnn.mnn", client=shared_runner).meta


def test_filled_shapes_match_onnxruntime(samples, shared_runner, tmp_path):
    """Shapes MNN computes for input_ids=[1, 5] equal ONNX Runtime's for the same-named tensors of the
    source model run at [1, 5] (ORT runs in the runner: dump_tensors)."""
    import numpy as np
    seq = 5
    g = load_model(samples / "moe_llm.mnn", client=shared_runner, input_shapes={"input_ids": [1, seq]})
    assert g.meta["shapes_for_inputs"] == {"input_ids": [1, seq]}
    np.savez(tmp_path / "in.npz", input_ids=np.zeros((1, seq), dtype=np.int64))
    ort = shared_runner.request("dump_tensors", {"engine": "onnxruntime", "model": str(samples / "moe_llm.onnx"),
                                                 "inputs": str(tmp_path / "in.npz"), "out_dir": str(tmp_path / "ort")},
                                timeout=120)
    ours, producers = _real_shapes(g)
    common = [t for t in ort["manifest"] if t in ours]
    assert len(common) >= 100, len(common)
    conv_form = 0
    for t in common:
        theirs = list(ort["manifest"][t]["shape"])
        if ours[t] != theirs:
            # The converter turns a MatMul into a 1x1 Convolution (plus a layout ConvertTensor) whose
            # output is [N, C, 1, 1]: the only difference allowed.
            assert producers[t] in ("Convolution", "ConvertTensor") and ours[t] == theirs + [1, 1], \
                (t, producers[t], ours[t], theirs)
            conv_form += 1
    assert conv_form <= len(common) // 10, conv_form
    assert ours["logits"] == list(ort["manifest"]["logits"]["shape"]) == [1, seq, 96]


def test_a_size_that_does_not_fit_only_warns(samples, shared_runner):
    g = load_model(samples / "encoder_block.mnn", client=shared_runner, input_shapes={"hidden": [1, 8, 63]})
    assert g.node_count > 0 and g.meta["shapes_for_inputs"] == {"hidden": [1, 8, 63]}
    assert any("could not compute" in w and "hidden=[1, 8, 63]" in w for w in g.warnings), g.warnings
    g = load_model(samples / "moe_llm.mnn", client=shared_runner, input_shapes={"input_ids": [1, 2, 3], "nope": [1]})
    assert any("'nope'" in w for w in g.warnings) and any("size given has 3" in w for w in g.warnings)
    assert g.meta["shapes_for_inputs"] == {"input_ids": [1, 8]}, "a wrong rank falls back to the defaults"


def test_inspect_shape_option(samples):
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def inspect(*args):
        return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "inspect", str(samples / "moe_llm.mnn"), *args],
                              capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)

    r = inspect("--json", "--shape", "input_ids=1,5")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["shapes_for_inputs"] == {"input_ids": [1, 5]}
    assert data["outputs"][0]["name"] == "logits" and data["outputs"][0]["shape"][:2] == [1, 5]
    assert data["inputs"][0]["shape"] == [1, -1]
    r = inspect("--shape", "input_ids=1,5")
    assert r.returncode == 0 and "shapes computed for input_ids=[1, 5]" in r.stderr
    r = inspect("--shape", "input_ids=1,0")
    assert r.returncode != 0 and "positive" in r.stderr and "Traceback" not in r.stderr
