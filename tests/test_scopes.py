"""Scope tree and visible graph on generated ONNX models of known structure, and on the samples."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mnnscope.inspector.formats.loadproc import GraphTable, load_table
from mnnscope.inspector.formats.onnx import load_onnx
from mnnscope.inspector.model.scopes import GROUP, ROOT, ScopeTree, visible_graph


def chain_model(names: list[str], op: str = "Relu") -> onnx.ModelProto:
    """A chain x -> op -> op -> ... -> y with the given node names (one op per name)."""
    nodes = []
    prev = "x"
    for k, name in enumerate(names):
        out = "y" if k == len(names) - 1 else f"t{k}"
        nodes.append(helper.make_node(op, [prev], [out], name=name))
        prev = out
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def table_of(model: onnx.ModelProto, tmp_path, name: str = "m.onnx") -> GraphTable:
    path = tmp_path / name
    onnx.save(model, path)
    return GraphTable.from_graph(load_onnx(path))


def test_scopes_fold_single_children_and_count_ops(tmp_path):
    names = []
    for layer in range(3):
        for part in ("attn/q_proj/MatMul", "attn/Softmax", "attn/Add", "mlp/up/MatMul", "mlp/Relu"):
            names.append(f"/model/layers.{layer}/{part}")
    names.append("/lm_head/MatMul")
    tree = ScopeTree(table_of(chain_model(names), tmp_path))
    # "/model/layers.K/attn/q_proj" and "/model/layers.K/mlp/up" hold one op each: folded into their parent;
    # "/lm_head" too, so its op sits at the top level.
    assert "/model/layers.0/attn/q_proj" not in tree.index
    assert "/lm_head" not in tree.index
    attn = tree.index["/model/layers.1/attn"]
    assert tree.count[attn] == 3
    assert tree.count[tree.index["/model"]] == 15
    assert tree.count[ROOT] == 16
    ops, subs = tree.children(attn)
    assert sorted(tree.table.names[i] for i in ops) == sorted(
        ["/model/layers.1/attn/q_proj/MatMul", "/model/layers.1/attn/Softmax", "/model/layers.1/attn/Add"])
    assert len(subs) == 0
    assert tree.depth[attn] == 3 and tree.display_path(attn) == "/model/layers.1/attn"


def test_folded_chain_keeps_its_name_as_a_prefix(tmp_path):
    names = [f"/encoder/blocks/{k}/{op}" for k in range(2) for op in ("A", "B")]
    tree = ScopeTree(table_of(chain_model(names), tmp_path))
    # root -> /encoder -> /encoder/blocks -> two blocks: the single-child scopes fold into one label
    labels = {tree.label[s] for s in range(tree.n_scopes)}
    assert "encoder/blocks" in labels
    assert tree.count[tree.index["/encoder/blocks"]] == 4


def test_big_scopes_are_split_into_groups(tmp_path):
    names = [f"/model/layers.{k}/{op}" for k in range(25) for op in ("MatMul", "Relu")]
    table = table_of(chain_model(names), tmp_path)
    tree = ScopeTree(table, group_limit=10)
    model = tree.index["/model"]
    groups = [s for s in tree.scope_children[model] if tree.kind[s] == GROUP]
    assert len(groups) == 3  # 25 children, at most 10 per group, balanced: 9 + 9 + 7
    sizes = sorted(len(tree.scope_children[g]) for g in groups)
    assert sizes == [7, 9, 9] and all(size <= 10 for size in sizes)
    assert tree.label[groups[0]] == "layers.0 \u2026 layers.8"
    # groups are consecutive in graph order and hold every layer once
    layers = [c for g in groups for c in tree.scope_children[g]]
    assert [tree.label[c] for c in layers] == [f"layers.{k}" for k in range(25)]
    assert sum(int(tree.count[g]) for g in groups) == 50


def test_visible_graph_aggregates_edges_of_collapsed_scopes(tmp_path):
    names = [f"/model/layers.{k}/{op}" for k in range(4) for op in ("MatMul", "Add", "Relu")]
    table = table_of(chain_model(names), tmp_path)
    tree = ScopeTree(table)
    model = tree.index["/model"]
    vg = visible_graph(tree, {ROOT})
    assert vg.leaves.tolist() == [tree.n_ops + model]  # everything in one box
    assert len(vg.edge_src) == 0
    vg = visible_graph(tree, {ROOT, model})
    assert len(vg.leaves) == 4 and len(vg.frames) == 1
    # the chain between consecutive layers: 3 edges, each standing for one op-level edge
    assert len(vg.edge_src) == 3 and vg.edge_count.tolist() == [1, 1, 1]
    layer1 = tree.index["/model/layers.1"]
    vg = visible_graph(tree, {ROOT, model, layer1})
    assert len(vg.leaves) == 3 + 3 and len(vg.frames) == 2
    # every op is shown by exactly one leaf: itself when open, else its box
    inside = [i for i in range(table.node_count) if tree.node_parent[i] == layer1]
    assert all(vg.rep[i] == i for i in inside)
    others = [i for i in range(table.node_count) if tree.node_parent[i] != layer1]
    assert all(vg.rep[i] >= tree.n_ops for i in others)
    assert len(vg.edge_src) == 5  # box0 -> MatMul -> Add -> Relu -> box2 -> box3
    full = visible_graph(tree, set(range(tree.n_scopes)))
    assert len(full.leaves) == table.node_count and len(full.edge_src) == table.node_count - 1


def test_default_expansion_opens_whole_levels_within_budget(tmp_path):
    names = [f"/model/layers.{k}/{blk}/{op}" for k in range(2) for blk in ("attn", "mlp")
             for op in ("MatMul", "Add", "Relu", "Mul")]
    tree = ScopeTree(table_of(chain_model(names), tmp_path))
    exp = tree.default_expanded(budget=6)
    # root holds one box (/model): too little to look at, so /model opens, then both layers at once
    assert tree.index["/model"] in exp
    assert tree.index["/model/layers.0"] in exp and tree.index["/model/layers.1"] in exp
    assert tree.index["/model/layers.0/attn"] not in exp
    vg = visible_graph(tree, exp)
    assert len(vg.leaves) == 4


def test_mnn_constants_hidden_and_bare_ops_inherit_scopes(samples):
    table = load_table(str(samples / "cnn.mnn"))
    tree = ScopeTree(table)
    consts = [i for i in range(table.node_count) if table.op_types[i] == "Const"]
    assert consts and all(tree.hidden[i] for i in consts)
    vg = visible_graph(tree, set(range(tree.n_scopes)))
    assert len(vg.leaves) == table.node_count - len(consts)
    assert not np.isin(vg.leaves, consts).any()
    # "Reshape17" has no scope in its name; it feeds /fc, so it is drawn in /fc
    r = table.ids.index("Reshape17")
    assert tree.inferred[r] and tree.path[tree.node_parent[r]] == "/fc"
    assert not tree.inferred[table.ids.index("input")]  # graph inputs stay at the top


@pytest.mark.parametrize("name", ["moe_llm", "cnn", "encoder_block", "control_flow", "external_data"])
def test_samples_every_op_shown_once_at_any_expansion(samples, name):
    for ext in ("onnx", "mnn"):
        table = load_table(str(samples / f"{name}.{ext}"))
        tree = ScopeTree(table)
        for exp in ({ROOT}, tree.default_expanded(), set(range(tree.n_scopes))):
            vg = visible_graph(tree, exp)
            shown = vg.rep[~tree.hidden]
            assert np.isin(shown, vg.leaves).all()
            assert len(np.unique(vg.leaves)) == len(vg.leaves)
            assert (vg.edge_src != vg.edge_dst).all()
