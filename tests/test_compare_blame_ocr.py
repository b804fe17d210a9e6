"""What compare blames, ranks and keeps in float on a real model a first-time user could not read (PP-OCRv6 text
recognition, paddle2onnx: Conv+bias Add, Sigmoid*x SiLU, erf-GELU and LayerNorm patterns that MNN fuses into one op
each), in fp32, fp16w and int8w, converted and run for real.

What went wrong there: int8w's Ranking put Sigmoid.8 first, a weightless SiLU (its error estimated by subtracting its
input's from its output's: it amplified what it received and was credited with it), and the fix kept ops that were
neither the ranking's first nor the cause line's; the cause line's "rel L2 0.0436 made there" was the tensor's whole
error where Properties read "error introduced 0.0114"; fp16w's cause blamed a GELU's Div (its only weight the scalar
1.414) under a headline naming another op.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from test_compare_models import _compare, _mode
from mnnscope.inspector.compare.replay import _conv2d

WEIGHTED = {"Conv", "MatMul", "Gemm"}


def _ocr_model() -> Path:
    spec = importlib.util.find_spec("rapidocr")
    if spec is None:
        pytest.skip("rapidocr==3.10.0 is not installed (pip install --no-deps rapidocr==3.10.0)")
    return Path(spec.submodule_search_locations[0]) / "models" / "PP-OCRv6_rec_small.onnx"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return tmp_path_factory.mktemp("blame_ocr")


@pytest.fixture(scope="module")
def ocr(shared_runner, workspace):
    return _compare(shared_runner, workspace, _ocr_model(), ["fp32", "fp16w", "int8w"])


def test_the_replayed_convolution_is_onnx_runtimes(tmp_path):
    """replay._conv2d (groups, strides, pads, dilations) against ONNX Runtime on a Conv of known attributes."""
    import onnxruntime as ort
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 11, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    attrs = {"group": 2, "strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [2, 1], "kernel_shape": [3, 2]}
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    path = tmp_path / "conv.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = _conv2d(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), attrs)
    assert got.shape == want.shape and np.abs(got - want).max() < 1e-4


def test_fused_regions_are_replayed_not_credited_with_what_they_carried(ocr):
    """A fused region's own error is measured by replaying it on MNN's inputs: the SiLU regions (Sigmoid, Mul) add
    float noise in every mode, and fp32's convolutions too (estimated by subtraction they read 0.004 each, a linear map
    changing relative error without adding any); int8w's ranking is led by ops with weights to quantize."""
    for name in ("fp32", "fp16w", "int8w"):
        mode = _mode(ocr, name)
        silu = [e for e in mode["ranking"] if e["op_type"] == "Sigmoid" and "SILU" in e["mnn_types"]]
        assert silu and all(e["introduced"] < 1e-5 for e in silu), [(e["onnx_node"], e["introduced"]) for e in silu]
    fp32 = _mode(ocr, "fp32")
    convs = [e for e in fp32["ranking"] if e["op_type"] == "Conv"]
    assert convs and max(e["introduced"] for e in convs) < 1e-4
    int8w = _mode(ocr, "int8w")
    top = int8w["ranking"][:5]
    assert all(e["op_type"] in WEIGHTED for e in top), [(e["onnx_node"], e["op_type"]) for e in top]
    # the fix keeps the ranking's first ops, in the ranking's order
    plan = int8w["fix_plan"]
    assert [e["onnx_node"] for e in plan["onnx_nodes"]] == [e["onnx_node"] for e in int8w["ranking"][:3]]
