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
    # a comparison's own folders (the Compare dock's, a CLI compare's without --keep) the same way
    dead_cmp = tmp_path / f"mnnscope-compare-mnn-{_dead_pid()}-x_1"
    dead_cmp.mkdir()
    live_cmp = tmp_path / f"mnnscope-compare-{os.getpid()}-y"
    live_cmp.mkdir()
    kept = tmp_path / "mnnscope-compare-k3q9x2ab"  # compare --keep's folder (no pid: meant to stay)
    kept.mkdir()
    fallback = tmp_path / "mnnscope-profile-abc123"  # a run's files when the store is unavailable (kept)
    fallback.mkdir()
    assert sorted(remove_orphan_workdirs(str(tmp_path))) == sorted([str(dead), str(dead_cmp)])
    assert not dead.exists() and not dead_cmp.exists()
    assert live.exists() and shim.exists() and live_cmp.exists() and kept.exists() and fallback.exists()


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


def test_owned_folders_carry_the_pid_and_kept_ones_do_not(tmp_path, monkeypatch):
    monkeypatch.setattr(client_mod.tempfile, "tempdir", str(tmp_path))
    own = client_mod.owned_tempdir("compare")
    m = client_mod.OWNED_TEMP.fullmatch(os.path.basename(own))
    assert m is not None and int(m.group(1)) == os.getpid()
    assert remove_orphan_workdirs(str(tmp_path)) == [] and os.path.isdir(own)  # this process is alive
