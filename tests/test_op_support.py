"""Unsupported ops come from the converter's own behaviour, never from op names.

MNN 3.6.1's `--OP` list misses ops its passes rewrite (MatMulInteger, fed by DynamicQuantizeLinear, becomes a
float MatMul), and its one unsupported-op message comes at the very end of a conversion, after those passes.
The models are quantized the way people quantize: onnxruntime.quantization on small generated float models
(dynamic: DynamicQuantizeLinear + MatMulInteger/ConvInteger; static QDQ; static QOperator: QLinearConv), plus
com.microsoft ops added with the onnx helper. Each is checked with `convert --json` and `convert --preflight
--json`; which op is unsupported is known from how the model was built and what the converter prints.
"""
from __future__ import annotations

import contextlib
import io
import json
import logging

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from mnnscope.inspector.cli.app import main

quantization = pytest.importorskip("onnxruntime.quantization")


def _float_model(path, kind: str):
    rng = np.random.default_rng(0)
    if kind == "mlp":
        inits = [nh.from_array(rng.standard_normal((16, 32)).astype(np.float32), "W1"),
                 nh.from_array(rng.standard_normal((32, 8)).astype(np.float32), "W2")]
        nodes = [h.make_node("MatMul", ["x", "W1"], ["h"], name="mm1"), h.make_node("Relu", ["h"], ["r"], name="relu"),
                 h.make_node("MatMul", ["r", "W2"], ["y"], name="mm2")]
        shapes = ([2, 16], [2, 8])
    else:  # a conv, then a fully connected layer
        inits = [nh.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "Wc"),
                 nh.from_array(rng.standard_normal((256, 10)).astype(np.float32), "W")]
        nodes = [h.make_node("Conv", ["x", "Wc"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                 h.make_node("Relu", ["c"], ["r"], name="relu"), h.make_node("Flatten", ["r"], ["f"], name="flat"),
                 h.make_node("MatMul", ["f", "W"], ["y"], name="fc")]
        shapes = ([1, 3, 8, 8], [1, 10])
    graph = h.make_graph(nodes, kind, [h.make_tensor_value_info("x", T.FLOAT, shapes[0])],
                         [h.make_tensor_value_info("y", T.FLOAT, shapes[1])], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return shapes[0]


class _Reader(quantization.CalibrationDataReader):
    def __init__(self, shape):
        rng = np.random.default_rng(1)
        self.data = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.data, None)


@pytest.fixture(scope="module")
def models(isolated_home):
    """{name: path} of the quantized models (built once for the module)."""
    folder = isolated_home / "op_support"
    folder.mkdir(parents=True, exist_ok=True)
    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's advice to pre-process
    out = {}
    for kind in ("mlp", "cnn_fc"):
        shape = _float_model(folder / f"{kind}.onnx", kind)
        out[f"{kind}_dynamic"] = folder / f"{kind}_dynamic.onnx"
        quantization.quantize_dynamic(str(folder / f"{kind}.onnx"), str(out[f"{kind}_dynamic"]),
                                      weight_type=quantization.QuantType.QUInt8)
        for fmt in ("QDQ", "QOperator"):
            out[f"{kind}_{fmt.lower()}"] = folder / f"{kind}_{fmt.lower()}.onnx"
            quantization.quantize_static(str(folder / f"{kind}.onnx"), str(out[f"{kind}_{fmt.lower()}"]),
                                         _Reader(shape), quant_format=getattr(quantization.QuantFormat, fmt))
    # com.microsoft ops after the dynamically quantized MLP: Gelu (MNN converts it as the standard Gelu) and
    # FusedMatMul (an ONNX Runtime contrib op MNN does not have)
    model = onnx.load(out["mlp_dynamic"])
    g = model.graph
    g.initializer.append(nh.from_array(np.random.default_rng(2).standard_normal((8, 8)).astype(np.float32), "W3"))
    g.node.append(h.make_node("Gelu", [g.output[0].name], ["g"], name="ms_gelu", domain="com.microsoft"))
    g.node.append(h.make_node("FusedMatMul", ["g", "W3"], ["z"], name="ms_fused", domain="com.microsoft", alpha=0.5))
    del g.output[:]
    g.output.append(h.make_tensor_value_info("z", T.FLOAT, [2, 8]))
    model.opset_import.append(h.make_opsetid("com.microsoft", 1))
    out["mlp_dynamic_ms"] = folder / "mlp_dynamic_ms.onnx"
    onnx.save(model, out["mlp_dynamic_ms"])
    # a crash before the converter's op check: an op it lacks (Hardmax) beside an input nobody defines
    graph = h.make_graph([h.make_node("Hardmax", ["x"], ["a"], name="hard", axis=-1),
                          h.make_node("Add", ["a", "never_defined"], ["y"], name="add_undefined")], "crash",
                         [h.make_tensor_value_info("x", T.FLOAT, [2, 8])], [h.make_tensor_value_info("y", T.FLOAT, [2, 8])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    model.ir_version = 8
    out["crash_before_check"] = folder / "crash_before_check.onnx"
    onnx.save(model, out["crash_before_check"])
    return out


def _cli(*argv) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, json.loads(out.getvalue())


def _both(models, name, tmp_path):
    """(convert --json, convert --preflight --json) of one model."""
    conv = _cli("convert", str(models[name]), "-o", str(tmp_path / f"{name}.mnn"), "--json")
    pre = _cli("convert", "--preflight", str(models[name]), "--json")
    return conv, pre


def _types(entries) -> set[str]:
    return {e["op_type"] for e in entries}


def _op_types(path) -> set[str]:
    return {n.op_type for n in onnx.load(path).graph.node}


def test_dynamic_quantized_mlp_converts_and_no_op_is_called_unsupported(models, tmp_path):
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= _op_types(models["mlp_dynamic"])
    (code, data), (pcode, pre) = _both(models, "mlp_dynamic", tmp_path)
    assert code == 0 and data["ok"] and data["unsupported_ops"] == [] and data["unverified_ops"] == []
    assert not any("MatMulInteger" in w for w in data["warnings"]), data["warnings"]
    assert pcode == 0 and pre["ok"] and pre["unsupported_ops"] == [] and pre["unverified_ops"] == []
    # the converter's own list lacks MatMulInteger: only the trial conversion could tell
    assert pre["probed"] == {"MatMulInteger": True}


def test_unsupported_op_among_supported_integer_ops_is_the_only_one_named(models, tmp_path):
    """ConvInteger (which 3.6.1 lacks) beside MatMulInteger and DynamicQuantizeLinear (which it converts)."""
    assert {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"} <= _op_types(models["cnn_fc_dynamic"])
    (code, data), (pcode, pre) = _both(models, "cnn_fc_dynamic", tmp_path)
    conv_node = next(n.name for n in onnx.load(models["cnn_fc_dynamic"]).graph.node if n.op_type == "ConvInteger")
    expected = [{"op_type": "ConvInteger", "domain": "ai.onnx", "nodes": [conv_node]}]
    for c, d in ((code, data), (pcode, pre)):
        assert c == 1 and d["ok"] is False
        assert d["unsupported_ops"] == expected
        assert d["unverified_ops"] == []
        assert [e["kind"] for e in d["errors"]] == ["unsupported_op"] and "ConvInteger" in d["errors"][0]["message"]
        assert not any("MatMulInteger" in e["message"] or "DynamicQuantizeLinear" in e["message"] for e in d["errors"])
    assert pre["probed"] == {"ConvInteger": False, "MatMulInteger": True}


def test_qdq_models_convert_without_unsupported_ops(models, tmp_path):
    for name in ("mlp_qdq", "cnn_fc_qdq"):
        assert {"QuantizeLinear", "DequantizeLinear"} <= _op_types(models[name])
        (code, data), (pcode, pre) = _both(models, name, tmp_path)
        assert code == 0 and data["ok"] and data["unsupported_ops"] == [], (name, data["errors"])
        assert pcode == 0 and pre["unsupported_ops"] == [] and pre["unverified_ops"] == []


def test_qoperator_models_name_the_qlinear_ops_the_converter_names(models, tmp_path):
    for name, op in (("mlp_qoperator", "QLinearMatMul"), ("cnn_fc_qoperator", "QLinearConv")):
        types = _op_types(models[name])
        (code, data), (pcode, pre) = _both(models, name, tmp_path)
        assert code == 1 and pcode == 1
        assert op in _types(data["unsupported_ops"]) and _types(data["unsupported_ops"]) == _types(pre["unsupported_ops"])
        # QuantizeLinear/DequantizeLinear are in the same model and are never called unsupported
        assert {"QuantizeLinear", "DequantizeLinear"} <= types
        assert not {"QuantizeLinear", "DequantizeLinear"} & _types(data["unsupported_ops"])


def test_com_microsoft_ops_only_the_missing_one_is_named(models, tmp_path):
    (code, data), (pcode, pre) = _both(models, "mlp_dynamic_ms", tmp_path)
    expected = [{"op_type": "FusedMatMul", "domain": "com.microsoft", "nodes": ["ms_fused"]}]
    for c, d in ((code, data), (pcode, pre)):
        assert c == 1 and d["unsupported_ops"] == expected, d["unsupported_ops"]
        assert "com.microsoft" in d["errors"][0]["message"] and d["errors"][0]["node"] == "ms_fused"
        # Gelu of com.microsoft is converted as the standard Gelu: a warning to check it, not an error
        assert any("ms_gelu" in w and "Gelu" in w for w in d["warnings"])


def test_a_conversion_that_stops_before_the_op_check_leaves_ops_unverified(models, tmp_path):
    """The converter crashes on the undefined input before it checks ops: Hardmax is neither confirmed nor
    invented as unsupported; it is reported as unverified (a trial could not settle it)."""
    (code, data), (pcode, pre) = _both(models, "crash_before_check", tmp_path)
    assert code == 1 and data["unsupported_ops"] == []
    assert _types(data["unverified_ops"]) == {"Hardmax"}
    assert any("Hardmax" in w and "unknown" in w for w in data["warnings"])
    assert pcode == 1 and pre["unsupported_ops"] == [] and _types(pre["unverified_ops"]) == {"Hardmax"}
    assert [e["kind"] for e in pre["errors"]] == ["undefined_input"]


def test_a_real_model_where_the_converter_keeps_matmulinteger_names_it(isolated_home, tmp_path):
    """The other side: the romanizer's GRU-attention decoder (a real model), quantized with quantize_dynamic,
    fails on MatMulInteger. The same op type converts in the MLP above; only the converter can tell."""
    import importlib.util
    from pathlib import Path

    from conftest import missing_dependency
    spec = importlib.util.find_spec("arabic_name_romanizer")
    if spec is None:
        missing_dependency("the real-model package 'arabic_name_romanizer' is not installed (python3 dev.py setup)")
    src = Path(list(spec.submodule_search_locations)[0]) / "resources" / "decoder.onnx"
    dst = tmp_path / "decoder_dynq.onnx"
    logging.getLogger().setLevel(logging.ERROR)
    quantization.quantize_dynamic(str(src), str(dst), weight_type=quantization.QuantType.QInt8)
    nodes = sorted(n.name for n in onnx.load(dst).graph.node if n.op_type == "MatMulInteger")
    assert nodes
    code, data = _cli("convert", str(dst), "-o", str(tmp_path / "decoder_dynq.mnn"), "--json")
    assert code == 1 and [e["op_type"] for e in data["unsupported_ops"]] == ["MatMulInteger"]
    assert sorted(data["unsupported_ops"][0]["nodes"]) == nodes
    pcode, pre = _cli("convert", "--preflight", str(dst), "--json")
    assert pcode == 1 and pre["unsupported_ops"] == data["unsupported_ops"] and pre["probed"]["MatMulInteger"] is False
