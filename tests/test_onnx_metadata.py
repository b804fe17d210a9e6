"""Modern PyTorch exports (torch.onnx.export(dynamo=True)): scopes from the node metadata the exporter writes,
and shapes whose symbolic dims keep the model's own names through the layers (issue 19, items 3 and 4).
The models are generated (tests/onnx_dynamo.py) with exactly the metadata the exporter records."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import onnx
import pytest

from onnx_dynamo import KEYS, dynamo_encoder
from mnnscope.inspector.formats.loadproc import load_table
from mnnscope.inspector.formats.onnx import load_onnx, merge_shapes, metadata_scope
from mnnscope.inspector.model.graph import ModelGraph
from mnnscope.inspector.model.scopes import ScopeTree
from mnnscope.inspector.model.table import GraphTable
from mnnscope.runner import symdims
from mnnscope.runner.structure import infer_shapes
from tests.conftest import ROOT

LAYER_SCOPES = {"/encoder/layers.0/self_attn", "/encoder/layers.0/mlp", "/encoder/layers.1/self_attn",
                "/encoder/layers.1/mlp"}
RESIDUAL = ["l0_add", "l0_add_1", "l1_add", "l1_add_1", "y"]  # the residual stream, layer after layer


def save(tmp_path, name="dynamo.onnx", **kw):
    path = tmp_path / name
    onnx.save(dynamo_encoder(**kw), path)
    return path


def scope_paths(path) -> set[str]:
    return set(ScopeTree(GraphTable.from_graph(load_onnx(path))).path)


# ----- item 3: scopes ---------------------------------------------------------------------------------------
def test_metadata_scope_reads_what_the_exporter_writes():
    scopes = "pkg.torch.onnx.name_scopes"
    assert metadata_scope({scopes: "['', 'encoder', 'encoder.layers.0', 'encoder.layers.0.self_attn', 'sdpa']"}) \
        == "/encoder/layers.0/self_attn"
    # the namespace string alone says the same (its last part is the fx node, not a module)
    assert metadata_scope({"namespace": ": __main__.Net/network: torch.nn.modules.container.Sequential/network.0: "
                                        "torch.nn.modules.linear.Linear/linear: aten.linear.default"}) \
        == "/network/network.0"  # a container's child keeps the container's name: "0" alone says nothing
    assert metadata_scope({scopes: "['', 'add_3']"}) == ""  # an op of the model's top level
    assert metadata_scope({scopes: "['add_3']"}) == ""      # no nn_module_stack: the exporter writes the name only
    assert metadata_scope({scopes: "[\"L['self'].enc\", \"L['self'].enc.fc\", 'x']"}) == "/enc/fc"
    assert metadata_scope({scopes: "['', 'a\\\\b', 'x']"}) == "/a\\b"  # escapes: read by literal_eval
    for bad in ("garbage[", "[1, 2]", "", "[]", "{'a': 1}"):
        assert metadata_scope({scopes: bad}) is None, bad
    assert metadata_scope({"namespace": "no colon here"}) is None
    assert metadata_scope({}) is None


def test_dynamo_export_shows_its_module_scopes(tmp_path):
    path = save(tmp_path)
    g = load_onnx(path)
    assert g.meta["scopes_from"] == "metadata"
    assert not any("/" in d["name"] for _, d in g.g.nodes(data=True))  # names alone would give no scope
    scopes = {d["scope"] for _, d in g.g.nodes(data=True)}
    assert {"/encoder/layers.0/self_attn/q_proj", "/encoder/layers.1/mlp/fc2", "/encoder/layers.0/norm1"} <= scopes
    assert g.top_scopes() == ["encoder/layers.0", "encoder/layers.1"]
    tree = ScopeTree(GraphTable.from_graph(g))
    assert LAYER_SCOPES <= set(tree.path)
    attn = tree.index["/encoder/layers.0/self_attn"]
    assert tree.count[attn] == 20  # q, k, v, o projections (2 ops each), 3+1 Reshape, 5 Transpose, 2 MatMul, Softmax
    # the same model with TorchScript-style names and no metadata has the same tree: one notion of scope
    assert scope_paths(save(tmp_path, "named.onnx", keys=(), slash_names=True)) == set(tree.path)


@pytest.mark.parametrize("keys", [("pkg.torch.onnx.name_scopes",), ("namespace",), KEYS])
def test_either_metadata_key_is_enough(tmp_path, keys):
    assert LAYER_SCOPES <= scope_paths(save(tmp_path, keys=keys))


def test_names_are_the_fallback_only_without_metadata(tmp_path):
    bare = load_onnx(save(tmp_path, "bare.onnx", keys=()))
    assert bare.meta["scopes_from"] == "names" and bare.top_scopes() == []  # the flat tangle of the issue
    named = load_onnx(save(tmp_path, "named.onnx", keys=(), slash_names=True))
    assert named.meta["scopes_from"] == "names" and named.top_scopes() == ["encoder/layers.0", "encoder/layers.1"]
    # both present: the metadata wins (a node's name may be anything an optimizer gave it)
    both = load_onnx(save(tmp_path, "both.onnx", slash_names=True))
    assert both.meta["scopes_from"] == "metadata"
    assert {d["scope"] for _, d in both.g.nodes(data=True)} == \
        {d["scope"] for _, d in load_onnx(save(tmp_path)).g.nodes(data=True)}


def test_metadata_scopes_survive_the_trips_to_the_app(tmp_path):
    path = save(tmp_path)
    g = load_onnx(path)
    back = ModelGraph.from_dict(json.loads(json.dumps(g.to_dict())))
    assert [d["scope"] for _, d in back.g.nodes(data=True)] == [d["scope"] for _, d in g.g.nodes(data=True)]
    table = load_table(str(path))  # parsed in the load process, as the app does
    assert table.scopes == [d["scope"] for _, d in g.g.nodes(data=True)]
    assert table.info["meta"]["scopes_from"] == "metadata"


# ----- item 4: symbolic dims ----------------------------------------------------------------------------------
def plain_inference(path) -> dict:
    m = onnx.shape_inference.infer_shapes(onnx.load(path))
    return {vi.name: [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]
            for vi in list(m.graph.value_info) + list(m.graph.output)}


@pytest.mark.parametrize("view", ["const", "shape"])
def test_the_residual_stream_keeps_the_models_dim_names(tmp_path, view):
    path = save(tmp_path, view=view)
    before = plain_inference(path)
    assert any(isinstance(d, str) and d.startswith("unk__") for s in before.values() for d in s)  # the issue
    assert before["l0_add"] != before["l1_add"]  # a new name at every layer
    shapes = {t: s["shape"] for t, s in infer_shapes(SimpleNamespace(payload={"path": str(path)}))["shapes"].items()}
    invented = {t: s for t, s in shapes.items() if s and any(isinstance(d, str) and d.startswith("unk__") for d in s)}
    assert invented == {}
    for t in RESIDUAL:
        assert shapes[t] == ["batch", "seq", 32], t
    assert shapes["l1_scores"] == ["batch", 4, "seq", "seq"]
    assert shapes["l0_q_h"] == ["batch", "seq", 4, 8]


def test_unify_joins_only_what_the_ops_prove():
    nodes = [("Add", {}, ["a", "b"], ["c"]),            # [1, seq, 64] + [1, unk__1, 64] -> [1, unk__2, 64]
             ("Reshape", {}, ["c", "s"], ["r"]),          # [1, unk__2, 64] -> [1, unk__3, 4, 16]: same elements
             ("MatMul", {}, ["r", "w"], ["m"]),           # contraction: unk__5 == 16
             ("Add", {}, ["p", "q"], ["pq"]),             # [unk__7] + [1] -> [unk__8]: the 1 broadcasts, nothing proved
             ("Mul", {}, ["u", "v"], ["uv"])]             # [unk__10] + [unk__11] -> [unk__12]: invented names only
    shapes = {"a": [1, "seq", 64], "b": [1, "unk__1", 64], "c": [1, "unk__2", 64], "s": [4],
              "r": [1, "unk__3", 4, 16], "w": ["unk__5", 8], "m": [1, "unk__3", 4, 8],
              "p": ["unk__7"], "q": [1], "pq": ["unk__8"],
              "u": ["unk__10"], "v": ["unk__11"], "uv": ["unk__12"]}
    rename = symdims.unify(nodes, shapes, ["seq"])
    assert rename == {"unk__1": "seq", "unk__2": "seq", "unk__3": "seq", "unk__5": 16,
                      "unk__11": "unk__10", "unk__12": "unk__10", "unk__8": "unk__7"}
    assert symdims.apply(["batch", "unk__3", 32], rename) == ["batch", "seq", 32]
    # a graph input's dim keeps its name, even an invented-looking one: it is the file's interface
    assert symdims.unify([("Add", {}, ["a", "b"], ["c"])], {"a": ["unk__1"], "b": ["unk__4"], "c": ["unk__5"]},
                         ["unk__4"]) == {"unk__1": "unk__4", "unk__5": "unk__4"}
    assert symdims.unify([("Add", {}, ["a", "b"], ["c"])], {"a": ["unk__1"], "b": [3], "c": ["unk__2"]}) == \
        {"unk__1": 3, "unk__2": 3}
    # contradictions (a symbol that was 1 after all) rename nothing; malformed input proves nothing
    clash = {"a": ["unk__1"], "b": [3], "d": [5], "c": ["unk__2"]}
    assert symdims.unify([("Add", {}, ["a", "b", "d"], ["c"])], clash) == {}
    assert symdims.unify([("Concat", {"axis": "x"}, ["a"], ["c"])], {"a": ["unk__1"], "c": ["seq"]}) == {}


def test_dims_at_gives_made_up_dims_their_numbers_at_given_input_sizes(tmp_path):
    """An output declared with names an exporter made up (PP-OCRv6 det: "ConvTranspose_459_o0__d0"...) cannot be
    evaluated at any input size; shape inference again with the inputs fixed gives each its number there."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    w = numpy_helper.from_array(np.ones((3, 2, 2, 2), np.float32), "w")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["y_d0", "y_d1", "y_d2", "y_d3"])],
                              [w])
    path = tmp_path / "made_up.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    plain = infer_shapes(SimpleNamespace(payload={"path": str(path)}))
    assert "dims_at" not in plain and plain["shapes"]["y"]["shape"][2:] == ["y_d2", "y_d3"]
    got = infer_shapes(SimpleNamespace(payload={"path": str(path), "input_shapes": {"x": [1, 3, 8, 5]}}))
    assert got["shapes"] == plain["shapes"]
    assert {k: got["dims_at"][k] for k in ("y_d0", "y_d1", "y_d2", "y_d3")} == {"y_d0": 1, "y_d1": 2, "y_d2": 16,
                                                                                  "y_d3": 10}
    only = infer_shapes(SimpleNamespace(payload={"path": str(path), "input_shapes": {"x": [1, 3, 4, 4]},
                                                 "dims_only": True}))
    assert set(only) == {"dims_at"} and only["dims_at"]["y_d2"] == 8


def test_stored_invented_dims_give_way_to_the_named_ones(tmp_path):
    path = save(tmp_path)
    g = load_onnx(path)
    assert g.tensors["y"].shape == ["batch", "unk__35", 32]  # as the file stores it
    result = infer_shapes(SimpleNamespace(payload={"path": str(path)}))["shapes"]
    merge_shapes(g, result)
    assert g.tensors["y"].shape == ["batch", "seq", 32]
    assert g.tensors["x"].shape == ["batch", "seq", 32]  # the model's own shapes are never touched
    table = GraphTable.from_graph(load_onnx(path))
    assert table.merge_shapes(result) > 0
    assert table.shapes[table.tensor_index("y")] == ["batch", "seq", 32]


# ----- both in `mnnscope inspect --json` --------------------------------------------------------------------------
def mnnscope(*args, timeout=180):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def test_inspect_json_reports_metadata_scopes_and_named_shapes(tmp_path):
    r = mnnscope("inspect", save(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["scopes"] == 2 and data["scopes_from"] == "metadata"
    assert data["outputs"] == [{"name": "y", "shape": ["batch", "seq", 32], "dtype": "float32"}]
    r = mnnscope("inspect", save(tmp_path, "bare.onnx", keys=()), "--json", "--no-shapes")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["scopes"] == 0 and data["scopes_from"] == "names"
    assert data["outputs"][0]["shape"] == ["batch", "unk__35", 32]  # without the runner: as stored
    r = mnnscope("inspect", save(tmp_path))
    assert "top-level scopes 2 (from node metadata)" in r.stdout
