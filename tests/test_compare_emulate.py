"""Emulated precision modes (fp16c, bf16c; inspector/compare/emulate.py), through real ONNX Runtime runs in the
runner.

- the emulation against a numpy reference on small generated graphs (Add/Mul, MatMul, Softmax,
  LayerNormalization): numpy computes each op on fp16/bf16-rounded inputs and weights (fp32 for element-wise
  ops, float64 for the reductions) and rounds the result; ONNX Runtime on the emulated copy gives the same
  values, except where the op's fp32 result lies within its own fp32 rounding error of a rounding boundary
  (there the two may round to the two neighbours of that boundary, and to nothing else);
- a model whose middle MatMul overflows fp16 (sums > 65504): `compare --modes fp16c --json` blames that MatMul
  (first divergence and first in the ranking), says it overflows, and suggests keeping it in fp32; bf16 has fp32's
  range, so under bf16c the same op does not overflow;
- clean models (the bundled samples) stay within fp16's expected error, and bf16's error is larger than fp16's
  (3 fewer significand bits);
- every emulated row says `emulated: true`, the MNN ones `false`, and whether this machine has the real arithmetic.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper as nh

from mnnscope.inspector.cli.app import main
from mnnscope.inspector.compare.emulate import SUFFIX, emulate_model, round_array
from mnnscope.inspector.compare.metrics import load
from mnnscope.inspector.inputs.data import save_inputs
from mnnscope.inspector.process.client import RunnerClient

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "resources" / "samples"
EPS32 = float(np.finfo(np.float32).eps)


@pytest.fixture(scope="module")
def client():
    with RunnerClient() as c:
        yield c


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _save(nodes, inits, inputs, outputs, path: Path, opset=17) -> Path:
    model = helper.make_model(helper.make_graph(nodes, path.stem, inputs, outputs, initializer=inits),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _dump(client, model: Path, feeds: dict, out: Path, names=None) -> dict[str, np.ndarray]:
    npz = save_inputs(feeds, str(out) + ".npz")
    payload = {"engine": "ort", "model": str(model), "inputs": npz, "out_dir": str(out)}
    if names is not None:
        payload["tensors"] = list(names)
    r = client.request("dump_tensors", payload, timeout=300)
    return {n: load(str(out), e) for n, e in r["manifest"].items()}


def _emulated(client, model: Path, fmt: str, feeds: dict, tmp: Path) -> tuple[dict, dict, dict]:
    """(reference tensors, emulated tensors by their ONNX names, emulate_model's summary), as compare runs them:
    the dtypes come from the reference run."""
    ref = _dump(client, model, feeds, tmp / f"ref_{model.stem}")
    dst = tmp / f"{model.stem}_{fmt}.onnx"
    summary = emulate_model(str(model), str(dst), fmt, {n: str(a.dtype) for n, a in ref.items()})
    emu = _dump(client, dst, feeds, tmp / f"emu_{model.stem}_{fmt}", names=list(ref))
    return ref, emu, summary


def _agrees(got: np.ndarray, exact: np.ndarray, bound: np.ndarray | float, fmt: str) -> float:
    """Checks that `got` is `exact` (numpy's result before the final rounding) rounded to `fmt`, up to the op's
    own fp32 error `bound`: every element lies between the roundings of exact - bound and exact + bound. Returns
    the share of elements that differ from round(exact) (those within `bound` of a rounding boundary)."""
    exact = np.asarray(exact, np.float64)
    lo = round_array((exact - bound).astype(np.float32), fmt)
    hi = round_array((exact + bound).astype(np.float32), fmt)
    assert np.all((got >= lo) & (got <= hi)), float(np.max(np.minimum(np.abs(got - lo), np.abs(got - hi))))
    return float(np.mean(got != round_array(exact.astype(np.float32), fmt)))


FORMATS = [("fp16", 17), ("bf16", 17), ("bf16", 11)]  # bf16 before opset 13: Veltkamp rounding, not Cast


@pytest.mark.parametrize("fmt,opset", FORMATS)
def test_elementwise_ops_equal_numpy_on_rounded_values_bit_for_bit(client, tmp_path, fmt, opset):
    rng = np.random.default_rng(1)
    b, c = rng.standard_normal(64).astype(np.float32), (rng.standard_normal(64) * 3).astype(np.float32)
    nodes = [helper.make_node("Add", ["x", "b"], ["/add/out"], name="/add/Add"),
             helper.make_node("Mul", ["/add/out", "c"], ["y"], name="/mul/Mul")]
    model = _save(nodes, [nh.from_array(b, "b"), nh.from_array(c, "c")], [_vi("x", [4, 64])], [_vi("y", [4, 64])],
                  tmp_path / "ew.onnx", opset=opset)
    x = (rng.standard_normal((4, 64)) * 10).astype(np.float32)
    ref, emu, summary = _emulated(client, model, fmt, {"x": x}, tmp_path)
    r = lambda a: round_array(a, fmt)  # noqa: E731
    add = r(r(x) + r(b))
    expected = r(add * r(c))
    assert np.array_equal(emu["/add/out"], add) and np.array_equal(emu["y"], expected)
    assert np.array_equal(emu["x"], x)  # the graph input keeps its name and its fp32 value; ops read the rounded copy
    assert np.mean(emu["y"] != ref["y"]) > 0.5  # the emulation really rounds
    assert summary["weights"] == 2 and summary["inputs"] == ["x"] and summary["tensors"] == 2
    assert summary["activation_rounding"] == ("veltkamp" if opset < 13 and fmt == "bf16" else f"Cast to {fmt} and back")


@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
def test_matmul_softmax_layernorm_equal_numpy_up_to_their_fp32_error(client, tmp_path, fmt):
    rng = np.random.default_rng(2)
    K, N = 64, 32
    w = (rng.standard_normal((K, N)) / 4).astype(np.float32)
    gamma, beta = (1 + rng.standard_normal(N) / 4).astype(np.float32), (rng.standard_normal(N) / 4).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["/fc/out"], name="/fc/MatMul"),
             helper.make_node("Softmax", ["/fc/out"], ["/attn/probs"], name="/attn/Softmax", axis=-1),
             helper.make_node("LayerNormalization", ["/fc/out", "gamma", "beta"], ["/ln/out"], name="/ln/LayerNorm",
                              axis=-1, epsilon=1e-5)]
    inits = [nh.from_array(w, "w"), nh.from_array(gamma, "gamma"), nh.from_array(beta, "beta")]
    model = _save(nodes, inits, [_vi("x", [8, K])], [_vi("/attn/probs", [8, N]), _vi("/ln/out", [8, N])],
                  tmp_path / "mm.onnx")
    x = rng.standard_normal((8, K)).astype(np.float32)
    ref, emu, summary = _emulated(client, model, fmt, {"x": x}, tmp_path)
    r = lambda a: round_array(a, fmt)  # noqa: E731
    xr, wr = r(x).astype(np.float64), r(w).astype(np.float64)
    mm = xr @ wr
    # a dot product of K terms in fp32 is off by at most K * eps * sum|x_i w_i|
    share = _agrees(emu["/fc/out"], mm, K * EPS32 * (np.abs(xr) @ np.abs(wr)), fmt)
    assert share < 0.05
    h = emu["/fc/out"].astype(np.float64)  # the next ops read the rounded MatMul output, as on the device
    e = np.exp(h - h.max(-1, keepdims=True))
    soft = e / e.sum(-1, keepdims=True)
    assert _agrees(emu["/attn/probs"], soft, 16 * EPS32 * soft + 1e-12, fmt) < 0.05
    mean, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
    ln = (h - mean) / np.sqrt(var + 1e-5) * r(gamma).astype(np.float64) + r(beta).astype(np.float64)
    assert _agrees(emu["/ln/out"], ln, 64 * EPS32 * (np.abs(ln) + 1), fmt) < 0.05
    # and it is not the fp32 model: every output moved
    for name in ("/fc/out", "/attn/probs", "/ln/out"):
        assert np.mean(emu[name] != ref[name]) > 0.5, name
    assert summary["tensors"] == 3 and not summary["unknown_dtype"]


def test_the_emulated_copy_keeps_every_onnx_name_and_rounds_only_float_tensors(tmp_path):
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Shape", ["x"], ["/s/shape"], name="/s/Shape"),
             helper.make_node("Reshape", ["x", "/s/shape"], ["/r/out"], name="/r/Reshape"),
             helper.make_node("Constant", [], ["/c/k"], name="/c/Constant",
                              value=nh.from_array(np.array(0.1, np.float32))),
             helper.make_node("Mul", ["/r/out", "/c/k"], ["y"], name="/m/Mul")]
    model = _save(nodes, [], [_vi("x", [2, 3])], [_vi("y", [2, 3])], tmp_path / "names.onnx")
    dst = tmp_path / "names_fp16.onnx"
    summary = emulate_model(str(model), str(dst), "fp16", {"/s/shape": "int64", "/r/out": "float32", "y": "float32"})
    out = onnx.load(str(dst))
    names = {o for n in out.graph.node for o in n.output}
    assert {"/s/shape", "/r/out", "/c/k", "y"} <= names  # the ONNX names hold the rounded values
    assert f"/s/shape{SUFFIX}_raw" not in names  # int64: left alone
    const = next(n for n in out.graph.node if n.op_type == "Constant")
    assert nh.to_array(const.attribute[0].t) == np.float32(np.float16(0.1))  # rounded in place, no Cast
    assert summary["constants"] == 1 and summary["tensors"] == 2 and summary["inputs"] == ["x"]
    assert [o.name for o in out.graph.output] == ["y"] and [i.name for i in out.graph.input] == ["x"]
    with pytest.raises(ValueError, match="unknown format"):
        round_array(rng.standard_normal(3), "fp8")


def build_overflow(path: Path) -> Path:
    """x -> MatMul -> Relu -> MatMul whose four large columns sum past 65504 -> Mul 1e-3 -> Add: in fp16 the
    middle MatMul's large outputs overflow to inf (its weights, 6e4, still fit); in fp32 nothing is large
    after the Mul."""
    rng = np.random.default_rng(3)
    H, N = 16, 32
    w2 = (rng.standard_normal((H, N)) / 4).astype(np.float32)
    w2[:, :4] = 6e4
    inits = [nh.from_array((rng.standard_normal((H, H)) / 4).astype(np.float32), "/fc1/w"), nh.from_array(w2, "/big/w"),
             nh.from_array(np.array(1e-3, np.float32), "/scale/k"),
             nh.from_array(rng.standard_normal(N).astype(np.float32), "/out/b")]
    nodes = [helper.make_node("MatMul", ["x", "/fc1/w"], ["/fc1/MatMul_output_0"], name="/fc1/MatMul"),
             helper.make_node("Relu", ["/fc1/MatMul_output_0"], ["/act/Relu_output_0"], name="/act/Relu"),
             helper.make_node("MatMul", ["/act/Relu_output_0", "/big/w"], ["/big/MatMul_output_0"], name="/big/MatMul"),
             helper.make_node("Mul", ["/big/MatMul_output_0", "/scale/k"], ["/scale/Mul_output_0"], name="/scale/Mul"),
             helper.make_node("Add", ["/scale/Mul_output_0", "/out/b"], ["y"], name="/out/Add")]
    return _save(nodes, inits, [_vi("x", [1, 8, H])], [_vi("y", [1, 8, N])], path)


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_an_fp16_overflow_is_blamed_on_the_op_that_overflows(capsys, tmp_path, client):
    model = build_overflow(tmp_path / "overflow.onnx")
    rc = main(["compare", str(model), "--modes", "fp32,fp16c,bf16c", "--seed", "1", "--json"])
    r = _json(capsys)
    assert rc == 1  # fp16c is over tolerance
    modes = {m["mode"]: m for m in r["modes"]}
    assert [m["emulated"] for m in r["modes"]] == [False, True, True]
    fp16 = modes["fp16c"]
    assert not fp16["ok"] and fp16["verdict"] == "wrong"
    assert fp16["first_divergence"]["onnx_node"] == "/big/MatMul"
    assert fp16["ranking"][0]["onnx_node"] == "/big/MatMul"
    assert fp16["overflow"]["onnx_node"] == "/big/MatMul" and fp16["overflow"]["elements"] > 0
    assert "overflow" in fp16["cause"] and "65504" in fp16["cause"]
    assert fp16["keep_fp32"][0]["onnx_node"] == "/big/MatMul"
    fix = r["fix"]
    assert fix["kind"] == "keep_fp32" and fix["emulated"] and fix["onnx_nodes"][0] == "/big/MatMul"
    assert "keep these ops in fp32 on the device: /big/MatMul" in fix["note"]
    # checked by emulating again: the MatMul and the Mul that reads its > 65504 values in fp32 bring the output back
    assert fix["possible"] and fix["kept_fp32"] == ["/big/MatMul", "/scale/Mul"]
    assert not fix["before"]["ok"] and fix["after"]["ok"] and fix["after"]["first_divergence"] is None
    assert sum(o["inf"] for o in fix["before"]["outputs"]) > 0 == sum(o["inf"] for o in fix["after"]["outputs"])
    assert re.search(r"NaN/inf output elements: [1-9]\d* before, 0 with these ops in fp32", fix["note"])
    # bf16 keeps fp32's exponent range: no overflow there, whatever its rounding costs
    assert "overflow" not in modes["bf16c"]
    assert modes["fp32"]["ok"] and "keep_fp32" not in modes["fp32"]
    # the real arithmetic: as MNN's banner reports it on this machine (x86 here: not available)
    fp16_flag = bool(client.hello()["cpu"].get("fp16"))
    assert fp16["real_low_precision"] is fp16_flag
    assert fp16["real_mode"]["mode"] == "low" and fp16["real_mode"]["reason"]
    assert modes["bf16c"]["real_mode"]["mode"] == "bf16"
    assert fp16["emulation"]["weights"] == 4 and fp16["conversion"] is None


def test_the_text_output_and_report_label_emulated_modes(capsys, tmp_path):
    model = build_overflow(tmp_path / "overflow.onnx")
    report = tmp_path / "r.html"
    assert main(["compare", str(model), "--modes", "fp16c", "--seed", "1", "--report", str(report)]) == 1
    out = capsys.readouterr().out
    assert "fp16c (emulated) FAIL" in out
    assert "keep in fp32 on the device: /big/MatMul (MatMul)" in out
    assert "real fp16 arithmetic (mode low):" in out
    html = report.read_text()
    assert "fp16c (emulated)" in html and "Keep in fp32 on the device" in html


@pytest.mark.parametrize("sample", ["cnn", "encoder_block"])
def test_clean_samples_stay_within_fp16s_expected_error(capsys, sample):
    rc = main(["compare", str(SAMPLES / f"{sample}.onnx"), "--modes", "fp16c,bf16c", "--json"])
    r = _json(capsys)
    assert rc == 0
    fp16, bf16 = r["modes"]
    assert fp16["ok"] and bf16["ok"] and fp16["verdict"] == bf16["verdict"] == "match"
    e16 = max(o["rel_l2"] for o in fp16["outputs"])
    e_bf = max(o["rel_l2"] for o in bf16["outputs"])
    # fp16 keeps 11 significand bits: ~5e-4 per rounding, a few roundings deep; bf16 keeps 8 (8x coarser)
    assert 1e-5 < e16 < 5e-3
    assert 2 * e16 < e_bf < 3e-2
    assert not fp16["keep_fp32"] and r["fix"] is None


def test_subgraph_bodies_are_listed_as_not_emulated(capsys):
    rc = main(["compare", str(SAMPLES / "control_flow.onnx"), "--modes", "fp16c", "--json"])
    r = _json(capsys)
    m = r["modes"][0]
    assert rc == 0 and not m["error"] and m["emulated"]
    assert m["emulation"]["unemulated_subgraphs"]  # its If/Loop bodies run in fp32; their outputs are rounded


def test_repro_refuses_an_emulated_mode(capsys, tmp_path):
    model = build_overflow(tmp_path / "overflow.onnx")
    rc = main(["compare", str(model), "--modes", "fp16c", "--seed", "1", "--no-fix", "--repro", str(tmp_path / "rp"),
               "--json"])
    r = _json(capsys)
    assert rc == 1 and "emulated" in r["repro_problem"]


def _row(mode, worst, node=None, effect=None, emulated=False, ok=False):
    return {"mode": mode, "emulated": emulated, "ok": ok, "error": None, "effect": effect,
            "outputs": [{"name": "y", "rel_l2": worst}], "ranking": [],
            "first_divergence": {"onnx_node": node, "op_type": "MatMul", "introduced": 1.0} if node else None}


def test_where_the_real_arithmetic_ran_the_emulation_is_put_beside_it():
    """The rule on hand-made rows (no CPU here runs fp16 for real): a real mode whose run changed the results
    makes `real_low_precision` true and puts both modes' figures side by side; one bit-identical to fp32 makes it
    false, whatever the banner says; without a run of it the banner decides (MNN has no bf16 flag)."""
    from mnnscope.inspector.compare.modes import _note_real_precision
    changed = "precision low changes the results on this CPU"
    modes = [_row("low", 2e-3, "/a/MatMul", effect=changed), _row("fp16c", 3e-3, "/a/MatMul", emulated=True)]
    _note_real_precision(modes, {"cpu": {"fp16": True}}, 3)
    fp16c = modes[1]
    assert fp16c["real_low_precision"] is True and fp16c["real_mode"]["ran"]
    assert fp16c["real_mode"]["compared"] == {"real_worst_rel_l2": 2e-3, "emulated_worst_rel_l2": 3e-3,
                                              "real_first_divergence": "/a/MatMul",
                                              "emulated_first_divergence": "/a/MatMul"}
    assert fp16c["keep_fp32"][0]["onnx_node"] == "/a/MatMul"
    same = [_row("low", 0.0, effect="no effect on this CPU: outputs bit-identical to fp32"),
            _row("fp16c", 3e-3, emulated=True, ok=True)]
    _note_real_precision(same, {"cpu": {"fp16": True}}, 3)
    assert same[1]["real_low_precision"] is False and same[1]["real_mode"]["compared"] is None
    assert same[1]["keep_fp32"] == []
    alone = [_row("fp16c", 3e-3, emulated=True), _row("bf16c", 3e-2, emulated=True)]
    _note_real_precision(alone, {"cpu": {"fp16": True}}, 3)
    assert alone[0]["real_low_precision"] is True and not alone[0]["real_mode"]["ran"]
    assert alone[1]["real_low_precision"] is False and "bf16" in alone[1]["real_mode"]["reason"]


def test_ops_kept_in_fp32_keep_their_own_weights_and_outputs_only_fp32_ops_read(tmp_path):
    """keep_fp32 as a device with mixed precision runs it: a weight that an fp16 op also reads is rounded; an output
    that an fp16 op reads is rounded (that op reads it in fp16), one read only by kept ops (or nobody) is not."""
    rng = np.random.default_rng(4)
    w, shared = rng.standard_normal((4, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["/a/out"], name="/a/MatMul"),
             helper.make_node("Add", ["/a/out", "s"], ["/b/out"], name="/b/Add"),
             helper.make_node("Mul", ["/b/out", "s"], ["/c/out"], name="/c/Mul"),
             helper.make_node("Relu", ["/c/out"], ["y"], name="/d/Relu")]
    model = _save(nodes, [nh.from_array(w, "w"), nh.from_array(shared, "s")], [_vi("x", [2, 4])], [_vi("y", [2, 4])],
                  tmp_path / "keep.onnx")
    dtypes = {t: "float32" for t in ("/a/out", "/b/out", "/c/out", "y")}
    summary = emulate_model(str(model), str(tmp_path / "k.onnx"), "fp16", dtypes, keep_fp32=["/a/MatMul", "/b/out"])
    out = onnx.load(str(tmp_path / "k.onnx"))
    inits = {t.name: nh.to_array(t) for t in out.graph.initializer}
    rounded = {n.output[0][: -len(f"{SUFFIX}_fp16")] for n in out.graph.node if n.op_type == "Cast"
               and n.output[0].endswith(f"{SUFFIX}_fp16")}
    assert summary["kept_fp32"] == ["/a/MatMul", "/b/Add"]  # by node name or by output tensor name
    assert np.array_equal(inits["w"], w)  # read by a kept op only
    assert np.array_equal(inits["s"], round_array(shared, "fp16")) and not np.array_equal(inits["s"], shared)
    assert "/a/out" not in rounded  # read by the kept Add only
    assert {"/b/out", "/c/out", "y"} <= rounded  # the fp16 Mul reads /b/out in fp16
    assert f"x{SUFFIX}" not in rounded and summary["inputs"] == []  # the graph input is read by the kept MatMul only
    assert summary["tensors"] == 3


def test_a_node_with_several_float_outputs_is_emulated_and_run(capsys, tmp_path, client):
    """A GRU writes Y and Y_h: each gets its own rounding nodes. Tagged by the node's name alone, both Casts were
    called /enc/GRU__emulated/to_fp16 and ONNX Runtime refused the copy ("two nodes with same node name"): a new
    user's fp16c of a GRU encoder failed, and its message said MNN could not run the model."""
    rng = np.random.default_rng(5)
    I, H = 4, 8
    inits = [nh.from_array((rng.standard_normal((1, 3 * H, I)) / 3).astype(np.float32), "W"),
             nh.from_array((rng.standard_normal((1, 3 * H, H)) / 3).astype(np.float32), "R")]
    nodes = [helper.make_node("GRU", ["x", "W", "R"], ["Y", "Y_h"], name="/enc/GRU", hidden_size=H),
             helper.make_node("Relu", ["Y"], ["y"], name="/out/Relu"),
             helper.make_node("Tanh", ["Y_h"], ["h"], name="/out/Tanh")]
    model = _save(nodes, inits, [_vi("x", [5, 1, I])], [_vi("y", [5, 1, 1, H]), _vi("h", [1, 1, H])],
                  tmp_path / "gru.onnx")
    feeds = {"x": rng.standard_normal((5, 1, I)).astype(np.float32)}
    ref, emu, summary = _emulated(client, model, "fp16", feeds, tmp_path)
    out = onnx.load(str(tmp_path / "gru_fp16.onnx"))
    names = [n.name for n in out.graph.node]
    assert len(names) == len(set(names)), names
    for t in ("Y", "Y_h"):  # both outputs rounded, each within fp16's error of the reference
        assert np.array_equal(emu[t], round_array(emu[t], "fp16"))
        assert np.allclose(emu[t], ref[t], atol=2e-2), t
    assert summary["tensors"] == 4
    assert main(["compare", str(model), "--modes", "fp16c", "--json"]) == 0
    (row,) = [r for r in _json(capsys)["modes"] if r["mode"] == "fp16c"]
    assert row["error"] is None and row["verdict"] == "match", (row["error"], row.get("cause"))
    from mnnscope.inspector.compare.verdict import judge
    failed = {"error": "m.onnx: onnxruntime load failed: two nodes with same node name", "emulated": True}
    assert judge(failed)["cause"].startswith("ONNX Runtime could not run the emulated copy: m.onnx: onnxruntime")
    assert judge(dict(failed, emulated=False))["cause"].startswith("MNN could not run the model")
