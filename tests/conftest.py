"""Shared fixtures. Qt tests run headless: the platform is set here, before anything imports Qt."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

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
    from inspector.client import RunnerClient
    client = RunnerClient()
    yield client
    client.stop()
    assert not client.alive


@pytest.fixture(scope="session")
def shared_runner():
    """One runner for read-only requests across the session (faster than one per test)."""
    from inspector.client import RunnerClient
    client = RunnerClient()
    yield client
    client.stop()
