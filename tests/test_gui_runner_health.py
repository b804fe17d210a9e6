"""Runner health in the window: the status bar follows the job and its op; a work runner killed or hung mid-job
leaves a banner naming the job, the op and the signal, the window stays usable and the next job starts a fresh
runner (automatic restarts capped until the user presses Restart runner); results finished before stay; a
cancelled job ends within a second. Real runners (the test suite's `sleep` plugin, a real profile), no mocks."""
from __future__ import annotations

import gc
import os
import signal
import threading
import time

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

from mnnscope.gui import runnerhost  # noqa: E402
from mnnscope.inspector.profile.service import ProfileOptions, run_profile  # noqa: E402
from mnnscope.inspector.store.runs import RunStore  # noqa: E402

from runner_plugins import plugin_client  # noqa: E402
from test_gui import make_window, open_and_wait, settings_dir, wait_for_emission, window  # noqa: E402,F401
from PySide6.QtCore import QObject, Signal  # noqa: E402

pytestmark = pytest.mark.gui


@pytest.fixture
def win(qtbot, window, samples, ui_watchdog):
    """The window with a model open (unmeasured: the first paint builds glyph caches) and a work runner that
    loads the test plugin (the `sleep` request with op events)."""
    ui_watchdog.pause()
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    ui_watchdog.resume()
    window.runner.work = plugin_client(grace=runnerhost.WORK_GRACE_S)
    return window


def _sleep_job(win, seconds: float, got: dict, name: str = "profile"):
    return win.runner.run_job(
        name, lambda client, on_event, cancelled: client.request("sleep", {"seconds": seconds, "ops": True},
                                                                 on_event=on_event),
        on_done=lambda r: got.update(result=r), on_fail=lambda m: got.update(error=m))


def _busy_in_an_op(qtbot, win, op: str = "op") -> int:
    """Waits until the status bar names the job's op (the sleep plugin's ops are op0, op1, ...)."""
    qtbot.waitUntil(lambda: f"\u00b7 op {op}" in win.runner_label.text(), timeout=60000)
    assert win.runner_label.text().startswith(f"runner: busy: profile \u00b7 op {op}")
    return win.runner.work.pid


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _next_job_works(qtbot, win, old_pid: int) -> None:
    got = {}
    _sleep_job(win, 0.2, got)
    qtbot.waitUntil(lambda: bool(got), timeout=30000)
    assert got.get("result", {}).get("slept") == 0.2, got
    assert win.runner.work.pid != old_pid and win.runner.work.alive
    qtbot.waitUntil(lambda: win.runner_label.text().startswith("runner: idle"), timeout=5000)


def test_killed_runner_leaves_a_banner_naming_job_op_and_signal(qtbot, win, samples):
    # a real profile finishes first: its result stays, in the caller's hands and in the run store
    done = {}
    win.runner.run_job("profile", lambda client, on_event, cancelled: run_profile(
        ProfileOptions(str(samples / "cnn.onnx"), runs=1, warmup=1), client=client, on_event=on_event),
        on_done=lambda r: done.update(result=r), on_fail=lambda m: done.update(error=m))
    qtbot.waitUntil(lambda: bool(done), timeout=120000)
    assert "error" not in done, done
    finished = done["result"]

    got = {}
    with qtbot.waitSignal(win.runner.job_finished, timeout=30000) as ended:
        _sleep_job(win, 60, got)
        pid = _busy_in_an_op(qtbot, win)
        with qtbot.waitSignal(win.runner.runner_died, timeout=30000) as died:
            os.kill(pid, signal.SIGKILL)
    job, info = died.args
    assert job == "profile" and info["signal"] == "SIGKILL" and info["op"]["name"].startswith("op")
    assert ended.args[0] == "profile" and ended.args[1] is False and "SIGKILL" in got["error"]
    # the banner: a persistent error card naming the job, the op and the signal, with Restart runner
    card = next(c for c in win.notes.shown_cards() if c.n is win.runner.death_note)
    text = card.n.text()
    assert "profile" in text and f"`{info['op']['name']}`" in text and "SIGKILL" in text
    assert card.timer is None and [b.text() for b in card.buttons] == ["Restart runner"]
    assert win.runner_label.text().startswith("runner: died: profile") and "SIGKILL" in win.runner_label.text()
    # the window stays usable, the finished result is kept, and the next job starts a fresh runner
    assert win.isVisible()
    open_and_wait(qtbot, win, samples / "encoder_block.onnx")
    assert win.runner_label.text().startswith("runner: died: profile")   # the shapes runner's idle does not hide it
    assert done["result"] is finished and RunStore().get_run(finished["run_id"])["summary"]["total_ms"] > 0
    _next_job_works(qtbot, win, pid)


def test_hung_runner_is_stopped_and_named(qtbot, win):
    win.runner.hang_timeout = 1.5   # no message (not even a heartbeat) for 1.5 s: hung
    got = {}
    _sleep_job(win, 60, got)
    pid = _busy_in_an_op(qtbot, win)
    with qtbot.waitSignal(win.runner.runner_died, timeout=30000) as died:
        os.kill(pid, signal.SIGSTOP)
    job, info = died.args
    assert job == "profile" and info["hang"] and info["op"]["name"].startswith("op")
    assert "stopped answering" in win.runner.death_note.text() and info["op"]["name"] in win.runner.death_note.text()
    qtbot.waitUntil(lambda: _gone(pid), timeout=5000)   # the stopped runner was killed, not left behind
    _next_job_works(qtbot, win, pid)


def test_restarts_are_capped_until_the_user_restarts(qtbot, win):
    pids = []
    for _ in range(runnerhost.MAX_DEATHS):
        got = {}
        _sleep_job(win, 60, got)
        pid = _busy_in_an_op(qtbot, win)
        with qtbot.waitSignal(win.runner.runner_died, timeout=30000):
            os.kill(pid, signal.SIGKILL)
        pids.append(pid)
    assert win.runner.capped and "Restart runner" in win.runner.death_note.hint
    refused = {}
    assert _sleep_job(win, 0.1, refused) is None
    assert "press Restart runner" in refused["error"] and win.runner.work.pid == pids[-1]  # nothing started
    # only the latest death's banner stays; its button restarts
    deaths = [c for c in win.notes.shown_cards() if c.n.subject == "runner" and c.buttons]
    assert len(deaths) == 1
    deaths[0].buttons[0].click()
    assert not win.runner.capped and win.runner.death_note is None
    _next_job_works(qtbot, win, pids[-1])


def test_cancel_ends_the_job_within_a_second(qtbot, win):
    got = {}
    _sleep_job(win, 60, got)
    pid = _busy_in_an_op(qtbot, win)
    with qtbot.waitSignal(win.runner.job_finished, timeout=5000) as ended:
        t0 = time.monotonic()
        win.runner.cancel_job("profile")
    assert ended.args == ["profile", False, "cancelled"]
    qtbot.waitUntil(lambda: not win.runner.job_busy("profile") and not win.runner.live_job_threads(), timeout=1000)
    # the runner either stopped the request itself (and stays, idle) or was terminated: nothing runs on
    qtbot.waitUntil(lambda: _gone(pid) or not win.runner.work._inflight, timeout=1000)
    assert time.monotonic() - t0 < 1.0 + 0.3   # the waits above poll every 10 ms
    assert "result" not in got and "error" not in got   # a cancelled job reports nothing late
    assert win.runner_label.text() == "runner: idle (cancelled)"
    _next_job_works(qtbot, win, -1)


def test_cancel_stops_a_real_profile_within_a_second(qtbot, win, samples):
    got = {}
    win.runner.run_job("profile", lambda client, on_event, cancelled: run_profile(
        ProfileOptions(str(samples / "moe_llm.mnn"), runs=100000, warmup=1), client=client, on_event=on_event),
        on_done=lambda r: got.update(result=r), on_fail=lambda m: got.update(error=m))
    pid = _busy_in_an_op(qtbot, win, op="")
    t0 = time.monotonic()
    win.runner.cancel_job("profile")
    qtbot.waitUntil(lambda: not win.runner.live_job_threads(), timeout=1000)
    qtbot.waitUntil(lambda: _gone(pid) or not win.runner.work._inflight, timeout=1000)
    assert time.monotonic() - t0 < 1.0 + 0.3
    assert not got
    _next_job_works(qtbot, win, -1)


def test_cancel_kills_an_unresponsive_runner_within_a_second(qtbot, win):
    got = {}
    _sleep_job(win, 60, got)
    pid = _busy_in_an_op(qtbot, win)
    os.kill(pid, signal.SIGSTOP)   # stuck in native code: it cannot answer the cancel request
    t0 = time.monotonic()
    win.runner.cancel_job("profile")
    qtbot.waitUntil(lambda: _gone(pid), timeout=1000)
    assert time.monotonic() - t0 < 1.0 + 0.3
    qtbot.waitUntil(lambda: not win.runner.live_job_threads(), timeout=1000)
    assert not got and win.runner.death_note is None   # a cancel is not a death
    _next_job_works(qtbot, win, pid)


def test_a_conversion_is_not_taken_for_a_hang(qtbot, window, samples, ui_watchdog, tmp_path):
    # MNN's converter holds the GIL: the runner sends no heartbeat while it converts, for seconds
    from mnnscope.inspector.convert.service import convert_model
    ui_watchdog.pause()
    open_and_wait(qtbot, window, samples / "moe_llm.onnx")
    ui_watchdog.resume()
    window.runner.hang_timeout = 0.3
    got = {}
    window.runner.run_job("convert", lambda client, on_event, cancelled: convert_model(
        str(samples / "moe_llm.onnx"), str(tmp_path / "m.mnn"), client=client, on_event=on_event),
        on_done=lambda r: got.update(result=r), on_fail=lambda m: got.update(error=m))
    qtbot.waitUntil(lambda: bool(got), timeout=180000)
    assert got["result"].ok, got["result"].errors
    assert window.runner.death_note is None and not window.runner.deaths


def test_a_crash_a_service_reports_as_its_result_still_counts(qtbot, window, samples, ui_watchdog, tmp_path):
    # the converter segfaults on this model; convert_model turns that into a diagnosis (its result), and the
    # runner's death still gets the banner and counts towards the restart cap
    import onnx
    from fixtures_convert import chain_model
    from mnnscope.inspector.convert.service import convert_model
    model, bad = chain_model("undefined_input")
    path = tmp_path / "crash.onnx"
    onnx.save(model, str(path))
    ui_watchdog.pause()
    open_and_wait(qtbot, window, samples / "cnn.onnx")
    ui_watchdog.resume()
    got = {}
    with qtbot.waitSignal(window.runner.runner_died, timeout=180000) as died:
        window.runner.run_job("convert", lambda client, on_event, cancelled: convert_model(
            str(path), str(tmp_path / "crash.mnn"), client=client, on_event=on_event),
            on_done=lambda r: got.update(result=r), on_fail=lambda m: got.update(error=m))
    qtbot.waitUntil(lambda: bool(got), timeout=10000)
    assert not got["result"].ok and got["result"].errors[0]["kind"] == "undefined_input"
    job, info = died.args
    assert job == "convert" and info["signal"] == "SIGSEGV" and info["request"] == "convert"
    assert "convert: the runner died (SIGSEGV)" in window.runner.death_note.text()
    assert len(window.runner.deaths) == 1


def test_cancelling_a_waiting_job_leaves_the_running_one_alone(qtbot, win):
    """Jobs take turns on the work runner: cancelling one that waits its turn must not stop the request of the
    one that runs (a cancel used to go to whatever request the runner had in flight)."""
    first, second = {}, {}
    _sleep_job(win, 1.0, first, name="profile")
    _busy_in_an_op(qtbot, win)
    _sleep_job(win, 0.1, second, name="compare")
    win.runner.cancel_job("compare")
    qtbot.waitUntil(lambda: bool(first), timeout=30000)
    assert first.get("result", {}).get("slept") == 1.0, first
    assert not second  # a cancelled job reports nothing


def test_a_job_cancelled_between_its_requests_sends_no_more(qtbot, win):
    """A job of several requests (a conversion, then the profile) cancelled between two: its next request ends at
    once. (The cancel found no request in flight to stop, and the runner ran the rest of the job for nothing.)"""
    between, go, outcome = threading.Event(), threading.Event(), []

    def job(client, on_event, cancelled):
        client.request("sleep", {"seconds": 0.01})
        between.set()
        go.wait(30)
        start = time.monotonic()
        try:
            client.request("sleep", {"seconds": 5})
            outcome.append("answered")
        except Exception as e:
            outcome.append(type(e).__name__)
        outcome.append(time.monotonic() - start)

    win.runner.run_job("profile", job)
    qtbot.waitUntil(between.is_set, timeout=60000)
    win.runner.cancel_job("profile")
    go.set()
    qtbot.waitUntil(lambda: not win.runner.live_job_threads(), timeout=15000)
    assert outcome[0] == "Cancelled" and outcome[1] < 1, outcome


class _Pumped(QObject):
    event = Signal(str, str, object)


def test_a_signal_from_another_thread_is_waited_for_safely(qtbot):
    """The tests wait for job events (emitted on the job's thread, queued to the UI thread) with wait_for_emission:
    with qtbot.waitSignal in its place this test dies of a segfault within its first rounds (PySide6 6.11.3 calls
    the freed blocker with the emissions queued before its disconnect; the clean-clone CI's crash of 2026-12-05)."""
    host = _Pumped()
    stop = threading.Event()

    def pump():
        while not stop.is_set():
            host.event.emit("sweep", "progress", {"message": "cell 1 of 4"})

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        for _ in range(100):
            args = wait_for_emission(qtbot, host.event, lambda name, kind, payload: kind == "progress")
            assert args == ("sweep", "progress", {"message": "cell 1 of 4"})
            gc.collect()
            qtbot.wait(1)   # the emissions queued for the last receiver are delivered (or dropped) here
    finally:
        stop.set()
        thread.join(5)
