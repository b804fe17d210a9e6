"""Runner faults beyond death and hangs (those: tests/test_runner_client.py): a runner that allocates without
bound meets its memory limit (MNNSCOPE_RUNNER_MEMORY_MB, RLIMIT_AS) and says so with what was running, and the
next request gets a fresh runner; one that floods its output or writes garbage on the protocol channel still
answers, and the client and the next request are unharmed. The faulty requests: tests/runner_faults.py."""
from __future__ import annotations

import time

import pytest

from tests.runner_plugins import plugin_client
from mnnscope.inspector.process.child import runner_memory_mb
from mnnscope.runner.protocol import RunnerError


def address_limit_mb(pid: int) -> int | None:
    for line in open(f"/proc/{pid}/limits"):
        if line.startswith("Max address space"):
            soft = line.split()[3]
            return None if soft == "unlimited" else int(soft) >> 20
    return None


def test_the_default_limit_is_three_quarters_of_memory(monkeypatch):
    import os
    monkeypatch.delenv("MNNSCOPE_RUNNER_MEMORY_MB", raising=False)
    total_mb = (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) >> 20
    assert abs(runner_memory_mb() - total_mb * 3 / 4) <= 1
    monkeypatch.setenv("MNNSCOPE_RUNNER_MEMORY_MB", "0")
    assert runner_memory_mb() is None
    with plugin_client() as client:
        client.request("sleep", {"seconds": 0.05}, timeout=60)
        assert address_limit_mb(client.pid) is None
    monkeypatch.delenv("MNNSCOPE_RUNNER_MEMORY_MB")
    with plugin_client() as client:
        client.request("sleep", {"seconds": 0.05}, timeout=60)
        assert abs(address_limit_mb(client.pid) - total_mb * 3 / 4) <= 1


def test_unbounded_allocation_meets_the_limit_and_the_next_request_gets_a_fresh_runner(monkeypatch):
    monkeypatch.setenv("MNNSCOPE_RUNNER_MEMORY_MB", "1200")
    with plugin_client("runner_faults") as client:
        client.request("sleep", {"seconds": 0.05}, timeout=60)
        first = client.pid
        assert address_limit_mb(first) == 1200
        t0 = time.monotonic()
        with pytest.raises(RunnerError) as e:
            client.request("allocate", {"chunk_mb": 32}, timeout=120)
        assert e.value.kind == "run_failed"
        assert "out of memory in allocate" in e.value.message and "1200 MB" in e.value.message, e.value.message
        assert time.monotonic() - t0 < 60
        deadline = time.monotonic() + 10
        while client.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not client.alive  # it left after answering
        assert client.request("sleep", {"seconds": 0.05}, timeout=60)["slept"] == 0.05
        assert client.pid != first and client.restarts == 1


def test_a_flood_of_output_is_survived(monkeypatch):
    with plugin_client("runner_faults") as client:
        logs = []
        t0 = time.monotonic()
        result = client.request("flood", {"mb": 8}, on_event=lambda kind, p: logs.append(kind), timeout=180)
        assert result["lines"] == 8 * 1024
        assert logs.count("log") >= 8 * 1024 // 8  # its log events arrived, every one
        assert len(client._child.tail) <= 200  # the client keeps a bounded tail, not the flood
        first = client.pid
        assert client.request("sleep", {"seconds": 0.05}, timeout=60)["slept"] == 0.05
        assert client.pid == first  # the same runner: a flood is not a fault
        print(f"16 MB of output flooded in {time.monotonic() - t0:.1f} s")


def test_garbage_on_the_protocol_channel_is_ignored_and_the_reply_still_arrives():
    with plugin_client("runner_faults") as client:
        result = client.request("garbage", timeout=60)
        assert result == {"after_garbage": True}  # not the forged reply of another request id
        tail = "\n".join(client._child.tail)
        assert "not json at all" in tail  # kept as log lines, as a stray print would be
        assert client.request("sleep", {"seconds": 0.05}, timeout=60)["slept"] == 0.05


def test_an_endless_protocol_line_is_dropped_in_pieces_not_held(monkeypatch):
    # bytes that never end their line must not grow the client's memory: past MAX_LINE they are dropped (here
    # the garbage handler's 1 MB line against a 256 kB limit) and the reply after them still arrives
    from mnnscope.inspector.process import client as client_module
    monkeypatch.setattr(client_module, "MAX_LINE", 256 << 10)
    with plugin_client("runner_faults") as client:
        assert client.request("garbage", timeout=60) == {"after_garbage": True}
        assert any(line.startswith("(a protocol line over 262144 bytes was dropped)") for line in client._child.tail)
        assert client.request("sleep", {"seconds": 0.05}, timeout=60)["slept"] == 0.05
