"""Engines (runner/engine.py): one base class, a registry, and setting names defined once in the protocol.

Adding an engine is one module plus one `register` line: a test plugin (tests/runner_numpy_engine.py) registers
a tiny numpy engine, and a real runner that loads it profiles, sweeps and dumps with it through the same
request handlers as MNN and ONNX Runtime.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from mnnscope.inspector.compare.metrics import load
from mnnscope.runner import engine, protocol, server
from mnnscope.runner.protocol import RunnerError
from tests.runner_numpy_engine import NUMPY_PLUGIN, NumpyEngine, write_mlp
from tests.runner_plugins import plugin_client


def _forward(arrays: dict, x: np.ndarray) -> dict[str, np.ndarray]:
    """The MLP of write_mlp in numpy: every op output by name."""
    n = len([k for k in arrays if k.endswith(".weight")])
    out, h = {}, x
    for i in range(n):
        h = h @ arrays[f"layer{i}.weight"] + arrays[f"layer{i}.bias"]
        if i < n - 1:
            out[f"layer{i}.dense"] = h
            h = np.maximum(h, 0)
            out[f"layer{i}"] = h
        else:
            out["y"] = h
    return out


@pytest.fixture(scope="module")
def plugin_runner():
    client = plugin_client(NUMPY_PLUGIN)
    yield client
    client.stop()


@pytest.fixture
def mlp(tmp_path):
    arrays = write_mlp(tmp_path / "mlp.npz", sizes=(4, 16, 8, 3))
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    np.savez(tmp_path / "inputs.npz", x=x)
    return tmp_path / "mlp.npz", tmp_path / "inputs.npz", _forward(arrays, x)


# ----- the protocol's lists ----------------------------------------------------------------------------
def test_protocol_request_list_is_the_handler_table():
    assert sorted(server.BUILTIN_REQUESTS) == sorted(protocol.REQUESTS)
    doc = protocol.__doc__
    listed = doc[doc.index("Requests (client -> runner)"):doc.index("Events (runner -> client)")]
    words = set(re.findall(r"[a-z_]+", listed))
    assert set(protocol.REQUESTS + protocol.CONTROL_REQUESTS) <= words
    assert "sleep" not in protocol.REQUESTS


def test_sleep_does_not_ship_in_the_runner():
    from mnnscope.inspector.process.client import RunnerClient
    with RunnerClient() as client:
        with pytest.raises(RunnerError) as info:
            client.request("sleep", {"seconds": 0.01}, timeout=60)
        assert info.value.kind == protocol.BAD_REQUEST
        assert "numpy" not in client.hello(mnn=False)["engines"]


def test_setting_names_are_defined_once():
    from mnnscope.inspector.profile import service
    from mnnscope.runner import mnn_env
    assert service.PRECISIONS == list(protocol.PRECISIONS)
    assert service.MEMORY_MODES == list(protocol.MEMORY_MODES)
    assert set(service.MNN_BACKENDS) == set(protocol.MNN_BACKENDS) | {protocol.BACKEND_AUTO}
    assert set(mnn_env.PRECISION_CODES) == set(protocol.RUNNER_PRECISIONS)
    assert set(mnn_env.MEMORY_CODES) == set(protocol.RUNNER_MEMORY_MODES)
    assert protocol.engine_name("onnxruntime") == protocol.ENGINE_ORT
    assert set(protocol.ENGINES) <= set(engine.ENGINES)


# ----- the base class, in this process -------------------------------------------------------------------
class _Job:
    """What an engine needs of a request: events (recorded) and cancel checks."""
    cancelled = False

    def __init__(self):
        self.events = []

    def event(self, kind, payload=None):
        self.events.append((kind, payload))

    def check_cancel(self):
        pass

    def progress(self, fraction, message=""):
        pass

    def log(self, text, stream="runner"):
        pass


def test_base_class_checks_state_and_the_engine_times_itself(mlp):
    model, inputs, expected = mlp
    assert engine.engine_class("numpy") is NumpyEngine  # registered by the plugin module's one line
    job = _Job()
    eng = NumpyEngine(job, str(model))
    with pytest.raises(RunnerError, match="load"):
        eng.feed({})
    eng.load()
    with pytest.raises(RunnerError, match="feed"):
        eng.run()
    eng.feed(engine.read_inputs(str(inputs)))
    assert eng.run(events=True) >= 0
    assert [p["name"] for k, p in job.events if k == "op_end"] == ["layer0.dense", "layer0", "layer1.dense",
                                                                    "layer1", "y"]
    assert eng.timed_run() > 0
    ops, per_run = eng.op_table()
    assert len(per_run) == 1 and len(per_run[0]) == len(ops) == 5
    np.testing.assert_allclose(eng.outputs()["y"], expected["y"], rtol=1e-6)
    eng.close()
    with pytest.raises(RunnerError):
        eng.run()


# ----- a registered engine behind the real request handlers ------------------------------------------------
def test_numpy_engine_profiles_in_a_real_runner(plugin_runner, mlp, tmp_path):
    model, inputs, expected = mlp
    assert "numpy" in plugin_runner.hello(mnn=False)["engines"]
    events = []
    r = plugin_runner.request("profile", {"path": str(model), "inputs": str(inputs), "runs": 3, "warmup": 2,
                                          "stats": True, "save": "all", "run_dir": str(tmp_path / "run"),
                                          "precision": "low"},
                              on_event=lambda k, b: events.append((k, b)), timeout=120)
    assert r["engine"] == "numpy" and r["api"] == "numpy"  # chosen by the file suffix it registered
    assert r["timing"] == "per_op" and [op["name"] for op in r["ops"]] == list(expected)
    assert all(op["ms_min"] <= op["ms"] <= op["ms_max"] for op in r["ops"])
    assert r["ops_sum_ms"] == pytest.approx(sum(op["ms"] for op in r["ops"]))
    assert r["backend_used"] == "CPU" and r["precision_effective"] == "high"
    assert any("precision 'low' is an MNN setting: ignored by numpy" in w for w in r["warnings"])
    for op in r["ops"]:
        (out,) = op["outputs"]
        np.testing.assert_allclose(np.load(out["path"]), expected[op["name"]], rtol=1e-6)
        assert out["max"] == pytest.approx(float(expected[op["name"]].max()), rel=1e-6)
    np.testing.assert_allclose(np.load(r["outputs"][0]["path"]), expected["y"], rtol=1e-6)
    assert [b["name"] for k, b in events if k == "op_begin"] == list(expected)  # the first run only


def test_numpy_engine_dumps_and_sweeps_in_a_real_runner(plugin_runner, mlp, tmp_path):
    model, inputs, expected = mlp
    d = plugin_runner.request("dump_tensors", {"engine": "numpy", "model": str(model), "inputs": str(inputs),
                                               "out_dir": str(tmp_path / "d")}, timeout=120)
    assert d["api"] == "numpy" and d["fallback_reason"] is None and d["outputs"] == ["y"]
    assert set(d["manifest"]) == {"x"} | set(expected)
    assert d["manifest"]["layer0"]["op_type"] == "Relu" and d["manifest"]["layer0"]["inputs"] == ["layer0.dense"]
    for name, want in expected.items():
        np.testing.assert_allclose(load(str(tmp_path / "d"), d["manifest"][name]), want, rtol=1e-6)
    s = plugin_runner.request("sweep", {"path": str(model), "engine": "numpy", "inputs": str(inputs), "runs": 2,
                                        "cells": [{"threads": 1}, {"backend": "OPENCL"}]}, timeout=120)
    assert [c["error"] for c in s["cells"]] == [None, None]
    assert all(c["total_ms"] > 0 and c["api"] == "numpy" for c in s["cells"])
    assert any("OPENCL requested, CPU used" in w for w in s["cells"][1]["warnings"])


def test_unknown_engine_and_old_spelling(plugin_runner, mlp, tmp_path, samples):
    model, inputs, _ = mlp
    with pytest.raises(RunnerError) as info:
        plugin_runner.request("profile", {"path": str(model), "inputs": str(inputs), "engine": "tflite",
                                          "save": "none"}, timeout=60)
    assert info.value.kind == protocol.BAD_REQUEST and "unknown engine 'tflite'" in info.value.message
    x = np.zeros((1, 3, 32, 32), np.float32)
    np.savez(tmp_path / "cnn.npz", input=x)
    r = plugin_runner.request("profile", {"path": str(samples / "cnn.onnx"), "inputs": str(tmp_path / "cnn.npz"),
                                          "engine": "onnxruntime", "runs": 1, "save": "none"}, timeout=120)
    assert r["engine"] == protocol.ENGINE_ORT and r["api"] == protocol.API_ONNXRUNTIME


@pytest.mark.parametrize("read_table", [True, False])
def test_ort_engine_leaves_no_profile_folder_behind(samples, tmp_path, monkeypatch, read_table):
    """ONNX Runtime's per-op timing writes a profile file; with no run folder given the engine makes a temporary
    one, and removes it at close, whether or not the table was read (100 mnnscope-ort-* folders stayed in /tmp
    after one test run)."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    eng = engine.engine_class("ort")(_Job(), str(samples / "cnn.onnx"), engine.Settings(op_timing=True))
    eng.load()
    eng.feed({"input": np.zeros((1, 3, 32, 32), np.float32)})
    assert eng.timed_run() > 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("mnnscope-ort-")], "the profile's folder"
    if read_table:
        ops, per_run = eng.op_table()
        assert ops and len(per_run) == 1
    eng.close()
    assert not list(tmp_path.iterdir())
