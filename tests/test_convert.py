"""Conversions of the samples with many settings, checked by their effect on the written .mnn (read with the
project's own reader), the node map on a model whose fusions are known, the graph diff, int8 calibration and
the `mnnscope convert` CLI. MNN's converter runs in the runner process for real."""
from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mnnscope.inspector.cli.app import main
from mnnscope.inspector.convert.service import convert_model
from mnnscope.inspector.convert.settings import ConvertSettings, Int8Settings
from mnnscope.inspector.formats.mnn_flatbuffer import read_mnn
from mnnscope.inspector.model.nodemap import NodeMap

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixtures_convert import fusion_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "resources" / "samples"

# (name, model, settings)
CASES = [
    ("cnn", "cnn", ConvertSettings()),
    ("cnn_static", "cnn", ConvertSettings(save_static_model=True)),
    ("cnn_nchw4", "cnn", ConvertSettings(keep_input_format=False)),
    ("moe", "moe_llm", ConvertSettings()),
    ("moe_fp16", "moe_llm", ConvertSettings(fp16=True)),
    ("moe_wq8", "moe_llm", ConvertSettings(weight_quant_bits=8)),
    ("moe_wq8_sym", "moe_llm", ConvertSettings(weight_quant_bits=8, weight_quant_asymmetric=False)),
    ("moe_wq4", "moe_llm", ConvertSettings(weight_quant_bits=4)),
    ("moe_wq4_block", "moe_llm", ConvertSettings(weight_quant_bits=4, weight_quant_block=16)),
    ("moe_external", "moe_llm", ConvertSettings(external_weights=True)),
    ("moe_matmul", "moe_llm", ConvertSettings(convert_matmul_to_conv=False)),
    ("encoder", "encoder_block", ConvertSettings()),
    ("external_data", "external_data", ConvertSettings()),
    ("control_flow", "control_flow", ConvertSettings()),
    ("fusion", "fusion", ConvertSettings()),
]


@pytest.fixture(scope="module")
def isolated_dirs(isolated_home):
    """Run folders and the op-list cache go to a temporary folder, never to the user's."""
    return isolated_home


@pytest.fixture(scope="module")
def converted(isolated_dirs, shared_runner):
    """Every case converted once, with the events each conversion streamed."""
    out_dir = isolated_dirs / "out"
    fusion = fusion_model(isolated_dirs / "fusion.onnx")
    results = {}
    for name, model, settings in CASES:
        src = fusion if model == "fusion" else SAMPLES / f"{model}.onnx"
        events: list = []
        r = convert_model(src, out_dir / f"{name}.mnn", settings, client=shared_runner,
                          on_event=lambda kind, p, ev=events: ev.append((kind, p)), run_dir=isolated_dirs / "runs" / name)
        results[name] = (r, events, src)
    return results


def _quant(model) -> list:
    return [op.attrs.get("quant") for op in model.ops if op.op_type == "Convolution" and op.weights]


def test_every_sample_converts_and_loads(converted):
    for name, (r, _, _) in converted.items():
        assert r.ok, (name, r.errors)
        assert r.errors == [] and r.output and os.path.getsize(r.output) == r.size_bytes
        assert r.mnn_ops and r.mnn_ops > 0  # MNN itself loaded the written model
        assert read_mnn(r.output).ops
        assert "Converted Success!" in Path(r.log_path).read_text()


def test_the_log_is_streamed_while_converting(converted):
    r, events, _ = converted["moe"]
    logs = "\n".join(p["text"] for kind, p in events if kind == "log")
    assert "Converted Success!" in logs and "[DumpPass]" in logs
    assert any(kind == "progress" for kind, _ in events)


def test_fp16_and_weight_quantization_shrink_the_model(converted):
    size = {name: converted[name][0].size_bytes for name in converted}
    assert size["moe_fp16"] < 0.8 * size["moe"]
    assert size["moe_wq8"] < 0.85 * size["moe"]
    assert size["moe_wq4"] < size["moe_wq8"]
    fp16 = _quant(read_mnn(converted["moe_fp16"][0].output))
    assert fp16 and all(q and q["kind"] == "fp16" for q in fp16)
    assert not any(_quant(read_mnn(converted["moe"][0].output)))
    for name, bits in (("moe_wq8", 8), ("moe_wq4", 4)):
        quants = _quant(read_mnn(converted[name][0].output))
        assert quants and all(q and q["kind"] == "weight_quant" and q["bits"] == bits for q in quants), name
    diff = converted["moe_wq4"][0].diff
    assert diff["quantized_ops"] == {"weight_quant4": len(_quant(read_mnn(converted["moe_wq4"][0].output)))}


def test_weight_quantization_says_which_weights_it_left_in_float(converted, isolated_dirs, shared_runner):
    """captcha_crnn came out 14.4 MB of 18.3 with 8-bit weights and nothing said why: its LSTM weights, each read
    by all 20 unrolled steps, stay float32 constants read by MatMul ops (measured, MNN 3.6.1). The same weight
    read by 20 Gemms is left float, with a warning naming it; 20 Gemms with their own weights are quantized, and
    the moe sample's MatMul weights too."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    out = {}
    for shared in (True, False):
        ws = [numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), f"W{k}")
              for k in range(1 if shared else 20)]
        nodes, x = [], "x"
        for k in range(20):
            nodes.append(helper.make_node("Gemm", [x, "W0" if shared else f"W{k}"], [f"h{k}"], name=f"step{k}",
                                          transB=1))
            x = f"h{k}"
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                                  [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4, 64])], ws)
        src = isolated_dirs / f"steps_{shared}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), src)
        out[shared] = convert_model(src, isolated_dirs / "out" / f"steps_{shared}.mnn",
                                    ConvertSettings(weight_quant_bits=8), client=shared_runner,
                                    run_dir=isolated_dirs / "runs" / f"steps_{shared}")
        assert out[shared].ok, out[shared].errors
    (note,) = [w for w in out[True].warnings if "left" in w]
    assert note.startswith("8-bit weight quantization left 1 weight in float32") and "read by MatMul" in note
    assert "W0" in note and "by 20 ops" in note
    assert not any("left" in w for w in out[False].warnings)
    # the share left in float32, as a figure the Compare dock's tab can show (the shared weight is all there is)
    assert out[True].float_share == pytest.approx(1.0) and out[False].float_share < 0.1
    assert out[True].to_json()["float_share"] == pytest.approx(1.0)
    # the moe sample's MatMul weights are quantized; its token embedding (read by GatherV2) is not, and says so
    (moe,) = [w for w in converted["moe_wq8"][0].warnings if "left" in w]
    assert "read by GatherV2" in moe and "MatMul" not in moe


def test_asymmetry_and_blocks_reach_the_weights(converted):
    asym = _quant(read_mnn(converted["moe_wq8"][0].output))
    sym = _quant(read_mnn(converted["moe_wq8_sym"][0].output))
    # MNN 3.6.1 defaults to asymmetric (a scale and a zero point per channel); symmetric stores one scale.
    assert all(q["asymmetric"] for q in asym) and not any(q["asymmetric"] for q in sym)
    assert sum(q["scales"] for q in asym) == 2 * sum(q["scales"] for q in sym)
    blocked = _quant(read_mnn(converted["moe_wq4_block"][0].output))
    assert any(q.get("blocks", 1) > 1 for q in blocked)
    assert not any(q.get("blocks", 1) > 1 for q in _quant(read_mnn(converted["moe_wq4"][0].output)))


def test_external_weights_go_to_a_weight_file(converted):
    r = converted["moe_external"][0]
    plain = converted["moe"][0]
    assert r.weight_file and os.path.isfile(r.weight_file)
    assert r.size_bytes < 0.5 * plain.size_bytes
    assert abs(r.size_bytes + os.path.getsize(r.weight_file) - plain.size_bytes) < 0.1 * plain.size_bytes
    assert read_mnn(r.output).external_weights


def test_matmul_to_conv_and_static_shapes_change_the_ops(converted):
    ops = Counter(op.op_type for op in read_mnn(converted["moe"][0].output).ops)
    kept = Counter(op.op_type for op in read_mnn(converted["moe_matmul"][0].output).ops)
    assert ops["Convolution"] > 0 and kept["Convolution"] == 0 and kept["MatMul"] > ops["MatMul"]
    dynamic = Counter(op.op_type for op in read_mnn(converted["cnn"][0].output).ops)
    static = Counter(op.op_type for op in read_mnn(converted["cnn_static"][0].output).ops)
    assert dynamic["Shape"] > 0 and static["Shape"] == 0
    assert sum(static.values()) < sum(dynamic.values())


def test_input_format_setting(converted):
    first = read_mnn(converted["cnn"][0].output).ops[1]
    nc4 = read_mnn(converted["cnn_nchw4"][0].output).ops[1]
    assert first.op_type == "ConvertTensor"  # NCHW input converted for the conv
    assert nc4.op_type == "Convolution" and nc4.inputs == ["input"]


def test_node_map_of_known_fusions(converted):
    r = converted["fusion"][0]
    nm = r.node_map
    st = {nid: e["status"] for nid, e in nm.onnx_to_mnn.items()}
    conv_op = nm.mnn_ops("/stem/conv")
    assert len(conv_op) == 1
    assert st["/stem/conv"] == st["/stem/bn"] == st["/stem/relu"] == "fused"
    assert nm.mnn_ops("/stem/bn") == nm.mnn_ops("/stem/relu") == conv_op
    assert nm.mnn_to_onnx[conv_op[0]] == ["/stem/conv", "/stem/bn", "/stem/relu"]
    mnn = {op.name: op for op in read_mnn(r.output).ops}
    assert mnn[conv_op[0]].op_type == "Convolution" and mnn[conv_op[0]].outputs == ["r1"]
    # Sigmoid * Mul -> one SiLU op
    assert st["/act/sigmoid"] == st["/act/mul"] == "fused"
    (silu,) = nm.mnn_ops("/act/sigmoid")
    assert mnn[silu].op_type == "UnaryOp" and mnn[silu].attrs["opType"] == "SILU"
    assert "FuseSilu" in nm.onnx_to_mnn["/act/mul"]["passes"]
    # MatMul + Add -> one op, MatMul's own output gone
    assert st["/fc/matmul"] == st["/fc/add"] == "fused"
    assert set(nm.mnn_ops("/fc/matmul")) <= set(nm.mnn_ops("/fc/add"))
    assert "FuseMatMulBias" in nm.onnx_to_mnn["/fc/add"]["passes"]
    # Identity eliminated; its output value lives on as the Relu's output
    assert st["/stem/identity"] == "eliminated" and nm.onnx_to_mnn["/stem/identity"]["reason"] == "no-op removed"
    assert st["/pool"] == st["/flatten"] == "kept"
    pairs = nm.tensor_pairs()
    assert pairs["r1"] == "r1" and pairs["id1"] == "r1" and pairs["y"] == "y"
    assert "c1" not in pairs and "bn1" not in pairs and "mm" not in pairs
    assert nm.counts() == {"kept": 2, "renamed": 0, "fused": 7, "eliminated": 1, "inserted": len(nm.inserted)}
    assert all(mnn[name].op_type in ("ConvertTensor", "Reshape", "Shape", "Rank", "BinaryOp", "Unsqueeze",
                                      "SliceTf", "Concat") for name in nm.inserted)
    layout = next(op.name for op in mnn.values() if op.op_type == "ConvertTensor" and op.inputs == ["x"])
    assert layout in nm.inserted and nm.inserted_for[layout] == ["/stem/conv", "/stem/bn", "/stem/relu"]
    assert NodeMap.from_json(json.loads(json.dumps(nm.to_json()))).to_json() == nm.to_json()


def test_node_map_does_not_trust_names_that_moved(converted):
    """MNN fuses Relu into the MatMul-as-Conv and leaves the Add's name on the post-Relu tensor."""
    nm = converted["external_data"][0].node_map
    for layer in range(3):
        add = nm.onnx_to_mnn[f"/layers.{layer}/Add"]
        relu = nm.onnx_to_mnn[f"/layers.{layer}/Relu"]
        assert add["status"] == relu["status"] == "fused"
        assert add["tensors"][f"/layers.{layer}/Add_output_0"] is None
    assert nm.onnx_to_mnn["/layers.0/Relu"]["tensors"] == {"/layers.0/Relu_output_0": "/layers.0/Relu_output_0"}
    assert any("another op's value" in n for n in nm.notes)


def test_graph_diff(converted):
    d = converted["cnn"][0].diff
    assert d["ops_before"] == 12 and d["ops_after"] == sum(d["op_types_after"].values())
    patterns = {f["pattern"]: f for f in d["fused"]}
    assert patterns["Conv+BatchNormalization+Relu"]["into"] == "Convolution"
    assert patterns["Conv+Relu"]["count"] == 1
    assert d["size_after"]["file_bytes"] == converted["cnn"][0].size_bytes
    assert d["size_before"]["file_bytes"] == os.path.getsize(SAMPLES / "cnn.onnx")
    ext = converted["external_data"][0].diff
    assert ext["size_before"]["external_bytes"] == os.path.getsize(SAMPLES / "external_data.onnx.data")
    assert converted["moe_fp16"][0].diff["size_ratio"] < converted["moe"][0].diff["size_ratio"]


def test_cli_json_contract(isolated_dirs, capsys):
    out = isolated_dirs / "cli" / "cnn.mnn"
    node_map = isolated_dirs / "cli" / "map.json"
    code = main(["convert", str(SAMPLES / "cnn.onnx"), "-o", str(out), "--weight-quant-bits", "8", "--json",
                 "--node-map", str(node_map)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads(captured.out)
    for key in ("ok", "output", "size_bytes", "seconds", "unsupported_ops", "errors", "warnings", "node_map",
                "log", "bundle", "diff"):
        assert key in data
    assert data["ok"] is True and data["output"] == str(out.resolve()) and data["size_bytes"] == out.stat().st_size
    assert set(data["node_map"]) == {"kept", "renamed", "fused", "eliminated", "inserted"}
    assert data["bundle"] is None and os.path.isfile(data["log"])
    assert data["settings"]["weight_quant_bits"] == 8
    saved = NodeMap.from_json(json.loads(node_map.read_text()))
    assert saved.counts() == data["node_map"]


def test_cli_usage_errors(isolated_dirs, capsys):
    model = str(SAMPLES / "cnn.onnx")
    assert main(["convert", model]) == 2  # no -o
    assert main(["convert", model, "-o", str(isolated_dirs / "x.mnn"), "--fp16", "--weight-quant-bits", "8"]) == 2
    assert main(["convert", model, "-o", str(isolated_dirs / "x.mnn"), "--int8", "--calib-random", "2",
                 "--feature-method", "ADMM", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "usage"
    # argparse's own refusals: exit 2, and with --json the JSON error (stdout was empty, tryout 17)
    assert main(["convert", model, "-o", "x.mnn", "--weight-quant-bits", "eight"]) == 2
    assert main(["convert", model, "-o", "x.mnn", "--weight-quant-bits", "eight", "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["kind"] == "usage" and "mnnscope convert: argument --weight-quant-bits" in err["message"]
    assert main(["convert", str(isolated_dirs / "missing.onnx"), "-o", "x.mnn"]) == 1
    assert main(["convert", model, "-o", model]) == 2 and (SAMPLES / "cnn.onnx").stat().st_size > 0


@pytest.fixture(scope="module")
def calibration_data(isolated_dirs):
    from PIL import Image
    rng = np.random.default_rng(0)
    npy, img, empty = isolated_dirs / "calib_npy", isolated_dirs / "calib_img", isolated_dirs / "calib_empty"
    for d in (npy, img, empty):
        d.mkdir()
    for i in range(3):
        np.save(npy / f"s{i}.npy", rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
        Image.fromarray((rng.random((40, 48, 3)) * 255).astype(np.uint8)).save(img / f"i{i}.png")
    return {"npy": npy, "img": img, "empty": empty}


def test_int8_calibration_sources(isolated_dirs, shared_runner, calibration_data, converted):
    float_size = converted["cnn"][0].size_bytes
    cases = {
        "random": Int8Settings(calib_random=3),
        "npy": Int8Settings(calib_dir=str(calibration_data["npy"]), feature_method="EMA"),
        "img": Int8Settings(calib_dir=str(calibration_data["img"]), mean=[0.5] * 3, std=[0.25] * 3, samples=2),
    }
    for name, int8 in cases.items():
        r = convert_model(SAMPLES / "cnn.onnx", isolated_dirs / "int8" / f"{name}.mnn", ConvertSettings(int8=int8),
                          client=shared_runner)
        assert r.ok, (name, r.errors)
        quants = _quant(read_mnn(r.output))
        assert quants and all(q and q["kind"] == "int8" and q.get("bits") == 8 for q in quants), name
        assert r.size_bytes < float_size
        log = Path(r.run_dir, "quantize.log").read_text()
        assert "Quantize model done!" in log
        samples = sorted(Path(r.run_dir, "calibration").iterdir())
        assert len(samples) == (2 if name == "img" else 3)
        assert (samples[0] / "input.json").is_file() and (samples[0] / "input.txt").is_file()
    # The conversion after a quantization still works in the same runner (mnnquant runs in its own).
    again = convert_model(SAMPLES / "cnn.onnx", isolated_dirs / "int8" / "after.mnn", client=shared_runner)
    assert again.ok, again.errors


def test_full_int8_is_told_apart_from_weight_only_int8(isolated_dirs, shared_runner):
    """mnnquant writes the same IDSTQuan int8 weights as --weightQuantBits 8; what tells full int8 apart is
    the calibrated activation scales (IDSTQuan.scaleIn/scaleOut) and the weightless QuantizedFloatParam."""
    out = isolated_dirs / "int8_vs_wq8"
    full = convert_model(SAMPLES / "cnn.onnx", out / "int8.mnn", ConvertSettings(int8=Int8Settings(calib_random=2)),
                         client=shared_runner)
    weight_only = convert_model(SAMPLES / "cnn.onnx", out / "wq8.mnn", ConvertSettings(weight_quant_bits=8),
                                client=shared_runner)
    assert full.ok and weight_only.ok, (full.errors, weight_only.errors)
    int8, wq8 = _quant(read_mnn(full.output)), _quant(read_mnn(weight_only.output))
    assert len(int8) == len(wq8) == 4
    for q in int8:
        assert q["kind"] == "int8" and q["bits"] == 8 and q["asymmetric"] is False, q
        assert q["scaleIn"] > 0 and q["scaleOut"] > 0 and q["clamp"] == [-127, 127] and q["method"] == "DEFAULT", q
    # A chain of convs: each one's output scale feeds the next one's input scale.
    assert int8[0]["scaleOut"] == int8[1]["scaleIn"] and int8[1]["scaleOut"] == int8[2]["scaleIn"]
    for q in wq8:
        assert q["kind"] == "weight_quant" and q["bits"] == 8 and "scaleIn" not in q and "clamp" not in q, q
    assert full.diff["quantized_ops"] == {"int8": 4}
    assert weight_only.diff["quantized_ops"] == {"weight_quant8": 4}
    from mnnscope.inspector.model.graphdiff import describe
    assert "weights stored as int8 with int8 activations (4 ops)" in describe(full.diff)
    assert "weights stored as weight_quant8 (4 ops)" in describe(weight_only.diff)


def test_int8_with_no_calibration_data_fails_cleanly(isolated_dirs, calibration_data, capsys):
    code = main(["convert", str(SAMPLES / "cnn.onnx"), "-o", str(isolated_dirs / "int8" / "none.mnn"), "--int8",
                 "--calib", str(calibration_data["empty"]), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["ok"] is False
    assert data["errors"][0]["kind"] == "calibration_data" and "no calibration samples" in data["errors"][0]["message"]
