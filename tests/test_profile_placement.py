"""Profile times placed on the viewed graph's nodes (inspector/profile/placement.py), without Qt: same model
by name, an .onnx profiled on MNN through the conversion's node map (fused ops over their region), and the
share of the measured time placed (coverage) on the samples and on real models."""
from __future__ import annotations

import json

import pytest

from mnnscope.inspector.formats.loader import load_model
from mnnscope.inspector.model.table import GraphTable
from mnnscope.inspector.profile import placement as plc
from mnnscope.inspector.profile.service import ProfileOptions, run_profile

from test_real_models import MODELS, real_model


def table_of(path) -> GraphTable:
    return GraphTable.from_graph(load_model(str(path), native=False))


def profile(path, client, **kw) -> dict:
    kw.setdefault("runs", 3)
    kw.setdefault("warmup", 1)
    return run_profile(ProfileOptions(model=str(path), save="none", **kw), client=client)


@pytest.fixture(scope="module")
def client(shared_runner):
    return shared_runner


# ----- rules, on a made-up result ------------------------------------------------------------------------
def test_a_fused_op_spreads_its_time_over_its_region_by_cost(samples):
    table = table_of(samples / "cnn.onnx")
    conv, bn, relu = "/conv1/Conv", "/bn1/BatchNormalization", "/relu/Relu"
    node_map = {"mnn_to_onnx": {"c1": [conv, bn, relu], "fc": ["/fc/Gemm"]},
                "inserted_for": {"tr": ["/fc/Gemm"]}, "onnx_to_mnn": {}}
    result = {"converted_from": str(samples / "cnn.onnx"),
              "ops": [{"name": "c1", "type": "Convolution", "ms": 3.0}, {"name": "c1_raster_0", "type": "Raster", "ms": 0.5},
                      {"name": "fc", "type": "Convolution", "ms": 1.0}, {"name": "tr", "type": "ConvertTensor", "ms": 0.25},
                      {"name": "mystery", "type": "Raster", "ms": 0.25}, {"name": "untimed", "type": "X", "ms": None}]}
    p = plc.place(result, table, node_map)
    assert p.how == "node_map"
    assert p.measured_ms == pytest.approx(5.0)
    assert p.placed_ms == pytest.approx(4.75) and p.coverage == pytest.approx(0.95)
    assert [u["name"] for u in p.unplaced] == ["mystery"]
    region = p.values[conv] + p.values[bn] + p.values[relu]
    assert region == pytest.approx(3.5)            # the op and its run-time piece, over the whole region
    assert p.values[conv] > 5 * p.values[relu]     # the convolution carries the weight of it
    assert p.values["/fc/Gemm"] == pytest.approx(1.25)   # an inserted op is charged to the node it serves
    assert sum(p.values.values()) == pytest.approx(p.placed_ms)
    assert set(p.op_nodes["c1"]) == {conv, bn, relu}


def test_without_a_node_map_a_converted_profile_places_nothing_and_says_why(samples):
    table = table_of(samples / "cnn.onnx")
    p = plc.place({"converted_from": "x.onnx", "ops": [{"name": "a", "ms": 1.0}]}, table, None)
    assert p.coverage == 0.0 and not p.values and "node map" in p.note


def test_overlay_values_share_and_throughput(samples):
    table = table_of(samples / "cnn.onnx")
    result = {"ops": [{"name": "/conv1/Conv", "type": "Conv", "ms": 2.0, "flops": 4e6},
                      {"name": "/fc/Gemm", "type": "Gemm", "ms": 2.0, "flops": None}]}
    p = plc.place(result, table)
    assert plc.overlay_values("share", p, result) == {"/conv1/Conv": 0.5, "/fc/Gemm": 0.5}
    assert plc.overlay_values("throughput", p, result) == {"/conv1/Conv": pytest.approx(2.0)}
    with pytest.raises(ValueError):
        plc.overlay_values("colour", p, result)
    agg = plc.by_type(result["ops"])
    assert [a["type"] for a in agg] == ["Conv", "Gemm"] and agg[0]["share"] == 0.5
    # a type none of whose ops has a count (ONNX Runtime's profiles) has unknown FLOPs, not 0 (the By-op-type table
    # wrote 0 where the Ops table left the cell blank)
    assert agg[0]["flops"] == 4e6 and agg[1]["flops"] is None and agg[1]["gflops"] is None


# ----- real runs -----------------------------------------------------------------------------------------
def test_mnn_profile_of_an_mnn_lands_on_its_ops_by_name(samples, client):
    for name in ("cnn.mnn", "encoder_block.mnn"):
        table = table_of(samples / name)
        result = profile(samples / name, client)
        p = plc.place(result, table)
        assert p.how == "name" and p.coverage >= 0.9, (name, p.unplaced)
        convs = [table.ids[i] for i, t in enumerate(table.op_types) if t == "Convolution"]
        assert convs and all(p.values.get(c, 0) > 0 for c in convs), name


def test_ort_profile_of_an_onnx_lands_on_its_nodes(samples, client):
    table = table_of(samples / "cnn.onnx")
    result = profile(samples / "cnn.onnx", client)
    p = plc.place(result, table)
    # ORT names what it fuses after the tensor it writes (/relu/Relu_output_0_nchwc): the Conv before the
    # Relu gets the time; only the layout reorders ORT inserts stay unplaced
    assert p.coverage >= 0.8, p.unplaced
    assert all(u["type"].startswith("Reorder") for u in p.unplaced)
    for node in ("/conv1/Conv", "/layer1/conv2/Conv", "/fc/Gemm"):
        assert p.values.get(node, 0) > 0, node
    assert p.values["/conv1/Conv"] > p.values.get("/relu/Relu", 0)
    # "<node>/SimplifiedLayerNormFusion/", "<node>/MatMulScaleFusion/": the fused pattern ends at that node
    table = table_of(samples / "moe_llm.onnx")
    p = plc.place(profile(samples / "moe_llm.onnx", client), table)
    assert p.coverage >= 0.9, p.unplaced
    assert p.values.get("/model/layers.0/input_layernorm/Mul", 0) > 0


def test_onnx_profiled_on_mnn_lands_on_onnx_nodes_through_the_node_map(samples, client):
    for name in ("encoder_block.onnx", "cnn.onnx", "moe_llm.onnx"):
        table = table_of(samples / name)
        result = profile(samples / name, client, engine="mnn")
        assert result.get("node_map_path"), "the service keeps the conversion's node map beside the run"
        nm = plc.load_node_map(result)
        assert nm and nm["mnn_to_onnx"]
        p = plc.place(result, table, nm)
        assert p.how == "node_map"
        assert p.coverage >= 0.9, (name, p.coverage, p.unplaced[:5])
        assert all(table.index_of(n) is not None for n in p.values)
        matmuls = [table.ids[i] for i, t in enumerate(table.op_types) if t in ("MatMul", "Conv")]
        assert sum(1 for m in matmuls if p.values.get(m, 0) > 0) >= len(matmuls) // 2, name


@pytest.mark.parametrize("package,rel", MODELS, ids=[r.split("/")[-1] for _, r in MODELS])
def test_real_models_profiled_on_mnn_place_at_least_90_percent(package, rel, client):
    path = real_model(package, rel)
    table = table_of(path)
    result = profile(path, client, engine="mnn", runs=1)
    p = plc.place(result, table, plc.load_node_map(result))
    if result.get("timing") != "per_op":   # MNN's Module API ran it (RNN loops): whole-run time only
        assert p.coverage is None and result.get("timing_unavailable")
        return
    assert p.coverage >= 0.9, (rel, p.coverage, p.unplaced[:5])
    json.dumps(p.to_json())
