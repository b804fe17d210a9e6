"""`kill` (SIGTERM) or a closed terminal (SIGHUP) closes the app as its close button does: before, the app ended
where it stood, leaving its runner's working folder (mnnscope-runner-*) in the temp folder and the runner running
on in its own session."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import require_module

require_module("pytestqt", "pip install -e .[test]")

pytestmark = pytest.mark.gui


def _cwd_of_processes(folder: Path) -> list[int]:
    """Processes whose working directory is `folder` (the runner works in its folder)."""
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if os.readlink(p / "cwd") == str(folder):
                    out.append(int(p.name))
            except OSError:
                pass
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_closes_the_window_and_removes_the_runner_folder(samples, tmp_path, signum):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TMPDIR=str(tmp), MNNSCOPE_DATA_DIR=str(tmp_path / "data"))
    app = subprocess.Popen([sys.executable, "-m", "mnnscope.gui.main", str(samples / "cnn.onnx")], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        runner = []
        while time.monotonic() < deadline and app.poll() is None:
            folders = sorted(tmp.glob("mnnscope-runner-*"))
            runner = [pid for f in folders for pid in _cwd_of_processes(f)]
            if runner:  # the window is up and its runner is computing (or has computed) the shapes
                break
            time.sleep(0.2)
        assert runner, f"no runner started: {app.poll()} {app.stderr.read() if app.poll() is not None else ''}"
        time.sleep(1.0)  # the model open and its shapes in
        app.send_signal(signum)
        rc = app.wait(timeout=60)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    err = app.stderr.read()
    assert rc == 0, err
    assert not list(tmp.glob("mnnscope-*")), list(tmp.iterdir())
    for pid in runner:  # the runner was stopped with the window, not left running in its own session
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert "Traceback" not in err, err
