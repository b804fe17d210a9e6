"""Compare without ONNX (compare/mnnpair.py): an .mnn against another .mnn of the same network, and one .mnn under
two runtime configurations. Real conversions of the bundled CNN sample and of a small erf-GELU model (whose
pattern MNN fuses into one GELU op unless told not to), real MNN runs in the runner."""
from __future__ import annotations

import json
import math
import os
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper as nh

from mnnscope.inspector.cli.app import main
from mnnscope.inspector.compare.metrics import worst_output_error
from mnnscope.inspector.compare.mnnpair import compare_configs, compare_mnn_pair, parse_configs
from mnnscope.inspector.compare.tolerance import DEFAULT_TOLERANCES
from mnnscope.inspector.convert.service import convert_model
from mnnscope.inspector.convert.settings import ConvertSettings, Int8Settings
from mnnscope.inspector.errors import UsageError
from mnnscope.inspector.formats.mnn_flatbuffer import read_mnn
from mnnscope.runner import protocol

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "resources" / "samples"

CNN = {"fp32": ConvertSettings(), "fp32_again": ConvertSettings(), "int8w": ConvertSettings(weight_quant_bits=8),
       "int4w": ConvertSettings(weight_quant_bits=4), "int8": ConvertSettings(int8=Int8Settings(calib_random=4)),
       "static": ConvertSettings(save_static_model=True)}


def erf_gelu_model(path: Path) -> Path:
    """x -> MatMul -> Add -> GELU written out as Div, Erf, Add, Mul, Mul -> MatMul -> y (what exporters emit
    before opset 20; MNN fuses the five ops into one GELU op unless --useGeluApproximation 0)."""
    rng = np.random.default_rng(5)
    inits = [nh.from_array((rng.standard_normal((16, 32)) / 4).astype(np.float32), "fc1.w"),
             nh.from_array((rng.standard_normal(32)).astype(np.float32), "fc1.b"),
             nh.from_array(np.array(math.sqrt(2), np.float32), "sqrt2"), nh.from_array(np.array(1.0, np.float32), "one"),
             nh.from_array(np.array(0.5, np.float32), "half"),
             nh.from_array((rng.standard_normal((32, 8)) / 4).astype(np.float32), "fc2.w")]
    nodes = [helper.make_node("MatMul", ["x", "fc1.w"], ["/fc1/MatMul_output_0"], name="/fc1/MatMul"),
             helper.make_node("Add", ["/fc1/MatMul_output_0", "fc1.b"], ["/fc1/Add_output_0"], name="/fc1/Add"),
             helper.make_node("Div", ["/fc1/Add_output_0", "sqrt2"], ["/act/Div_output_0"], name="/act/Div"),
             helper.make_node("Erf", ["/act/Div_output_0"], ["/act/Erf_output_0"], name="/act/Erf"),
             helper.make_node("Add", ["/act/Erf_output_0", "one"], ["/act/Add_output_0"], name="/act/Add"),
             helper.make_node("Mul", ["/fc1/Add_output_0", "/act/Add_output_0"], ["/act/Mul_output_0"], name="/act/Mul"),
             helper.make_node("Mul", ["/act/Mul_output_0", "half"], ["/act/out"], name="/act/Mul_1"),
             helper.make_node("MatMul", ["/act/out", "fc2.w"], ["y"], name="/fc2/MatMul")]
    graph = helper.make_graph(nodes, "erf_gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def mnn_files(isolated_home, shared_runner) -> dict[str, str]:
    """The CNN sample converted with each setting of CNN (the second fp32 conversion bypasses the conversion cache:
    a converter run of its own), and the erf-GELU model converted with and without the GELU fusion."""
    out = isolated_home / "mnn"
    files = {}
    for name, settings in CNN.items():
        r = convert_model(SAMPLES / "cnn.onnx", out / f"cnn_{name}.mnn", settings, client=shared_runner,
                          run_dir=isolated_home / "runs" / name, cache=name != "fp32_again")
        assert r.ok, (name, r.errors)
        files[name] = r.output
    gelu = erf_gelu_model(isolated_home / "erf_gelu.onnx")
    for name, settings in (("gelu", ConvertSettings()), ("gelu_matmul", ConvertSettings(convert_matmul_to_conv=False)),
                           ("gelu_matmul_exact", ConvertSettings(convert_matmul_to_conv=False, gelu_approximation=False))):
        r = convert_model(gelu, out / f"{name}.mnn", settings, client=shared_runner, run_dir=isolated_home / "runs" / name)
        assert r.ok, (name, r.errors)
        files[name] = r.output
    return files


def _pair(files, a, b, client, **kw) -> dict:
    return compare_mnn_pair(files[a], files[b], client=client, **kw)


def _worst(result: dict) -> float:
    return worst_output_error(result["modes"][0]["outputs"])


def test_quantized_versions_err_more_than_two_fp32_conversions(mnn_files, shared_runner):
    same = _pair(mnn_files, "fp32", "fp32_again", shared_runner, time_runs=0)
    row = same["modes"][0]
    assert row["ok"] and row["verdict"] == "match" and row["summary"]["unmatched"] == 0
    assert row["summary"]["matched"] > 10  # every data tensor (shape arithmetic is no tensor to compare)
    errors = {}
    for name in ("int8w", "int4w", "int8"):
        r = _pair(mnn_files, "fp32", name, shared_runner, time_runs=0, tolerance=DEFAULT_TOLERANCES["fp32"])
        m = r["modes"][0]
        errors[name] = _worst(r)
        assert errors[name] > max(_worst(same), 1e-4), (name, errors[name])
        assert m["summary"]["matched"] > 10 and all(o["matched"] for o in m["outputs"])
        # the op that introduces the error is one of A's ops, and the ranking lists ops by the error they add
        fd = m["first_divergence"]
        assert fd is not None and fd["onnx_node"] and fd["region"]
        assert m["ranking"] and m["ranking"][0]["introduced"] >= m["ranking"][-1]["introduced"]
        assert not m["ok"] and m["verdict"] == "wrong"
    assert errors["int4w"] > errors["int8w"]  # fewer bits, more error


def test_json_shape_names_side_a_and_b_with_per_op_time_deltas(mnn_files, capsys):
    a, b = mnn_files["fp32"], mnn_files["int8w"]
    code = main(["compare", a, b, "--time-runs", "2", "--atol", "1e-5", "--rtol", "1e-4", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert code == 1  # int8 weights put the outputs over the fp32 tolerance
    assert r["kind"] == "mnn_pair" and r["model"] == os.path.abspath(a)
    ref = r["reference"]
    assert ref["kind"] == "mnn" and ref["model"] == os.path.abspath(a) and ref["backend_used"] == "CPU"
    assert ref["tensors"] > 10 and ref["version"]
    [m] = r["modes"]
    assert m["mode"] == Path(b).stem and m["mnn_model"] == os.path.abspath(b)
    for key in ("outputs", "first_divergence", "ranking", "tensors", "unmatched", "summary", "verdict", "cause",
                "tolerance", "op_time_delta", "time"):
        assert key in m, key
    assert "ONNX Runtime" not in m["cause"]
    deltas = m["op_time_delta"]
    assert deltas and all(d["a_ms"] is not None and d["b_ms"] is not None for d in deltas)  # same op list
    assert [d["delta_ms"] for d in deltas] == sorted((d["delta_ms"] for d in deltas), reverse=True)
    assert {d["type"] for d in deltas} >= {"Convolution"}
    t = m["time"]
    assert t["a_ms"] > 0 and t["b_ms"] > 0 and math.isclose(t["ratio"], t["b_ms"] / t["a_ms"])
    assert t["within_noise"] in (True, False) and t["a_range_ms"][0] <= t["a_ms"] <= t["a_range_ms"][1]
    assert r["inputs"] and r["run_id"]


def test_a_time_difference_inside_the_runs_spread_is_called_noise():
    """Tryout 11: one file against itself read 'A 74.4 ms -> B 53.5 ms (0.72x)', precision low (no effect on that
    CPU) as slower: medians of 3 runs on a loaded machine. Overlapping min..max of the timed runs is noise."""
    from mnnscope.inspector.compare.mnnpair import time_summary
    run = lambda med, lo, hi: {"total_ms": med, "total_ms_min": lo, "total_ms_max": hi, "runs": 3}  # noqa: E731
    assert time_summary(run(74.4, 50.1, 80.0), run(53.5, 52.0, 60.0))["within_noise"] is True
    assert time_summary(run(74.4, 70.0, 80.0), run(53.5, 52.0, 60.0))["within_noise"] is False
    assert time_summary({"total_ms": 1.0}, {"total_ms": 2.0})["within_noise"] is None


def test_text_output_names_both_sides_and_the_timing(mnn_files, capsys):
    assert main(["compare", mnn_files["fp32"], mnn_files["fp32_again"], "--time-runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "side A (cpu/high/normal/1t" in out and "cnn_fp32_again" in out and "match" in out
    assert "time A" in out


def test_conversions_that_fuse_differently_still_match_their_tensors(mnn_files, shared_runner):
    # --saveStaticModel folds the shape computations: another op list, the same values
    static = _pair(mnn_files, "fp32", "static", shared_runner, time_runs=0)
    ops_a = Counter(o.op_type for o in read_mnn(mnn_files["fp32"]).ops)
    ops_b = Counter(o.op_type for o in read_mnn(mnn_files["static"]).ops)
    assert ops_a != ops_b
    m = static["modes"][0]
    assert m["summary"]["matched"] > 0 and m["summary"]["unmatched"] > 0
    assert m["ok"] and all(o["matched"] and o["within"] for o in m["outputs"])

    # MatMul + Add as a Convolution between layout ops (A) or as one MatMul (B, --convertMatmulToConv 0): A's
    # Reshape/ConvertTensor/Convolution tensors have no counterpart in B, the values around them match
    r = _pair(mnn_files, "gelu", "gelu_matmul", shared_runner, time_runs=0)
    types_a = Counter(o.op_type for o in read_mnn(mnn_files["gelu"]).ops)
    types_b = Counter(o.op_type for o in read_mnn(mnn_files["gelu_matmul"]).ops)
    assert types_a["Convolution"] == 2 and types_b["Convolution"] == 0 and types_b["MatMul"] == 2
    m = r["modes"][0]
    assert m["summary"]["matched"] >= 3 and m["summary"]["unmatched"] > 0
    assert m["ok"] and all(o["matched"] and o["within"] for o in m["outputs"])
    unmatched = {u["tensor"] for u in m["unmatched"]}
    assert "/fc1/Add_output_0__matmul_converted" in unmatched
    # MNN moved the name /fc1/Add_output_0 onto a layout copy of the GELU output in A; in B it is the MatMul's
    # output: the same name, another value, refused by structure (both sides' ops since the matched ancestors)
    assert "/fc1/Add_output_0" in unmatched
    assert "/act/out" not in unmatched


def test_a_divergence_inside_ops_one_side_fused_lands_on_the_region(mnn_files, shared_runner):
    # A: Convolution + MNN's GELU kernel (the erf pattern approximated); B: MatMul + the exact GELU
    # (--useGeluApproximation 0). The GELU output is the first tensor both sides have: the error is placed on A's
    # region of ops from the input to it, headed by its first op that computes (layout ops only carry values)
    r = _pair(mnn_files, "gelu", "gelu_matmul_exact", shared_runner, time_runs=0)
    m = r["modes"][0]
    assert all(o["matched"] for o in m["outputs"]) and not m["ok"]
    fd = m["first_divergence"]
    assert fd is not None and fd["tensor"] == "/act/out"
    region = [n["name"] for n in fd["region"]]
    assert len(region) > 2 and "/fc1/Add_output_0__matmul_converted" in region and "/act/out" in region
    assert fd["onnx_node"] == "/fc1/Add_output_0__matmul_converted" and fd["op_type"] == "Convolution"
    # the GELU kernel's own error: 4.7e-4 at most (README, measured against ONNX Runtime's exact erf)
    assert 1e-5 < fd["max_abs"] < 1e-3
    assert "side A" not in m["cause"] or "ONNX" not in m["cause"]


def test_precision_low_against_high_on_one_mnn(mnn_files, shared_runner):
    if shared_runner.hello()["cpu"].get("fp16"):
        pytest.skip("this CPU has fp16 arithmetic: low precision is expected to apply")
    r = compare_configs(mnn_files["fp32"], parse_configs(precisions="high,low"), client=shared_runner, time_runs=1)
    assert r["kind"] == "mnn_configs" and r["reference"]["precision"] == "high"
    [m] = r["modes"]
    assert m["mode"] == "cpu/low/normal/1t" and m["config"]["precision"] == "low"
    assert m["effect"].startswith("no effect on this CPU") and "precision low" in m["effect"]
    assert m["ok"] and m["verdict"] == "match" and _worst(r) == 0.0
    assert m["summary"]["unmatched"] == 0 and m["summary"]["matched"] > 10
    assert m["time"]["b_ms"] > 0


def test_bit_identical_tensors_add_no_error_in_the_ranking(shared_runner):
    """One .mnn under two configurations that compute the same numbers: every tensor bit-identical, so no op
    introduced any error (the encoder sample's MatMuls were ranked at 7e-08 each, their float64 replay against
    fp32 arithmetic, under a verdict saying "bit-identical": tryout 18)."""
    if shared_runner.hello()["cpu"].get("fp16"):
        pytest.skip("this CPU has fp16 arithmetic: low precision is expected to apply")
    r = compare_configs(str(SAMPLES / "encoder_block.mnn"), parse_configs(precisions="high,low"),
                        client=shared_runner, time_runs=0)
    [m] = r["modes"]
    assert m["effect"].startswith("no effect on this CPU") and _worst(r) == 0.0
    assert not [(e["onnx_node"], e["introduced"]) for e in m["ranking"] if e["introduced"]]


def test_threads_one_against_two_is_one_entry_per_configuration(mnn_files, capsys):
    code = main(["compare", mnn_files["fp32"], "--threads-list", "1,2", "--precisions", "high,low", "--time-runs", "0",
                 "--json"])
    r = json.loads(capsys.readouterr().out)
    assert code == 0
    assert r["reference"]["threads"] == 1 and r["reference"]["precision"] == "high"
    assert [m["mode"] for m in r["modes"]] == ["cpu/high/normal/2t", "cpu/low/normal/1t", "cpu/low/normal/2t"]
    assert all(m["run"]["backend_used"] == "CPU" for m in r["modes"])


def test_an_unavailable_backend_is_refused_clearly(mnn_files, shared_runner, capsys):
    available = [b.upper() for b in shared_runner.hello()["backends"]]
    missing = next((b for b in ("OPENCL", "VULKAN", "CUDA", "METAL") if b not in available), None)
    if missing is None:
        pytest.skip("every GPU backend loads here")
    code = main(["compare", mnn_files["fp32"], "--backends", f"cpu,{missing.lower()}", "--json"])
    captured = capsys.readouterr()
    assert code == 1
    err = json.loads(captured.out)["error"]
    assert missing in err["message"] and "not available" in err["message"]
    assert all(b in err["message"] for b in available)
    assert captured.err.strip().count("\n") == 0 and missing in captured.err


@pytest.mark.parametrize("argv, needle", [
    (["compare", str(SAMPLES / "cnn.onnx"), str(SAMPLES / "cnn.mnn")], "two .mnn"),
    (["compare", str(SAMPLES / "cnn.onnx"), "--backends", "cpu,opencl"], "give an .mnn"),
    (["compare", str(SAMPLES / "cnn.mnn"), "--backends", "cpu"], "nothing to compare"),
    (["compare", str(SAMPLES / "cnn.mnn"), "--backends", "cpu,tpu"], "TPU"),
    (["compare", str(SAMPLES / "cnn.mnn"), "--precisions", "high,fp8"], "--precisions"),
    (["compare", str(SAMPLES / "cnn.mnn"), str(SAMPLES / "cnn.mnn"), "--modes", "fp32"], "--modes"),
    (["compare", str(SAMPLES / "cnn.mnn"), str(SAMPLES / "cnn.mnn"), "--precisions", "high,low"], "one .mnn"),
])
def test_usage_errors_exit_2(argv, needle, capsys):
    assert main(argv + ["--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["kind"] == "usage" and needle in err["message"], err


def test_parse_configs_is_every_combination_in_order():
    configs = parse_configs(backends="cpu", precisions="high,low", memory="normal,low")
    assert [c.name for c in configs] == ["cpu/high/normal/1t", "cpu/high/low/1t", "cpu/low/normal/1t",
                                         "cpu/low/low/1t"]
    assert configs[3].differs(configs[0]) == "precision low, memory low"
    assert all(c.backend in protocol.MNN_BACKENDS for c in configs)
    with pytest.raises(UsageError):
        parse_configs(threads_list="1,x")


def test_real_model_two_conversions_place_the_gelu_kernel(isolated_home, shared_runner):
    """PP-OCRv6 rec (rapidocr, REAL_MODELS.md): its default conversion (erf-GELU fused into MNN's approximate GELU,
    MatMul as Convolution) against one with --useGeluApproximation 0 --convertMatmulToConv 0. The ops differ, the
    tensors still match, and the first divergence is the first GELU, with the kernel's own measured error
    (4.74e-4 max abs, approximations.py)."""
    import importlib.util
    from conftest import missing_dependency
    spec = importlib.util.find_spec("rapidocr")
    if spec is None:
        missing_dependency("real-model package 'rapidocr' is not installed (python3 dev.py setup installs it)")
    model = Path(spec.submodule_search_locations[0]) / "models" / "PP-OCRv6_rec_small.onnx"
    out = {}
    for name, settings in (("rec", ConvertSettings()),
                           ("rec_exact", ConvertSettings(gelu_approximation=False, convert_matmul_to_conv=False))):
        r = convert_model(model, isolated_home / "real" / f"{name}.mnn", settings, client=shared_runner,
                          run_dir=isolated_home / "runs" / f"real_{name}")
        assert r.ok, r.errors
        out[name] = r.output
    ops = {k: Counter(o.op_type for o in read_mnn(v).ops) for k, v in out.items()}
    assert ops["rec"] != ops["rec_exact"]
    r = compare_mnn_pair(out["rec"], out["rec_exact"], client=shared_runner, time_runs=1)
    m = r["modes"][0]
    assert m["summary"]["matched"] > 100 and all(o["matched"] for o in m["outputs"])
    fd = m["first_divergence"]
    assert fd["op_type"] == "GELU" and "gelu" in fd["onnx_node"], fd["onnx_node"]
    assert 3e-4 < fd["max_abs"] < 4.74e-4 * 1.25
    assert 1e-4 < _worst(r) < 1e-2  # what the approximated GELUs do to the outputs (3.3e-3 against ONNX Runtime)
    assert "differs in" in m["cause"] and m["time"]["a_ms"] > 0


def test_a_real_mnn_against_itself_pairs_every_tensor(isolated_home, shared_runner):
    """captcha_crnn (captcha_whisperer, REAL_MODELS.md: CNN + two LSTMs) converted, then compared with itself:
    "No counterpart (226)", every LSTM tensor "computed by different ops ... conv on one side only" (tryout 11): A's
    side was seen without its constants and shape arithmetic (reference_view), B's walk went on into the LSTM loop's
    index arithmetic. Both sides are seen alike now: everything pairs, bit for bit."""
    import importlib.util
    from conftest import missing_dependency
    spec = importlib.util.find_spec("captcha_whisperer")
    if spec is None:
        missing_dependency("real-model package 'captcha_whisperer' is not installed (python3 dev.py setup installs it)")
    model = Path(spec.submodule_search_locations[0]) / "models" / "captcha_crnn.onnx"
    r = convert_model(model, isolated_home / "real" / "captcha.mnn", ConvertSettings(), client=shared_runner,
                      run_dir=isolated_home / "runs" / "captcha")
    assert r.ok, r.errors
    m = compare_mnn_pair(r.output, r.output, client=shared_runner, time_runs=1)["modes"][0]
    assert m["verdict"] == "match" and not m["unmatched"], m["unmatched"][:2]
    assert m["summary"]["matched"] > 200 and _worst({"modes": [m]}) == 0


def test_runs_split_within_the_memory_budget_give_the_same_result(mnn_files, shared_runner):
    whole = _pair(mnn_files, "fp32", "int8w", shared_runner, time_runs=0)
    parts = _pair(mnn_files, "fp32", "int8w", shared_runner, time_runs=0, memory_budget_mb=0.05)  # ~50 KB a run
    assert whole["reference"]["parts"] == 1 and parts["reference"]["parts"] > 2
    a, b = whole["modes"][0], parts["modes"][0]
    assert b["run"]["parts"] > 2
    assert a["summary"] == b["summary"] and a["outputs"] == b["outputs"]
    assert [(t["name"], t["max_abs"]) for t in a["tensors"]] == [(t["name"], t["max_abs"]) for t in b["tensors"]]


def test_two_quantized_versions_are_held_to_their_weights_tolerance(mnn_files, shared_runner, capsys):
    """Helper 120 compared two int8 conversions of PP-OCRv6 rec (per channel, blocks of 32): "FAIL (max abs error <=
    1e-05 + 0.0001 x max|reference|)" at rel L2 0.004, fp32's tolerance. A pair is held to the loosest default of the
    modes its files' weights match, as each mode is against ONNX Runtime; a tolerance given stays."""
    r = _pair(mnn_files, "int8w", "int4w", shared_runner, time_runs=0)
    m = r["modes"][0]
    assert m["weights"] == {"a": "int8w", "b": "int4w"} and m["tolerance_of"] == "int4w"
    assert m["tolerance"]["rtol"] == DEFAULT_TOLERANCES["int4w"].rtol and "held to int4w's tolerance" in \
        m["description"]
    r = _pair(mnn_files, "fp32", "int8w", shared_runner, time_runs=0)
    m = r["modes"][0]
    assert m["tolerance_of"] == "int8w" and m["ok"], m["cause"]  # 8-bit weights' error: within int8w's own
    assert m["tolerance"]["rtol"] == DEFAULT_TOLERANCES["int8w"].rtol
    same = _pair(mnn_files, "fp32", "fp32_again", shared_runner, time_runs=0)["modes"][0]
    assert same["tolerance_of"] == "fp32" and same["tolerance"]["rtol"] == DEFAULT_TOLERANCES["fp32"].rtol
    assert main(["compare", mnn_files["fp32"], mnn_files["int8w"], "--time-runs", "0", "--rtol", "1e-4", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["modes"][0]["tolerance"]["rtol"] == 1e-4

