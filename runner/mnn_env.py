"""Importing MNN and its converter extension, with what they print kept out of the protocol."""
from __future__ import annotations

import os
import re
import tempfile

_device_line = ""


def capture_fd1(func, *args, **kwargs):
    """Call func with fd 1 (where native code prints) sent to a temporary file; returns (result, text)."""
    import sys
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            result = func(*args, **kwargs)
        finally:
            try:
                sys.stdout.flush()
            except Exception:
                pass
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode("utf-8", "replace")
    return result, text


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


BACKENDS = ["CPU", "OPENCL", "VULKAN", "CUDA", "METAL", "OPENGL", "TRT", "NN", "HIAI"]


def loadable_backends() -> list[str]:
    """Backends whose runtime really loads here (MNN falls back to CPU silently otherwise)."""
    MNN = mnn()
    ok = []
    for name in BACKENDS:
        try:
            created, _ = capture_fd1(MNN.Interpreter.createRuntime, ({"backend": name},))
            if created[1] and bool(created[1][0]):
                ok.append(name)
        except Exception:
            continue
    return ok
