"""`mnnscope inspect`: the JSON contract, human output, and exit codes on bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import onnx
import pytest

from tests.conftest import ROOT

SAMPLES = ["cnn", "encoder_block", "moe_llm", "unsupported_op", "external_data", "control_flow"]
MNN_SAMPLES = ["cnn", "encoder_block", "moe_llm", "external_data", "control_flow"]


def mnnscope(*args, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)


@pytest.mark.parametrize("name", SAMPLES)
def test_inspect_json_onnx(samples, name):
    r = mnnscope("inspect", samples / f"{name}.onnx", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)  # stdout holds only the JSON
    model = onnx.load(str(samples / f"{name}.onnx"), load_external_data=False)
    assert data["format"] == "onnx"
    assert data["nodes"] == len(model.graph.node)
    assert data["op_types"] == dict(Counter(n.op_type for n in model.graph.node))
    assert [o["name"] for o in data["outputs"]] == [o.name for o in model.graph.output]
    for key in ("path", "edges", "inputs", "params", "flops", "scopes", "subgraph_nodes"):
        assert key in data
    if name == "control_flow":
        assert data["subgraph_nodes"] > 0
    if name == "cnn":
        assert data["flops"] > 0 and data["inputs"] == [{"name": "input", "shape": [1, 3, 32, 32], "dtype": "float32"}]


@pytest.mark.parametrize("name", MNN_SAMPLES)
def test_inspect_json_mnn(samples, name):
    r = mnnscope("inspect", samples / f"{name}.mnn", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["format"] == "mnn" and data["nodes"] > 0
    onnx_model = onnx.load(str(samples / f"{name}.onnx"), load_external_data=False)
    # Conversion keeps the model's interface: same input and output names.
    assert {i["name"] for i in data["inputs"]} == {i.name for i in onnx_model.graph.input} - {
        t.name for t in onnx_model.graph.initializer}
    assert {o["name"] for o in data["outputs"]} == {o.name for o in onnx_model.graph.output}


def test_inspect_human_output(samples):
    r = mnnscope("inspect", samples / "cnn.onnx")
    assert r.returncode == 0
    assert "operators 12" in r.stdout and "Conv 3" in r.stdout and "probs" in r.stdout


def _bad_files(tmp_path, samples):
    good = (samples / "cnn.onnx").read_bytes()
    mnn = (samples / "cnn.mnn").read_bytes()
    files = {
        "empty.onnx": b"",
        "empty.mnn": b"",
        "truncated.onnx": good[: len(good) // 3],
        "random.onnx": os.urandom(3000),
        "random.mnn": os.urandom(3000),
        "truncated.mnn": mnn[: len(mnn) // 2],
        "onnx_as.mnn": good,
        "model.txt": good,
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return [tmp_path / n for n in files]


def test_bad_files_exit_1_with_one_line(tmp_path, samples):
    for path in _bad_files(tmp_path, samples) + [tmp_path / "missing.onnx"]:
        r = mnnscope("inspect", path, "--json")
        assert r.returncode == 1, (path.name, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr, path.name
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and path.name in lines[0], (path.name, r.stderr)
        assert json.loads(r.stdout)["error"]["message"]


def test_usage_errors_exit_2():
    assert mnnscope("inspect").returncode == 2
    assert mnnscope("inspect", "x.onnx", "--bogus").returncode == 2
    assert mnnscope("nosuchcommand").returncode == 2


def test_flops_with_a_free_batch_dim_are_unknown_not_the_few_ops_with_shapes(tmp_path):
    """captcha_crnn's input has a free `batch`: every shape after it was unknown but one, and inspect (and the
    model summary) said "FLOPs 1". A model whose counted ops miss some for want of shapes while its inputs have
    free dims says unknown; the same model with the batch fixed gets the whole figure."""
    from onnx import TensorProto, helper

    from mnnscope.inspector.formats.loader import load_model
    from mnnscope.inspector.model.flops import estimate_flops
    from mnnscope.inspector.model.summary import table_flops
    from mnnscope.inspector.model.table import GraphTable

    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 8], [0.5] * 128)
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
             helper.make_node("Relu", ["y"], ["z"], name="relu"),
             helper.make_node("Add", ["one", "one"], ["two"], name="const_add"),  # shapes known: 1 FLOP
             helper.make_node("Mul", ["z", "two"], ["out"], name="scale")]
    for batch, name in (("batch", "free"), (4, "fixed")):
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
                                  [helper.make_tensor_value_info("out", TensorProto.FLOAT, [batch, 8])], [w, one])
        path = tmp_path / f"{name}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        r = mnnscope("inspect", str(path), "--json")
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)["flops"]
        mg = load_model(str(path))
        total, counted = table_flops(GraphTable.from_graph(mg))
        if name == "free":
            assert total is None and counted == 1  # only const_add had shapes
            # counted at the sizes the inputs run at (batch 1 by default; the Inputs dock's in the window)
            at1 = 2 * 1 * 8 * 16 + 8 + 1 + 8
            assert got == at1 and json.loads(r.stdout)["flops_at"] == {"batch": 1}
            assert table_flops(GraphTable.from_graph(mg), {"batch": 1})[0] == at1 == estimate_flops(mg, {"batch": 1})[0]
            r4 = mnnscope("inspect", str(path), "--json", "--shape", "x=4,16")
            assert json.loads(r4.stdout)["flops"] == 2 * 4 * 8 * 16 + 4 * 8 + 1 + 4 * 8
        else:
            assert got == total == 2 * 4 * 8 * 16 + 4 * 8 + 1 + 4 * 8 == estimate_flops(mg)[0]


def test_recurrent_layers_are_counted(tmp_path):
    """The romanizer encoder's two BiGRUs take 97% of its run and were left out of its FLOPs ("135.69 k, estimate over
    9 of 53 ops": helper 111). A GRU, LSTM or RNN counts per step, direction and batch row its gates' two products and
    their activations: here a bidirectional GRU of hidden 8 over input 4, 5 steps, batch 2."""
    from onnx import TensorProto, helper

    from mnnscope.inspector.formats.loader import load_model
    from mnnscope.inspector.model.flops import estimate_flops, has_rule
    from mnnscope.inspector.model.summary import table_flops
    from mnnscope.inspector.model.table import GraphTable

    H, I, T, B = 8, 4, 5, 2
    W = helper.make_tensor("W", TensorProto.FLOAT, [2, 3 * H, I], [0.1] * (2 * 3 * H * I))
    R = helper.make_tensor("R", TensorProto.FLOAT, [2, 3 * H, H], [0.1] * (2 * 3 * H * H))
    node = helper.make_node("GRU", ["x", "W", "R"], ["y", "y_h"], name="gru", hidden_size=H, direction="bidirectional")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, B, I])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [T, 2, B, H])], [W, R])
    path = tmp_path / "gru.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    want = T * B * 2 * (2 * 3 * H * (I + H) + 4 * 3 * H)
    mg = load_model(str(path))
    assert has_rule("GRU") and has_rule("LSTM") and estimate_flops(mg)[0] == want
    assert table_flops(GraphTable.from_graph(mg))[0] == want
    r = mnnscope("inspect", str(path), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["flops"] == want, r.stderr


def test_argparse_refusals_exit_2_with_the_json_error_naming_the_command(capsys):
    """An unknown flag or a bad value left stdout empty under --json, and named no command ("usage: mnnscope [-h]
    COMMAND ...", tryout 17)."""
    from mnnscope.inspector.cli.app import main
    cnn = str(ROOT / "resources" / "samples" / "cnn.onnx")
    assert main(["inspect", cnn, "--json", "--frobnicate"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["error"] == {"kind": "usage",
                                        "message": "mnnscope inspect: unrecognized arguments: --frobnicate"}
    assert "usage: mnnscope [-h]" not in err and "see mnnscope inspect --help" in err
    assert main(["inspect", cnn, "--jsn"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "mnnscope inspect: error: unrecognized arguments: --jsn" in err


def test_version_names_mnnscope_and_the_engines_it_runs(tmp_path):
    from importlib.metadata import version
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "mnnscope.gui.main", "--version"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0 and r.stdout.startswith(f"mnnscope {version('mnnscope')} (MNN {version('MNN')}")
    assert "onnxruntime" in r.stdout


def test_a_garbage_npy_input_is_refused_without_numpys_pickle_advice(tmp_path, capsys):
    from mnnscope.inspector.cli.app import main
    bad = tmp_path / "x.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00" + b"garbage" * 20)
    code = main(["profile", str(ROOT / "resources" / "samples" / "cnn.onnx"), "--input", f"input={bad}", "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert code == 1 and "not a readable .npy/.npz file" in err["message"] and "allow_pickle" not in err["message"]
    import numpy as np
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    code = main(["profile", str(ROOT / "resources" / "samples" / "cnn.onnx"), "--input",
                 f"input={tmp_path / 'obj.npy'}", "--json"])
    err = json.loads(capsys.readouterr().out)["error"]
    assert code == 1 and "pickled" in err["message"] and "allow_pickle" not in err["message"]


def test_an_unknown_flop_count_says_how_many_ops_lack_shapes_and_at_which_sizes():
    """PP-OCRv6 rec: "FLOPs unknown" with no reason, where the window says why (96 countable ops whose dims shape
    inference made up). inspect says it too, and its JSON gives the figure (`flops_uncounted`) and the sizes the
    shapes were counted at (`sizes`); the window's summary gives the same figure."""
    from test_real_models import real_model
    from mnnscope.inspector.formats.loadproc import load_table
    from mnnscope.inspector.model.summary import table_flops_detail
    model = real_model("rapidocr", "models/PP-OCRv6_rec_small.onnx")
    r = mnnscope("inspect", model, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    sizes = {"DynamicDimension.0": 1, "DynamicDimension.1": 64}
    assert out["flops"] is None and out["sizes"] == sizes
    flops, _counted, uncounted = table_flops_detail(load_table(str(model)), sizes)
    assert flops is None and out["flops_uncounted"] == uncounted > 0
    text = mnnscope("inspect", model).stdout
    assert (f"FLOPs unknown ({uncounted} operators without shapes at DynamicDimension.0=1, DynamicDimension.1=64"
            in text), text
    clean = json.loads(mnnscope("inspect", ROOT / "resources" / "samples" / "cnn.onnx", "--json").stdout)
    assert clean["flops"] and clean["flops_uncounted"] == 0 and clean["sizes"] == {}
