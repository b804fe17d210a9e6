"""A killed app or command (SIGKILL: no cleanup runs) left its runner's working folder in the temp folder for good;
the next runner client removes the folders of processes that are gone, and only those."""
from __future__ import annotations

import os
import subprocess
import sys

from mnnscope.inspector.process import client as client_mod
from mnnscope.inspector.process.client import RunnerClient, remove_orphan_workdirs


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_folders_of_gone_processes_are_removed_and_the_rest_stay(tmp_path):
    dead = tmp_path / f"mnnscope-runner-{_dead_pid()}-abc"
    (dead / "scratch").mkdir(parents=True)
    (dead / "scratch" / "model.mnn").write_bytes(b"x" * 10)
    live = tmp_path / f"mnnscope-runner-{os.getpid()}-def"
    live.mkdir()
    shim = tmp_path / "mnnscope-runner-path-xyz"  # child.py's runner package copy: no pid in its name
    shim.mkdir()
    other = tmp_path / "mnnscope-compare-123-x"
    other.mkdir()
    assert remove_orphan_workdirs(str(tmp_path)) == [str(dead)]
    assert not dead.exists() and live.exists() and shim.exists() and other.exists()


def test_a_runner_client_names_its_folder_by_pid_and_sweeps_first(tmp_path, monkeypatch):
    monkeypatch.setattr(client_mod.tempfile, "tempdir", str(tmp_path))
    dead = tmp_path / f"mnnscope-runner-{_dead_pid()}-old"
    dead.mkdir()
    c = RunnerClient()
    try:
        c.start()
        own = c._workdir()
        assert os.path.basename(own).startswith(f"mnnscope-runner-{os.getpid()}-")
        assert not dead.exists()
    finally:
        c.stop()
    assert not os.path.exists(own)
