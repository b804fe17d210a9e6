"""Shared fixtures. Qt tests run headless: the platform is set here, before anything imports Qt."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Tests never write run records, logs or caches into the user's home.
_SCRATCH = tempfile.mkdtemp(prefix="mnnscope-tests-")
for _var, _sub in (("MNNSCOPE_DATA_DIR", "data"), ("XDG_CACHE_HOME", "cache"),
                   ("XDG_CONFIG_HOME", "config")):
    os.environ[_var] = os.path.join(_SCRATCH, _sub)
os.environ.pop("MNNSCOPE_RUNS", None)  # conversion folders go beside the store's runs, as for users

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "resources" / "samples"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES


@pytest.fixture
def runner_client():
    """A fresh runner client per test, always stopped afterwards (no runner outlives its test)."""
    from mnnscope.inspector.process.client import RunnerClient
    client = RunnerClient()
    yield client
    client.stop()
    assert not client.alive


@pytest.fixture(scope="module")
def shared_runner():
    """One runner for read-only requests across a test module (faster than one per test; stopped with the
    module so no runner outlives the tests that use it)."""
    from mnnscope.inspector.process.client import RunnerClient
    client = RunnerClient()
    yield client
    client.stop()


@pytest.fixture(scope="module")
def isolated_home(tmp_path_factory):
    """A test module's own run folders and caches (MNNSCOPE_RUNS, XDG_CACHE_HOME), restored afterwards."""
    base = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MNNSCOPE_RUNS", str(base / "runs"))
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        yield base
