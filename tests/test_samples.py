"""The bundled sample models: valid ONNX, runnable in ONNX Runtime, converted to MNN, MNN == ORT.

MNN and its converter run in child processes (they print to stdout and may crash); ONNX Runtime
runs in-process here, which the project allows in tests only.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest

from conftest import benchmark, load_script

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "resources" / "samples"


make_samples = load_script(SAMPLES / "make_samples.py")
gen_large = benchmark("gen_large")

_rng = np.random.default_rng(1234)
# name -> (inputs, {output: shape}, op types that must be present)
CASES = {
    "cnn": ({"input": _rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}, {"probs": (1, 10)},
            {"Conv", "BatchNormalization", "Relu", "MaxPool", "Add", "GlobalAveragePool", "Flatten", "Gemm",
             "Softmax"}),
    "encoder_block": ({"hidden": _rng.standard_normal((1, 16, 64)).astype(np.float32)}, {"output": (1, 16, 64)},
                      {"LayerNormalization", "MatMul", "Reshape", "Transpose", "Div", "Softmax", "Gelu", "Add"}),
    "moe_llm": ({"input_ids": _rng.integers(0, 96, (1, 8)).astype(np.int64)}, {"logits": (1, 8, 96)},
                {"Gather", "Pow", "ReduceMean", "Sqrt", "Softmax", "TopK", "ScatterElements", "Sigmoid",
                 "MatMul"}),
    "unsupported_op": ({"input": _rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}, {"onehot": (1, 4)},
                       {"Conv", "Mish", "Hardmax"}),
    "external_data": ({"x": _rng.standard_normal((1, 64)).astype(np.float32)}, {"y": (1, 16)},
                      {"MatMul", "Add", "Relu"}),
    "control_flow": ({"x": np.array([[1.0, -2.0, 3.0, 0.5]], np.float32)}, {"y": (1, 4)}, {"If", "Loop"}),
    # Drawn last so that the other samples' inputs stay what they were.
    "moe_llm_kv": ({"input_ids": _rng.integers(0, 96, (1, 5)).astype(np.int64),
                    **{f"past_{k}_{i}": _rng.standard_normal((1, 2, 3, 16)).astype(np.float32)
                       for i in range(2) for k in ("key", "value")}},
                   {"logits": (1, 5, 96), **{f"present_{k}_{i}": (1, 2, 8, 16) for i in range(2)
                                             for k in ("key", "value")}},
                   {"Gather", "TopK", "ScatterElements", "Concat", "Softmax", "MatMul"}),
}
CONVERTED = list(make_samples.SAMPLES_THAT_CONVERT)
# MNN runs erf-GELU as its own approximate kernel (about 5e-4 off the exact erf form).
TOLERANCE = {"encoder_block": 2e-3}

_RUN_MNN = """
import json, sys
import numpy as np
import MNN
F = MNN.expr
samples, work = sys.argv[1], sys.argv[2]
jobs = json.loads(sys.argv[3])
rt = MNN.nn.create_runtime_manager(({"backend": "CPU", "numThread": 1, "precision": "high"},))
for name, (inputs, outputs) in jobs.items():
    module = MNN.nn.load_module_from_file(f"{samples}/{name}.mnn", inputs, outputs, runtime_manager=rt)
    feeds = []
    for i in inputs:
        a = np.load(f"{work}/{name}.{i}.npy", allow_pickle=False)
        if a.dtype == np.int64:  # MNN has no int64 tensors
            feeds.append(F.const(a.astype(np.int32), list(a.shape), F.NCHW, F.int))
        else:
            feeds.append(F.const(a, list(a.shape), F.NCHW, F.float))
    results = module.forward(feeds)
    results = results if isinstance(results, (list, tuple)) else [results]
    for o, r in zip(outputs, results):
        np.save(f"{work}/{name}.out.{o}.npy", np.array(F.convert(r, F.NCHW).read()), allow_pickle=False)
"""


def _run_ort(name: str) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(SAMPLES / f"{name}.onnx"), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, CASES[name][0])))


@pytest.fixture(scope="module")
def mnn_outputs(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    """Run every converted sample once in one MNN child process; {sample: {output: array}}."""
    work = tmp_path_factory.mktemp("mnn_samples")
    jobs = {}
    for name in CONVERTED:
        inputs, outputs, _ = CASES[name]
        for key, arr in inputs.items():
            np.save(work / f"{name}.{key}.npy", arr, allow_pickle=False)
        jobs[name] = [list(inputs), list(outputs)]
    proc = subprocess.run([sys.executable, "-c", _RUN_MNN, str(SAMPLES), str(work), json.dumps(jobs)],
                          capture_output=True, text=True, errors="replace", timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {name: {o: np.load(work / f"{name}.out.{o}.npy", allow_pickle=False) for o in CASES[name][1]}
            for name in CONVERTED}


@pytest.mark.parametrize("name", list(CASES))
def test_sample_passes_checker_with_stated_ops(name):
    path = SAMPLES / f"{name}.onnx"
    onnx.checker.check_model(str(path), full_check=True)  # by path: external data resolved from its folder
    model = onnx.load(str(path))
    assert CASES[name][2] <= {n.op_type for n in model.graph.node}
    assert [i.name for i in model.graph.input] == list(CASES[name][0])
    assert [o.name for o in model.graph.output] == list(CASES[name][1])
    assert all(n.name.startswith("/") for n in model.graph.node), "node names are '/'-scoped like exporters"


@pytest.mark.parametrize("name", list(CASES))
def test_sample_runs_in_onnxruntime_with_stated_shapes(name):
    outputs = _run_ort(name)
    assert {k: v.shape for k, v in outputs.items()} == CASES[name][1]
    assert all(np.isfinite(v).all() for v in outputs.values())


def test_committed_samples_are_what_the_script_generates(tmp_path):
    # Conversion of these samples takes ~20 ms each, so the whole script (with MNN) runs here.
    proc = subprocess.run([sys.executable, str(SAMPLES / "make_samples.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    generated = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in SAMPLES.iterdir() if p.suffix in (".onnx", ".mnn", ".data"))
    assert generated == committed
    for name in generated:
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), \
            f"{name} is stale or not deterministic: rerun resources/samples/make_samples.py"


def test_external_data_sample_keeps_every_initializer_outside():
    model = onnx.load(str(SAMPLES / "external_data.onnx"), load_external_data=False)
    assert len(model.graph.initializer) == 6
    for tensor in model.graph.initializer:
        assert tensor.data_location == onnx.TensorProto.EXTERNAL and not tensor.raw_data
        assert {e.key: e.value for e in tensor.external_data}["location"] == "external_data.onnx.data"


def test_moe_llm_routes_each_token_to_two_experts():
    # The MoE gate (ScatterElements output) must hold exactly top_k=2 non-zero weights per token summing to 1.
    import onnxruntime as ort

    model = onnx.load(str(SAMPLES / "moe_llm.onnx"))
    gate = "/model/layers.0/mlp/ScatterElements_output_0"
    model.graph.output.append(onnx.helper.make_tensor_value_info(gate, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    weights = session.run([gate], CASES["moe_llm"][0])[0]
    assert weights.shape == (8, 4)
    assert ((weights > 0).sum(axis=1) == 2).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("name", CONVERTED)
def test_mnn_file_exists_and_is_not_empty(name):
    path = SAMPLES / f"{name}.mnn"
    assert path.is_file() and path.stat().st_size > 0


@pytest.mark.parametrize("name", CONVERTED)
def test_mnn_fp32_matches_onnxruntime(name, mnn_outputs):
    reference = _run_ort(name)
    for output, ref in reference.items():
        got = mnn_outputs[name][output]
        assert got.size == ref.size, f"{name}:{output} MNN shape {got.shape} vs ORT {ref.shape}"
        diff = float(np.abs(got.reshape(ref.shape) - ref).max())
        assert diff < TOLERANCE.get(name, 1e-3), f"{name}:{output} max abs diff {diff}"


def test_unsupported_op_sample_fails_conversion_naming_both_ops(tmp_path):
    ok, log = make_samples.convert(SAMPLES / "unsupported_op.onnx", tmp_path / "unsupported_op.mnn")
    assert not ok
    assert "These Op Not Support" in log and "Hardmax" in log and "Mish" in log
    assert not (tmp_path / "unsupported_op.mnn").exists()


def test_conversion_without_external_data_file_is_judged_failed(tmp_path):
    # The converter prints "Can't open file" and then "Converted Success!": the sample must expose that.
    shutil.copy(SAMPLES / "external_data.onnx", tmp_path / "external_data.onnx")
    ok, log = make_samples.convert(tmp_path / "external_data.onnx", tmp_path / "external_data.mnn")
    assert "Can't open file" in log
    assert not ok


def test_gen_large_decoder_has_requested_node_count_and_passes_checker():
    model = gen_large.make_decoder(2000)
    assert abs(len(model.graph.node) - 2000) <= 40
    onnx.checker.check_model(model)
    names = [n.name for n in model.graph.node]
    assert len(set(names)) == len(names)
    layers = {n.split("/")[2] for n in names if n.startswith("/model/layers.")}
    assert len(layers) == (2000 - gen_large.NODES_OUTSIDE_LAYERS) // gen_large.NODES_PER_LAYER
    ops = {n.op_type for n in model.graph.node}
    assert {"Pow", "ReduceMean", "Sqrt", "Reshape", "Transpose", "MatMul", "Softmax", "Sigmoid", "Mul"} <= ops
