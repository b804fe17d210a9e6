"""Metrics, tolerances and localisation rules of inspector.compare, on arrays and dumps made here."""
from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mnnscope.inspector.compare import metrics as compare
from mnnscope.inspector.compare.metrics import compare_mode, tensor_metrics
from mnnscope.inspector.compare.tolerance import Tolerance, parse_metric, within
from mnnscope.inspector.formats.onnx import load_onnx
from mnnscope.inspector.compare.match import match_tensors


def test_metrics_equal_the_textbook_formulas():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((3, 50, 7)).astype(np.float32)
    got = (ref + 0.01 * rng.standard_normal(ref.shape)).astype(np.float32)
    m = tensor_metrics(ref, got)
    r, a = ref.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    d = a - r
    assert m["max_abs"] == pytest.approx(np.abs(d).max())
    assert m["rel_l2"] == pytest.approx(np.linalg.norm(d) / np.linalg.norm(r))
    assert m["cosine"] == pytest.approx(a @ r / (np.linalg.norm(a) * np.linalg.norm(r)))
    assert m["sqnr_db"] == pytest.approx(20 * np.log10(np.linalg.norm(r) / np.linalg.norm(d)))
    assert m["nan"] == m["inf"] == 0 and not m["shape_mismatch"]


def test_chunked_reading_gives_the_same_numbers(monkeypatch):
    rng = np.random.default_rng(1)
    ref = rng.standard_normal(10_001).astype(np.float32)
    got = ref * 1.001
    whole = tensor_metrics(ref, got)
    monkeypatch.setattr(compare, "CHUNK", 97)
    chunked = tensor_metrics(ref, got)
    for k in ("max_abs", "rel_l2", "cosine", "sqnr_db", "ref_max_abs"):
        assert chunked[k] == pytest.approx(whole[k], rel=1e-9)


def test_nan_in_mnn_only_is_a_divergence_but_shared_nan_is_not():
    ref = np.array([1.0, 2.0, np.nan, 4.0], np.float32)
    same = tensor_metrics(ref, ref.copy())
    assert same["nan"] == 1 and within(same, Tolerance())
    bad = tensor_metrics(ref, np.array([1.0, np.nan, np.nan, 4.0], np.float32))
    assert bad["nan"] == 2 and bad["nonfinite_mismatch"] == 1 and not within(bad, Tolerance())
    inf = tensor_metrics(np.ones(3, np.float32), np.array([1, np.inf, 1], np.float32))
    assert inf["inf"] == 1 and not within(inf, Tolerance(atol=1e9, rtol=1e9))


def test_tiny_references_are_judged_by_the_absolute_tolerance():
    zeros = np.zeros(100, np.float32)
    tol = Tolerance(atol=1e-5, rtol=1e-4)
    assert within(tensor_metrics(zeros, zeros + 1e-6), tol)
    assert not within(tensor_metrics(zeros, zeros + 1e-3), tol)
    m = tensor_metrics(zeros, zeros + 1e-6)
    assert m["rel_l2"] == math.inf and m["cosine"] == 0.0  # relative statistics are meaningless here...
    assert within(m, Tolerance(atol=1e-5, metric="cosine", threshold=0.999))  # ...so atol decides


def test_relative_to_max_rule_like_mnn_testdir():
    ref = np.linspace(-10, 10, 101).astype(np.float32)
    tol = Tolerance(atol=0.0, rtol=0.01)
    assert within(tensor_metrics(ref, ref + 0.099), tol)  # 0.099 <= 0.01 * 10
    assert not within(tensor_metrics(ref, ref + 0.101), tol)


def test_integers_must_be_equal_across_int64_and_int32():
    ref = np.array([[3, 1, 2]], np.int64)
    assert within(tensor_metrics(ref, ref.astype(np.int32)), Tolerance())
    m = tensor_metrics(ref, np.array([[3, 2, 2]], np.int32))
    assert m["mismatch"] == 1 and not within(m, Tolerance(atol=10, rtol=10))
    assert within(tensor_metrics(np.array([True, False]), np.array([1, 0], np.int32)), Tolerance())


def test_shape_mismatch_is_a_divergence():
    m = tensor_metrics(np.ones((2, 3), np.float32), np.ones(5, np.float32))
    assert m["shape_mismatch"] and m["rel_l2"] == math.inf and not within(m, Tolerance(atol=1e9))
    # Same element count, another shape (NCHW [8,128,1,1] against [1,8,128]): compared element by element.
    assert within(tensor_metrics(np.ones((1, 8, 4), np.float32), np.ones((8, 4, 1, 1), np.float32)), Tolerance())


@pytest.mark.parametrize("spec, expected", [("cosine:0.999", ("cosine", 0.999)), ("rel_l2:0.01", ("rel_l2", 0.01)),
                                            ("sqnr:30", ("sqnr", 30.0)), ("max_abs:1e-3", ("max_abs", 1e-3))])
def test_parse_metric(spec, expected):
    assert parse_metric(spec) == expected


@pytest.mark.parametrize("spec", ["cosine", "cosine:2", "snr:3", "rel_l2:x"])
def test_parse_metric_rejects(spec):
    with pytest.raises(ValueError):
        parse_metric(spec)


# ----- localisation on a hand-made dump -----------------------------------------------------------------
def _chain_model(path, scale: float):
    """x -> /a/Relu -> /b/Neg -> /c/Abs -> /d/Mul(scale) -> /e/Add(x) -> y, all [4]."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="/a/Relu"),
             helper.make_node("Neg", ["a"], ["b"], name="/b/Neg"),
             helper.make_node("Abs", ["b"], ["c"], name="/c/Abs"),
             helper.make_node("Mul", ["c", "zero"], ["d"], name="/d/Mul"),
             helper.make_node("Add", ["d", "x"], ["y"], name="/e/Add")]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              initializer=[onnx.numpy_helper.from_array(np.full(4, scale, np.float32), "zero")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return load_onnx(path)


def _dump(folder, values: dict) -> dict:
    folder.mkdir()
    manifest = {}
    for i, (name, arr) in enumerate(values.items()):
        np.save(folder / f"{i}.npy", np.asarray(arr, np.float32), allow_pickle=False)
        manifest[name] = {"path": f"{i}.npy", "dtype": "float32"}
    return manifest


def test_region_without_counterparts_is_reported_first_node_first(tmp_path):
    g = _chain_model(tmp_path / "chain.onnx", 1.0)
    x = np.array([1, -2, 3, -4], np.float32)
    a, b, c = np.maximum(x, 0), -np.maximum(x, 0), np.maximum(x, 0)
    d, y = c, c + x
    ref = _dump(tmp_path / "ref", {"x": x, "a": a, "b": b, "c": c, "d": d, "y": y})
    # MNN fused /b and /c (no tensor "b"), got "c" wrong, and the result reaches y through a wrong /e.
    mnn = _dump(tmp_path / "mnn", {"x": x, "a": a, "c": c + 1, "d": d + 1, "y": y + 1})
    match = match_tensors(g, None, mnn, ref)
    r = compare_mode(g, match, str(tmp_path / "ref"), ref, str(tmp_path / "mnn"), mnn, Tolerance())
    fd = r["first_divergence"]
    assert [n["name"] for n in fd["region"]] == ["/b/Neg", "/c/Abs"]
    assert fd["onnx_node"] == "/b/Neg" and fd["tensor"] == "c"
    assert [i["tensor"] for i in fd["inputs"]] == ["a"] and fd["inputs"][0]["within"]
    assert {u["tensor"] for u in r["unmatched"]} == {"b"}
    assert r["ranking"][0]["onnx_node"] == "/b/Neg"
    assert r["summary"]["introduced"] == 1  # /d and /e only pass the error on


def test_error_that_is_multiplied_by_zero_is_harmless(tmp_path):
    g = _chain_model(tmp_path / "chain.onnx", 0.0)
    x = np.array([1, -2, 3, -4], np.float32)
    a = np.maximum(x, 0)
    values = {"x": x, "a": a, "b": -a, "c": a, "d": 0 * x, "y": x}
    ref = _dump(tmp_path / "ref", values)
    mnn = _dump(tmp_path / "mnn", dict(values, b=-a - 1, c=a + 1))  # wrong, then masked by /d/Mul
    r = compare_mode(g, match_tensors(g, None, mnn, ref), str(tmp_path / "ref"), ref, str(tmp_path / "mnn"), mnn,
                     Tolerance())
    assert r["first_divergence"] is None and r["summary"]["outputs_within"]
    assert [h["onnx_node"] for h in r["harmless"]] == ["/b/Neg"]
