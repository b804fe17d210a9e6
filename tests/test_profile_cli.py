"""`mnnscope profile`: the JSON contract, pure-JSON stdout, traces, sweeps and exit codes 0/1/2."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mnnscope.inspector.cli import app as cli
from mnnscope.inspector.store.runs import RunStore
from tests.conftest import ROOT


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MNNSCOPE_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def mnnscope(*args, timeout=180):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mnnscope.gui.main", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)


def test_json_stdout_is_only_the_contract_object(samples, tmp_path):
    # A real process: MNN prints its banner to fd 1 when imported; none of it may reach our stdout.
    r = mnnscope("profile", samples / "cnn.mnn", "--stats", "--runs", 2, "--warmup", 1, "--json",
                 "--trace", tmp_path / "t.json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)  # the whole stdout is one JSON document
    for key in ("backend_requested", "backend_used", "precision_requested", "precision_effective", "threads",
                "runs", "total_ms", "ops", "memory_mb", "warnings", "rss_peak_mb", "engine", "run_id"):
        assert key in out, key
    assert out["engine"] == "mnn" and out["runs"] == 2 and out["threads"] == 1 and isinstance(out["run_id"], int)
    for op in out["ops"]:
        assert {"name", "type", "ms", "flops", "outputs"} <= set(op) and op["ms"] > 0
        for o in op["outputs"]:
            assert {"name", "shape", "dtype", "min", "max", "mean", "std", "nan", "inf"} <= set(o)
    assert "The device supports" not in r.stdout and "Traceback" not in r.stderr
    trace = json.loads((tmp_path / "t.json").read_text())
    assert len([e for e in trace["traceEvents"] if e["ph"] == "X"]) == len(out["ops"])


def test_human_output_names_backends_and_slowest_ops(samples, capsys):
    assert cli.main(["profile", str(samples / "cnn.mnn"), "--runs", "2", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "backend   CPU requested, CPU used" in out and "precision high requested, high effective" in out
    assert "Convolution" in out and "... 8 more" in out and "run 1 stored" in out


def test_onnx_defaults_to_onnxruntime_and_mnn_on_onnx_converts_first(samples, capsys):
    assert cli.main(["profile", str(samples / "external_data.onnx"), "--runs", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "ort" and out["api"] == "onnxruntime" and out["ops"]
    assert cli.main(["profile", str(samples / "cnn.onnx"), "--engine", "mnn", "--runs", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "mnn" and out["converted_from"].endswith("cnn.onnx")
    assert {op["type"] for op in out["ops"]} >= {"Convolution"}
    # A model MNN cannot convert: exit 1 naming the ops, not a traceback.
    assert cli.main(["profile", str(samples / "unsupported_op.onnx"), "--engine", "mnn"]) == 1
    err = capsys.readouterr().err
    assert "conversion to MNN failed" in err and "Hardmax" in err
    # and what to do, as convert says it: both ops' own steps
    assert "next: replace Hardmax with ops MNN supports" in err and "export with opset 17 or lower" in err, err


def test_sweep_prints_a_table_and_json_cells(samples, capsys):
    args = ["profile", str(samples / "cnn.mnn"), "--runs", "2", "--warmup", "1", "--sweep", "threads=1,2",
            "memory=normal,low"]
    assert cli.main(args) == 0
    table = capsys.readouterr().out
    assert table.count("CPU ") == 4 and "threads" in table
    assert cli.main(args + ["--json"]) == 0
    cells = json.loads(capsys.readouterr().out)["cells"]
    assert [(c["threads"], c["memory_mode"]) for c in cells] == [(1, "normal"), (1, "low"), (2, "normal"), (2, "low")]
    assert all(c["total_ms"] > 0 for c in cells)


def _shape_error_model(tmp_path):
    """Reshape [1,4] -> [3,3]: MNN's Interpreter and Module API both fail with a shape error on `y`."""
    from conftest import benchmark
    bench = benchmark("bench_profile")
    nodes = [helper.make_node("Relu", ["x"], ["/r/Relu_output_0"], name="/r/Relu"),
             helper.make_node("Reshape", ["/r/Relu_output_0", "shape"], ["y"], name="/bad/Reshape")]
    graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([3, 3], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "bad.onnx"))
    bench.convert(tmp_path / "bad.onnx", tmp_path / "bad.mnn")
    return tmp_path / "bad.mnn"


def test_model_that_fails_to_run_exits_1_naming_the_tensor(tmp_path, capsys):
    bad = _shape_error_model(tmp_path)
    assert cli.main(["profile", str(bad), "--json"]) == 1
    captured = capsys.readouterr()
    err = json.loads(captured.out)["error"]
    assert err["kind"] == "run_failed" and "Compute Shape Error for y" in err["message"]
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    (run,) = RunStore().list_runs()  # a failed run is history too
    assert run["summary"]["error"]["kind"] == "run_failed" and run["model_path"] == str(bad.resolve())


def test_unreadable_model_and_bad_data_exit_1(tmp_path, samples, capsys):
    garbage = tmp_path / "garbage.mnn"
    garbage.write_bytes(os.urandom(256))
    assert cli.main(["profile", str(garbage)]) == 1
    np.save(tmp_path / "wrong.npy", np.zeros((2, 3), np.float32))
    assert cli.main(["profile", str(samples / "cnn.mnn"), "--input", f"input={tmp_path / 'wrong.npy'}"]) == 1
    assert "input 'input'" in capsys.readouterr().err


@pytest.mark.parametrize("args", [
    ["--precision", "fp8"],
    ["--memory", "huge"],
    ["--threads", "0"],
    ["--backend", "NOPE"],
    ["--shape", "input"],
    ["--shape", "nope=1,2"],
    ["--input", "input=/no/such.npy"],
    # (--text without --tokenizer takes the tokenizer.json beside the model, as the samples have one: its usage error
    # without one is test_cli_tokenizer_beside's)
    ["--tokenizer", "/no/tokenizer.json", "--text", "hi"],
    ["--sweep", "color=red"],
    ["--sweep", "threads=1,2", "--trace", "t.json"],
    ["--sweep", "precision=fp8"],
    ["--mean", "a,b"],
])
def test_usage_errors_exit_2(samples, capsys, args):
    code = cli.main(["profile", str(samples / "cnn.mnn"), *args])  # argparse's own checks (choices) too
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert "invalid choice" in err if args[0] in ("--precision", "--memory") else \
        err.startswith("mnnscope profile: ") and err.count("\n") == 1


def test_argparse_usage_errors_exit_2_from_the_console_script(samples):
    assert mnnscope("profile", samples / "cnn.mnn", "--precision", "fp8").returncode == 2
    assert mnnscope("profile").returncode == 2
