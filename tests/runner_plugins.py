"""The test suite's runner plugin: a `sleep` request, and `plugin_client()` for runners that load plugins.

A runner imports the modules named in MNNSCOPE_RUNNER_PLUGINS at start (runner/server.py); `plugin_client()`
starts one with this folder on its path and this module (plus any others named) as plugins, so nothing
test-only ships in the runner itself. This module stays light (no numpy): a runner that loads it starts as
fast as a plain one, which the cancel tests rely on. The numpy engine is another plugin,
tests/runner_numpy_engine.py.

- `sleep` {seconds, ops}: runs for `seconds` while checking for cancel, with op_begin/op_end events named
  op0, op1, ... when `ops` is set: used to test cancel, hang and crash handling.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from mnnscope.runner.server import register_handler

PLUGIN_DIR = Path(__file__).resolve().parent
PLUGIN_MODULE = "runner_plugins"


def sleep(job) -> dict:
    """A request that runs for `seconds` while checking for cancel: used to test cancel and hang handling."""
    deadline = time.monotonic() + float(job.payload.get("seconds", 1.0))
    n = 0
    while time.monotonic() < deadline:
        if job.payload.get("ops"):
            job.event("op_begin", {"name": f"op{n}", "type": "Sleep"})
        time.sleep(0.02)
        job.check_cancel()
        if job.payload.get("ops"):
            job.event("op_end", {"name": f"op{n}", "type": "Sleep", "ms": 20.0})
        n += 1
    return {"slept": float(job.payload.get("seconds", 1.0)), "steps": n}


register_handler("sleep", sleep)


def plugin_env(*more: str) -> dict:
    """The environment that makes a runner load this plugin and the named plugin modules of this folder."""
    path = os.pathsep.join(p for p in (str(PLUGIN_DIR), os.environ.get("PYTHONPATH")) if p)
    return {"MNNSCOPE_RUNNER_PLUGINS": ",".join((PLUGIN_MODULE,) + more), "PYTHONPATH": path}


def plugin_client(*more: str, **kwargs):
    """A RunnerClient whose runner loads this plugin (the sleep request) and the named ones."""
    from mnnscope.inspector.process.client import RunnerClient
    return RunnerClient(env=plugin_env(*more), **kwargs)
