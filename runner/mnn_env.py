"""Importing MNN and its converter extension, with what they print kept out of the protocol; MNN's runtime
configuration (protocol setting names -> MNN's codes) and the backends that really load."""
from __future__ import annotations

import os
import re
import sys
import tempfile

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

_device_line = ""


def capture_fd1(func, *args, **kwargs):
    """Call func with fd 1 (where native code prints) sent to a temporary file; returns (result, text).
    When func raises, what it printed is kept on the exception as `native_output` (MNN prints its reason,
    e.g. "PipelineModule:: Can't find output X", and then raises a bare SystemError)."""
    import sys
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        failure = None
        try:
            result = func(*args, **kwargs)
        except Exception as e:
            failure = e
        finally:
            try:
                sys.stdout.flush()
            except Exception:
                pass
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode("utf-8", "replace")
    if failure is not None:
        try:
            failure.native_output = text
        except Exception:
            pass
        raise failure
    return result, text


def native_reason(e: BaseException, limit: int = 3) -> str:
    """The exception with the last lines native code printed before raising it, for a one-line message."""
    lines = [x.strip() for x in (getattr(e, "native_output", "") or "").splitlines() if x.strip()]
    said = "; ".join(lines[-limit:])
    return f"{said} ({type(e).__name__}: {e})" if said else f"{type(e).__name__}: {e}"


def mnn():
    """The MNN module; its import-time banner ("The device supports: ...") is kept for `hello`."""
    global _device_line
    import sys
    if "MNN" in sys.modules:
        return sys.modules["MNN"]

    def _import():
        import MNN
        return MNN

    module, text = capture_fd1(_import)
    _device_line = text.strip()
    return module


def device_features() -> dict:
    """CPU features MNN reports at import: {"fp16": bool, "i8sdot": bool, ...}."""
    mnn()
    return {k: v.strip() == "1" for k, v in re.findall(r"(\w+):\s*(\d)", _device_line)}


def tools():
    """The converter/quantizer C extension (never the Python wrapper package of the console tools: it installs packages and phones home)."""
    import _tools
    return _tools


# MNN's codes for the protocol's setting names (BackendConfig::PrecisionMode, MemoryMode).
PRECISION_CODES = {protocol.PRECISION_NORMAL: 0, protocol.PRECISION_HIGH: 1, protocol.PRECISION_LOW: 2,
                   protocol.PRECISION_LOW_BF16: 3}
MEMORY_CODES = {protocol.MEMORY_NORMAL: 0, protocol.MEMORY_HIGH: 1, protocol.MEMORY_LOW: 2}
# MNNForwardType values that getSessionInfo(BACKENDS) returns; 13 (CPU_EXTENSION) is the CPU too.
FORWARD_TYPES = {0: "CPU", 1: "METAL", 2: "CUDA", 3: "OPENCL", 4: "AUTO", 5: "NN", 6: "OPENGL", 7: "VULKAN",
                 8: "HIAI", 9: "TRT", 10: "HEXAGON", 11: "USER_3", 13: "CPU", 15: "MUSA"}


def schedule_config(backend: str, precision: str, memory: str, threads: int) -> dict:
    """MNN's schedule/runtime config for protocol settings; BAD_REQUEST for a name MNN does not have."""
    backend = (backend or protocol.DEFAULT_BACKEND).upper()
    if backend not in protocol.MNN_BACKENDS and backend != protocol.BACKEND_AUTO:
        raise RunnerError(protocol.BAD_REQUEST,
                          f"unknown MNN backend '{backend}' (known: {', '.join(protocol.MNN_BACKENDS)})")
    precision = str(precision or protocol.PRECISION_HIGH).lower()
    if precision not in PRECISION_CODES:
        raise RunnerError(protocol.BAD_REQUEST,
                          f"unknown precision '{precision}' ({', '.join(protocol.RUNNER_PRECISIONS)})")
    memory = str(memory or protocol.MEMORY_NORMAL).lower()
    if memory not in MEMORY_CODES:
        raise RunnerError(protocol.BAD_REQUEST,
                          f"unknown memory mode '{memory}' ({', '.join(protocol.RUNNER_MEMORY_MODES)})")
    return {"backend": backend, "numThread": int(threads), "precision": PRECISION_CODES[precision],
            "memory": MEMORY_CODES[memory]}


def backend_loads(name: str) -> bool:
    """Whether MNN really creates a runtime for this backend here (it silently uses the CPU otherwise)."""
    if name.upper() == "CPU":
        return True
    MNN = mnn()
    try:
        created, _ = capture_fd1(MNN.Interpreter.createRuntime, ({"backend": name.upper()},))
        return bool(created and created[1] and created[1][0])
    except Exception:
        return False


def loadable_backends() -> list[str]:
    """Backends whose runtime really loads here (MNN falls back to CPU silently otherwise)."""
    return [name for name in protocol.MNN_BACKENDS if backend_loads(name)]


def backend_facts(requested: str, used: str, loads: bool) -> tuple[str | None, list[str]]:
    """(backend_note, warnings) when the backend used is not the one requested: never hide that."""
    if requested.upper() in (used, protocol.BACKEND_AUTO):
        return None, []
    why = (f"the {requested.upper()} backend does not load in this MNN build (runner {sys.executable})"
           if not loads else f"MNN placed the session on {used}")
    note = f"{why}; it ran on {used}"
    return note, [f"backend {requested.upper()} requested, {used} used: {why}"]


def version() -> str | None:
    """MNN's version string."""
    MNN = mnn()
    try:
        return MNN.version()
    except Exception:
        return getattr(MNN, "__version__", None)
