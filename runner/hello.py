"""`hello`: what this runner can do (versions, CPU features, backends that really load, engines)."""
from __future__ import annotations

import platform
import sys

from mnnscope.runner import mnn_env
from mnnscope.runner.engine import public_engines


def hello(job) -> dict:
    out = {"python": sys.executable, "python_version": platform.python_version(), "machine": platform.machine(),
           "pid": __import__("os").getpid(), "mnn": None, "onnxruntime": None, "onnx": None,
           "backends": [], "cpu": {}, "ort_providers": [], "problems": [], "engines": public_engines()}
    try:
        import onnx
        out["onnx"] = onnx.__version__
    except Exception as e:
        out["problems"].append(f"onnx: {e}")
    try:
        import onnxruntime
        out["onnxruntime"] = onnxruntime.__version__
        out["ort_providers"] = onnxruntime.get_available_providers()
    except Exception as e:
        out["problems"].append(f"onnxruntime: {e}")
    if job.payload.get("mnn", True):
        try:
            out["mnn"] = mnn_env.version()
            out["cpu"] = mnn_env.device_features()
            out["backends"] = mnn_env.loadable_backends()
        except Exception as e:
            out["problems"].append(f"MNN: {e}")
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
        out["cpu"]["avx512_bf16_flag"] = "avx512_bf16" in flags
        out["cpu"]["avx512_fp16_flag"] = "avx512_fp16" in flags
    except OSError:
        pass
    return out
