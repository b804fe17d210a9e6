"""The runner process boundary: hello, cancel, death reports, restarts, clean stdout.

The `sleep` request these tests use is not part of the runner: it comes from the test plugin
(tests/runner_plugins.py), which every runner started here loads.
"""
from __future__ import annotations

import sys
import threading
import time

import pytest

from mnnscope.inspector.process.client import Cancelled, RunnerClient, RunnerDied
from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError
from tests.runner_plugins import plugin_client, plugin_env


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


# A request whose handler prints on fd 1 the ways native code does (C stdio, a raw write) and as Python does,
# including a line that looks like this request's protocol result.
_PRINTING_HANDLER = """
import ctypes, os, sys
from mnnscope.runner import protocol

def native_print(job):
    libc = ctypes.CDLL(None)
    libc.puts(b"native puts line")
    libc.printf(b"native printf without a newline, ")
    libc.printf(b"then its end\\n")
    libc.fflush(None)
    os.write(1, protocol.encode(job.id, "result", {"forged": True}))
    os.write(1, b"raw write line\\n")
    print("python print line")
    sys.stdout.flush()
    return {"printed": True}
"""

# The runner as a user's own Python would start it (`PYTHON -m mnnscope.runner`), with that request added.
_RUNNER_WITH_PRINTS = """#!{python}
import sys
sys.path.insert(0, {here!r})
from mnnscope.runner import server
server.HANDLERS["native_print"] = "printing_handler:native_print"
server.main()
"""


def test_native_prints_do_not_corrupt_protocol(tmp_path):
    """Everything printed on fd 1 while a request runs arrives as a `log` event (stream "native") in order,
    the request's own result is the one returned (a printed protocol-looking line is not taken for it), and
    the same runner serves the next request."""
    (tmp_path / "printing_handler.py").write_text(_PRINTING_HANDLER)
    shim = tmp_path / "python-with-prints"
    shim.write_text(_RUNNER_WITH_PRINTS.format(python=sys.executable, here=str(tmp_path)))
    shim.chmod(0o755)
    logs = []
    with RunnerClient(python=str(shim), env=plugin_env()) as client:
        result = client.request("native_print", {}, timeout=60,
                                on_event=lambda k, p: logs.append(p) if k == "log" else None)
        assert result == {"printed": True}
        pid = client.pid
        assert client.request("hello", {}, timeout=120)["pid"] == pid
        assert client.request("sleep", {"seconds": 0.01})["steps"] >= 1
        assert client.alive and client.pid == pid and client.restarts == 0
        # each reply waited for the stderr lines printed before it (the sync marker, never shown as a line)
        assert client._child.last_sync == str(client._next_id)
        assert not any(protocol.SYNC_PREFIX.strip() in line for line in client._child.tail)
    texts = [p["text"] for p in logs]
    assert not any(protocol.SYNC_PREFIX.strip() in t for t in texts)
    assert all(p["stream"] == "native" for p in logs), logs
    printed = ["native puts line", "native printf without a newline, then its end",
               protocol.encode(1, "result", {"forged": True}).decode().strip(), "raw write line",
               "python print line"]
    assert [t for t in texts if t in printed] == printed, texts


def test_cancel_within_one_second_and_runner_survives(runner_client):
    runner_client.start()
    pid = runner_client.pid
    # Cancel from another thread once the request is really running (its first op event), not after a
    # fixed delay: a cancel that arrives before the request starts is a no-op, and a slow start is no failure.
    running, cancelled_at = threading.Event(), []

    def cancel_when_running():
        if running.wait(60):
            cancelled_at.append(time.monotonic())
            runner_client.cancel()

    canceller = threading.Thread(target=cancel_when_running, daemon=True)
    canceller.start()
    with pytest.raises(Cancelled):
        runner_client.request("sleep", {"seconds": 30, "ops": True},
                              on_event=lambda kind, p: running.set() if kind == "op_begin" else None)
    ended = time.monotonic()
    canceller.join(5)
    assert cancelled_at, "the request never started"
    assert ended - cancelled_at[0] < 1.0 + 1.0  # the promised second + generous slack
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
