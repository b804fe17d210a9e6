"""Running MNN's converter and quantizer in the runner, one request each, and where their files go.

The building block under convert_model() (service.py) and the reducer's probes (reduce.py): an Attempt
never raises for a crash, a refusal or a timeout; only a cancel does.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.convert.settings import ConvertSettings
from mnnscope.inspector.process.client import Cancelled, RunnerClient, RunnerDied
from mnnscope.inspector.store.runs import data_dir

EventHandler = Callable[[str, dict], None]
# The converter's time limit (s). A 20,000-node decoder converts for longer than 15 minutes on a loaded 2-core
# machine: MNNSCOPE_CONVERT_TIMEOUT raises it (read once, when this module is imported).
DEFAULT_TIMEOUT = float(os.environ.get("MNNSCOPE_CONVERT_TIMEOUT") or 900.0)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mnnscope"


def runs_root() -> Path:
    """Where conversion logs and work files go unless the caller names a run directory: beside the run store's
    other run folders, so one place holds every run's files."""
    return Path(os.environ.get("MNNSCOPE_RUNS") or data_dir() / "runs")


def new_run_dir(kind: str = "convert") -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = runs_root()
    for n in range(1000):
        d = root / f"{kind}-{stamp}-{os.getpid()}-{n}"
        try:
            d.mkdir(parents=True)
            return d
        except FileExistsError:
            continue
    raise OSError(f"cannot create a run directory under {root}")


@dataclass
class Attempt:
    """One converter (or quantizer) run as the runner saw it, or as its death left it."""

    ok: bool
    log_path: str
    log_text: str
    seconds: float
    result: dict | None = None       # the runner's answer, when it answered
    died: dict | None = None         # {"signal", "returncode", "log_tail"} when the runner died
    error: dict | None = None        # {"kind", "message"} when the runner refused or timed out
    argv: list[str] = field(default_factory=list)


# ----- running the tools ---------------------------------------------------------------------------------
def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run_tool(client: RunnerClient, request: str, payload: dict, log_path: str, on_event: EventHandler | None,
             timeout: float) -> Attempt:
    """One `convert`/`quantize` request; a crash, a refusal or a timeout becomes an Attempt, never an exception."""
    start = time.monotonic()
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    payload = dict(payload, log_path=str(log_path))
    try:
        result = client.request(request, payload, on_event=on_event, timeout=timeout)
        return Attempt(bool(result.get("ok")), str(log_path), _read_text(log_path), time.monotonic() - start,
                       result=result, argv=result.get("argv", []))
    except RunnerDied as e:
        return Attempt(False, str(log_path), _read_text(log_path), time.monotonic() - start,
                       died={"signal": e.signal, "returncode": e.returncode, "log_tail": e.log_tail})
    except Cancelled:
        raise  # the user stopped it: not a failure of the model
    except RunnerError as e:
        return Attempt(False, str(log_path), _read_text(log_path), time.monotonic() - start,
                       error={"kind": e.kind, "message": e.message})


def converter_argv(src: str, dst: str, settings: ConvertSettings) -> list[str]:
    return ["MNNConvert", "-f", "ONNX", "--modelFile", src, "--MNNModel", dst, "--bizCode", "mnnscope",
            *settings.to_args()]


def convert_once(client: RunnerClient, src: str, dst: str, settings: ConvertSettings, log_path: str,
                 on_event: EventHandler | None = None, timeout: float = DEFAULT_TIMEOUT, verify: bool = True) -> Attempt:
    """The converter on one file, nothing else (reduce.py probes with this)."""
    payload = {"src": os.path.abspath(src), "dst": os.path.abspath(dst), "args": settings.to_args(), "verify": verify}
    attempt = run_tool(client, "convert", payload, log_path, on_event, timeout)
    if not attempt.argv:
        attempt.argv = converter_argv(payload["src"], payload["dst"], settings)
    return attempt
