"""The runner's `dump_tensors` request: every tensor of a run written as .npy, on both engines."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mnnscope.inspector.compare.metrics import load
from mnnscope.inspector.formats.mnn import load_mnn
from mnnscope.inspector.formats.onnx import load_onnx
from mnnscope.runner.protocol import RunnerError

SAMPLES = Path(__file__).resolve().parent.parent / "resources" / "samples"


@pytest.fixture(scope="module")
def cnn_dumps(shared_runner, tmp_path_factory):
    work = tmp_path_factory.mktemp("dump")
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.savez(work / "in.npz", input=x)
    events = []
    mnn = shared_runner.request("dump_tensors", {"engine": "mnn", "model": str(SAMPLES / "cnn.mnn"),
                                                 "inputs": str(work / "in.npz"), "out_dir": str(work / "mnn")},
                                on_event=lambda kind, body: events.append((kind, body)), timeout=120)
    ort = shared_runner.request("dump_tensors", {"engine": "onnxruntime", "model": str(SAMPLES / "cnn.onnx"),
                                                 "inputs": str(work / "in.npz"), "out_dir": str(work / "ort")},
                                timeout=120)
    return work, mnn, ort, events


def _load(work: Path, side: str, entry: dict) -> np.ndarray:
    return load(str(work / side), entry)


def test_mnn_dump_writes_every_tensor_of_the_file(cnn_dumps):
    work, mnn, _, _ = cnn_dumps
    assert mnn["api"] == "interpreter" and mnn["fallback_reason"] is None and mnn["backend_used"] == "CPU"
    graph = load_mnn(SAMPLES / "cnn.mnn")
    produced = {t for _, d in graph.g.nodes(data=True) for t in d["outputs"]}
    assert set(mnn["manifest"]) == produced
    for name, entry in mnn["manifest"].items():
        arr = _load(work, "mnn", entry)
        assert list(arr.shape) == entry["shape"] and str(arr.dtype) == entry["dtype"], name
    assert mnn["outputs"] == ["probs"]
    assert (work / "mnn" / "manifest.json").is_file()


def test_mnn_tensors_are_read_in_nchw_not_as_raw_nc4hw4_views(cnn_dumps):
    # The fused Conv+BN+Relu output lives in NC4HW4 inside MNN: a raw view would scramble channels.
    work, mnn, ort, _ = cnn_dumps
    for name in ("/relu/Relu_output_0", "/layer1/Add_output_0", "probs"):
        a, r = _load(work, "mnn", mnn["manifest"][name]), _load(work, "ort", ort["manifest"][name])
        assert a.shape == r.shape
        np.testing.assert_allclose(a, r, atol=1e-4, rtol=1e-4)


def test_mnn_dump_reports_each_op_as_it_runs(cnn_dumps):
    _, _, _, events = cnn_dumps
    begins = [b["name"] for k, b in events if k == "op_begin"]
    ends = [b["name"] for k, b in events if k == "op_end"]
    # Every op announced as it starts (a crash is blamed on the last one); a dump sends no per-op timing, only
    # the last op's end after the run, so a failure while reading tensors back is not blamed on that op.
    assert ends == begins[-1:] and len(begins) > 5 and "/conv1/Conv_output_0" in begins
    assert [k for k, _ in events if k in ("op_begin", "op_end")][-1] == "op_end"
    assert {b["type"] for k, b in events if k == "op_begin"} >= {"Convolution", "Softmax"}


def test_ort_dump_keeps_every_node_output_unoptimised(cnn_dumps):
    work, _, ort, _ = cnn_dumps
    graph = load_onnx(SAMPLES / "cnn.onnx")
    outputs = {t for _, d in graph.g.nodes(data=True) for t in d["outputs"]}
    assert outputs | {"input"} == set(ort["manifest"])
    # BatchNormalization survives: graph optimisations (which fold it into the Conv) are off.
    bn = ort["manifest"]["/bn1/BatchNormalization_output_0"]
    assert bn["op_type"] == "BatchNormalization" and bn["producer"] == "/bn1/BatchNormalization"
    assert ort["outputs"] == ["probs"]


def test_ort_dump_in_several_runs_gives_the_same_tensors(shared_runner, cnn_dumps, tmp_path):
    work, _, ort, _ = cnn_dumps
    chunked = shared_runner.request("dump_tensors", {"engine": "onnxruntime", "model": str(SAMPLES / "cnn.onnx"),
                                                     "inputs": str(work / "in.npz"), "out_dir": str(tmp_path),
                                                     "outputs_per_run": 3}, timeout=120)
    assert set(chunked["manifest"]) == set(ort["manifest"])
    for name, entry in chunked["manifest"].items():
        np.testing.assert_array_equal(load(str(tmp_path), entry), _load(work, "ort", ort["manifest"][name]))


def test_control_flow_falls_back_to_the_module_api(shared_runner, tmp_path):
    np.savez(tmp_path / "in.npz", x=np.array([[1.0, -2.0, 3.0, 0.5]], np.float32))
    r = shared_runner.request("dump_tensors", {"engine": "mnn", "model": str(SAMPLES / "control_flow.mnn"),
                                               "inputs": str(tmp_path / "in.npz"), "out_dir": str(tmp_path / "d")},
                              timeout=120)
    assert r["api"] == "module" and "error code 3" in r["fallback_reason"]
    y = load(str(tmp_path / "d"), r["manifest"]["y"])
    # sum(x) > 0: 2x+1 = [3, -3, 7, 2]; then three loop steps acc = 0.5 acc + i (i = 0, 1, 2)
    acc = np.array([3.0, -3.0, 7.0, 2.0])
    for i in range(3):
        acc = 0.5 * acc + i
    np.testing.assert_allclose(y.ravel(), acc, rtol=1e-6)


@pytest.mark.parametrize("payload, kind, needle", [
    ({"engine": "mnn", "model": "/nonexistent.mnn"}, "bad_model", "no such"),
    ({"engine": "mnn", "model": str(SAMPLES / "cnn.mnn"), "inputs": None}, "bad_model", "input"),
    ({"engine": "mnn", "model": str(SAMPLES / "cnn.mnn"), "precision": "fp8"}, "bad_request", "precision"),
    ({"engine": "tflite", "model": str(SAMPLES / "cnn.mnn")}, "bad_request", "engine"),
])
def test_bad_requests_are_reported_not_crashed(shared_runner, tmp_path, payload, kind, needle):
    np.savez(tmp_path / "in.npz", input=np.zeros((1, 3, 32, 32), np.float32))
    payload = {"inputs": str(tmp_path / "in.npz"), "out_dir": str(tmp_path / "d"), **payload}
    with pytest.raises(RunnerError) as e:
        shared_runner.request("dump_tensors", payload, timeout=60)
    assert e.value.kind == kind and needle in e.value.message


def test_dumped_tensors_share_one_packed_file_and_read_back_exactly(tmp_path, cnn_dumps):
    # One file per run (thousands of tiny .npy files cost more than the MNN run itself): offsets aligned for
    # memory-mapping; 0-d, empty, bool, int and large (memory-mapped) tensors come back bit-exact.
    from mnnscope.inspector.compare import metrics
    from mnnscope.runner.dump import _Writer

    work, mnn, ort, _ = cnn_dumps
    for side, result in (("mnn", mnn), ("ort", ort)):
        assert sorted(p.name for p in (work / side).iterdir()) == ["manifest.json", "tensors.bin"], side
        assert {e["path"] for e in result["manifest"].values()} == {"tensors.bin"}
        assert all(e["offset"] % 64 == 0 for e in result["manifest"].values())
    rng = np.random.default_rng(0)
    arrays = {"scalar": np.float32(3.5) * np.ones(()), "empty": np.zeros((2, 0, 3), np.float32),
              "mask": rng.random((3, 5)) > 0.5, "ids": rng.integers(-9, 9, (7,), dtype=np.int64),
              "big": rng.standard_normal((600, 600)).astype(np.float32),  # 1.4 MB: past MMAP_BYTES
              "f16": rng.standard_normal((4, 3)).astype(np.float16), "strided": np.arange(24.0).reshape(4, 6)[:, ::2]}
    w = _Writer(str(tmp_path / "w"))
    for name, arr in arrays.items():
        w.save(name, arr, producer=None)
    manifest = w.finish({})["manifest"]
    for name, arr in arrays.items():
        back = metrics.load(str(tmp_path / "w"), manifest[name])
        assert back.shape == arr.shape and back.dtype == arr.dtype, name
        np.testing.assert_array_equal(back, arr)
    assert isinstance(metrics.load(str(tmp_path / "w"), manifest["big"]), np.memmap)
    # A run cut short (the runner died while writing): the last tensor is reported, not read as garbage.
    packed = tmp_path / "w" / "tensors.bin"
    packed.write_bytes(packed.read_bytes()[:-8])
    with pytest.raises(ValueError, match="cut short"):
        metrics.load(str(tmp_path / "w"), manifest["strided"])


def test_a_plain_run_of_the_outputs_is_made_only_when_asked(shared_runner, tmp_path, cnn_dumps):
    """`plain_outputs`: the MNN model run once more keeping no tensors, its outputs written beside the dump (compare
    judges outputs on them: saveTensors changes full int8's results). Asked for by compare only; on fp32 cnn the two
    runs agree bit for bit."""
    work, mnn, _, _ = cnn_dumps
    assert "plain_outputs" not in mnn  # not asked for
    out = shared_runner.request("dump_tensors", {"engine": "mnn", "model": str(SAMPLES / "cnn.mnn"),
                                                 "inputs": str(work / "in.npz"), "out_dir": str(tmp_path / "p"),
                                                 "plain_outputs": True}, timeout=120)
    with np.load(out["plain_outputs"]) as z:
        assert set(z.files) == set(out["outputs"])
        for name in z.files:
            np.testing.assert_array_equal(z[name], _load(tmp_path, "p", out["manifest"][name]))
