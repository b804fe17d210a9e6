"""The ONNX adapter against what onnx itself reports, on the bundled samples and generated models."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mnnscope.inspector.errors import ModelError

from mnnscope.inspector.model.graph import ModelGraph, scope_of
from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.formats.onnx import load_onnx

ONNX_SAMPLES = ["cnn", "encoder_block", "moe_llm", "unsupported_op", "external_data", "control_flow"]


def _onnx_signature(vis):
    out = []
    for vi in vis:
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                for d in vi.type.tensor_type.shape.dim]
        out.append((vi.name, dims, helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type).name))
    return out


@pytest.mark.parametrize("name", ONNX_SAMPLES)
def test_sample_matches_onnx(samples, name):
    path = samples / f"{name}.onnx"
    model = onnx.load(str(path), load_external_data=False)
    g = load_onnx(path)
    assert g.format == "onnx"
    assert g.node_count == len(model.graph.node)
    assert g.op_types() == dict(Counter(n.op_type for n in model.graph.node))
    inits = {i.name for i in model.graph.initializer}
    want_in = [s for s in _onnx_signature(model.graph.input) if s[0] not in inits]
    assert [(i["name"], i["shape"], i["dtype"]) for i in g.io_signature(g.inputs)] == want_in
    assert [o["name"] for o in g.io_signature(g.outputs)] == [o.name for o in model.graph.output]
    assert g.params() == sum(int(np.prod(i.dims)) for i in model.graph.initializer)
    # One edge per (tensor, consumer) whose producer is an operator of this graph.
    produced = {t for n in model.graph.node for t in n.output}
    pairs = {(t, i) for i, n in enumerate(model.graph.node) for t in n.input if t in produced}
    assert g.g.number_of_edges() == len(pairs)
    assert g.opset["ai.onnx"] == next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def test_subgraphs_are_nested(samples):
    g = load_onnx(samples / "control_flow.onnx")
    model = onnx.load(str(samples / "control_flow.onnx"))
    subs = list(g.subgraphs())
    want = [(n.op_type, a.name, len(a.g.node)) for n in model.graph.node for a in n.attribute
            if a.type == onnx.AttributeProto.GRAPH]
    got = [(g.g.nodes[owner]["op_type"], attr, sub.node_count) for owner, attr, sub in subs]
    assert sorted(got) == sorted(want)
    assert {"If", "Loop"} <= {op for op, _, _ in got}


def test_shape_inference_fills_intermediate_shapes(samples, shared_runner):
    g = load_model(samples / "cnn.onnx", client=shared_runner)
    gemm = next(d for _, d in g.g.nodes(data=True) if d["op_type"] == "Gemm")
    assert g.tensors[gemm["outputs"][0]].shape == [1, 10]
    conv = next(d for _, d in g.g.nodes(data=True) if d["op_type"] == "Conv")
    assert g.tensors[conv["outputs"][0]].shape[:2] == [1, g.tensors[conv["inputs"][1]].shape[0]]
    assert not g.warnings


def test_external_data_sizes_and_missing_file(samples, tmp_path):
    g = load_onnx(samples / "external_data.onnx")
    inits = [t for t in g.tensors.values() if t.is_initializer]
    assert inits and all(t.external for t in inits)
    assert sum(t.bytes for t in inits) == (samples / "external_data.onnx.data").stat().st_size
    assert not g.warnings
    lonely = tmp_path / "external_data.onnx"
    lonely.write_bytes((samples / "external_data.onnx").read_bytes())
    g2 = load_onnx(lonely)
    # one warning for the file, with the tensors it holds (one a tensor made six notices: helper 117)
    (w,) = g2.warnings
    assert w == f"external data file 'external_data.onnx.data' is missing: the weights of tensors '{inits[0].name}', " \
        f"'{inits[1].name}' and {len(inits) - 2} more are not in the model's folder", w


def _mlp(tmp_path: Path, location: str) -> Path:
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    t = model.graph.initializer[0]
    t.data_location = TensorProto.EXTERNAL
    t.ClearField("raw_data")
    t.ClearField("float_data")
    for k, v in (("location", location), ("offset", "0"), ("length", "64")):
        e = t.external_data.add()
        e.key, e.value = k, v
    p = tmp_path / "m.onnx"
    onnx.save(model, str(p))
    return p


def test_external_data_outside_folder_is_refused(tmp_path):
    with pytest.raises(ModelError, match="outside the model's folder"):
        load_onnx(_mlp(tmp_path, "../../etc/passwd"))
    with pytest.raises(ModelError, match="outside the model's folder"):
        load_onnx(_mlp(tmp_path, "/etc/passwd"))


def test_unnamed_nodes_get_stable_unique_ids(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Add", ["a", "b"], ["y"], name="dup"), helper.make_node("Neg", ["y"], ["z"], name="dup")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    p = tmp_path / "u.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(p))
    ids1 = list(load_onnx(p).g.nodes)
    ids2 = list(load_onnx(p).g.nodes)
    assert ids1 == ids2 and len(set(ids1)) == 4
    assert ids1[2] == "dup" and ids1[3] != "dup"


def test_scopes_from_names(samples):
    assert scope_of("/model/layers.0/attn/MatMul") == "/model/layers.0/attn"
    assert scope_of("MatMul_3") == ""
    g = load_onnx(samples / "moe_llm.onnx")
    scopes = {d["scope"] for _, d in g.g.nodes(data=True)}
    assert any(s.startswith("/model/layers.0") for s in scopes)
    assert g.top_scopes()


def test_round_trip_through_dict(samples):
    g = load_onnx(samples / "control_flow.onnx")
    back = ModelGraph.from_dict(g.to_dict())
    assert list(back.g.nodes) == list(g.g.nodes)
    assert sorted(back.g.edges(keys=True)) == sorted(g.g.edges(keys=True))
    assert sum(1 for _ in back.subgraphs()) == sum(1 for _ in g.subgraphs())
    assert back.tensors.keys() == g.tensors.keys()


def test_names_index_finds_every_node_by_id_and_by_name(samples):
    """The Compare and Text docks find result nodes by ONNX name (or id when unnamed) through one index."""
    from mnnscope.inspector.model.table import GraphTable
    table = GraphTable.from_graph(load_onnx(str(samples / "encoder_block.onnx")))
    index = table.names_index()
    assert len(set(index.values())) == table.node_count
    for i in range(table.node_count):
        assert index[table.names[i] or table.ids[i]] == i
    gelu = "/encoder/layer.0/ffn/intermediate/act/Gelu"
    assert index[gelu] == table.names.index(gelu)
