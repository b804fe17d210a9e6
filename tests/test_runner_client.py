"""The runner process boundary: hello, cancel, death reports, restarts, clean stdout.

The `sleep` request these tests use is not part of the runner: it comes from the test plugin
(tests/runner_plugins.py), which every runner started here loads.
"""
from __future__ import annotations

import threading
import time

import pytest

from mnnscope.inspector.process.client import Cancelled, RunnerDied
from mnnscope.runner.protocol import RunnerError
from tests.runner_plugins import plugin_client


@pytest.fixture
def runner_client():
    """A fresh runner with the test plugin per test, always stopped afterwards."""
    client = plugin_client()
    yield client
    client.stop()
    assert not client.alive


def test_hello_reports_versions_and_real_backends(runner_client):
    h = runner_client.hello()
    assert h["mnn"] and h["onnxruntime"] and h["onnx"]
    assert "CPU" in h["backends"]
    # The PyPI wheel is CPU-only: a backend that silently falls back must not be offered.
    assert "OPENCL" not in h["backends"] and "CUDA" not in h["backends"]
    assert isinstance(h["cpu"].get("fp16"), bool)


def test_native_prints_do_not_corrupt_protocol(runner_client):
    logs = []
    # load_structure imports MNN (which prints its banner) and runs native code that may print.
    runner_client.request("hello", {}, on_event=lambda k, p: logs.append((k, p)))
    assert runner_client.request("sleep", {"seconds": 0.01})["steps"] >= 1


def test_cancel_within_one_second_and_runner_survives(runner_client):
    runner_client.start()
    pid = runner_client.pid
    threading.Timer(0.3, runner_client.cancel).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        runner_client.request("sleep", {"seconds": 30})
    assert time.monotonic() - t0 < 1.0 + 0.3 + 1.0  # timer + the promised second + generous slack
    # A cooperative handler stops in time: the same process keeps serving.
    assert runner_client.request("sleep", {"seconds": 0.01})["steps"] >= 1
    assert runner_client.pid == pid


def test_kill_mid_op_names_the_op_and_restarts(runner_client):
    def on_event(kind, payload):
        if kind == "op_begin" and payload["name"] == "op3":
            runner_client.proc.kill()

    with pytest.raises(RunnerDied) as info:
        runner_client.request("sleep", {"seconds": 10, "ops": True}, on_event=on_event)
    err = info.value
    assert err.signal == "SIGKILL"
    assert err.last_op["name"] == "op3"
    assert "runner died (SIGKILL) during op `op3`" in err.message
    assert runner_client.request("sleep", {"seconds": 0.01})["steps"] >= 1
    assert runner_client.restarts == 1


def test_unknown_request_is_an_error_not_a_death(runner_client):
    with pytest.raises(RunnerError) as info:
        runner_client.request("no_such_request", {})
    assert info.value.kind == "bad_request"
    assert runner_client.alive


def test_timeout_stops_the_runner():
    with plugin_client() as client:
        with pytest.raises(RunnerError) as info:
            client.request("sleep", {"seconds": 30}, timeout=0.5)
        assert info.value.kind == "timeout"
        assert not client.alive


def test_bad_mnn_file_is_reported_not_fatal(runner_client, tmp_path):
    bad = tmp_path / "bad.mnn"
    bad.write_bytes(b"\x00" * 64 + b"garbage" * 100)
    try:
        runner_client.request("load_structure", {"path": str(bad)}, timeout=60)
        pytest.fail("garbage loaded as a model")
    except RunnerDied as e:  # MNN may crash on garbage: that is reported, and the client recovers
        assert e.signal or e.returncode
    except RunnerError as e:
        assert e.kind == "bad_model" and "bad.mnn" in e.message
    assert runner_client.request("sleep", {"seconds": 0.01})["steps"] >= 1
