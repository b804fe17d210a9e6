"""The runner's wire protocol: one JSON object per line, {"v": 1, "id", "type", "payload"}.

Pure module (stdlib only): imported by the runner and by inspector's client.

Requests (client -> runner), answered by the runner's handler table (runner/server.py HANDLERS; a test
keeps the two lists equal): hello, infer_shapes, load_structure, convert, quantize, supported_ops,
profile, sweep, dump_tensors, generate, llm; and cancel {target}, shutdown, which the runner's reader thread takes while
a request runs. Runner plugins (MNNSCOPE_RUNNER_PLUGINS, see runner/server.py) may add requests.
Events (runner -> client): progress {fraction, message}, log {text, stream}, op_begin {name, type},
op_end {name, type, ms, flops}, tensor_ref {name, path}, heartbeat, result {...},
error {kind, message, detail}. Every event carries the id of the request it belongs to.

The names of run settings (engines, MNN backends, precision and memory modes) are defined here, once, and
used by both sides: inspector validates a user's choice against them, the runner maps them onto MNN's and
ONNX Runtime's own codes.
"""
from __future__ import annotations

import json

VERSION = 1

# Requests the runner answers (HANDLERS in runner/server.py) and the two its reader thread takes.
REQUESTS = ("hello", "infer_shapes", "load_structure", "convert", "quantize", "supported_ops", "profile", "sweep",
            "dump_tensors", "generate", "llm")
CONTROL_REQUESTS = ("cancel", "shutdown")
# Written on stderr (where native prints go) just before a request's reply: the client forwards a request's
# stderr lines as its log until it has read this marker, so lines printed before the reply are never lost to
# the race between the two pipes (seen on a loaded machine: the reply first, the log lines dropped).
SYNC_PREFIX = "\x1emnnscope-sync "

# ----- setting names ---------------------------------------------------------------------------------
# Engines. A runner plugin may register more (runner/engine.py); these are the built-in ones.
ENGINE_MNN = "mnn"          # MNN: the Interpreter, the Module API when the Interpreter cannot run a model
ENGINE_ORT = "ort"          # ONNX Runtime
ENGINES = (ENGINE_MNN, ENGINE_ORT)
# Older spellings still accepted in requests (dump_tensors used to say "onnxruntime").
ENGINE_ALIASES = {"onnxruntime": ENGINE_ORT}
# The `api` a result reports: which of an engine's ways of running the model ran it.
API_INTERPRETER = "interpreter"
API_MODULE = "module"
API_ONNXRUNTIME = "onnxruntime"

# MNN backends (MNNForwardType names); AUTO lets MNN choose. The result says which one really ran.
MNN_BACKENDS = ("CPU", "OPENCL", "VULKAN", "CUDA", "METAL", "OPENGL", "TRT", "NN", "HIAI")
BACKEND_AUTO = "AUTO"
DEFAULT_BACKEND = "CPU"
# MNN precision modes offered to users; "normal" (MNN's own default mode) is accepted by the runner too.
PRECISION_HIGH, PRECISION_LOW, PRECISION_LOW_BF16, PRECISION_NORMAL = "high", "low", "low_bf16", "normal"
PRECISIONS = (PRECISION_HIGH, PRECISION_LOW, PRECISION_LOW_BF16)
RUNNER_PRECISIONS = PRECISIONS + (PRECISION_NORMAL,)
# MNN memory modes offered to users ("low" keeps quantized weights quantized: dynamic int8 compute);
# "high" is accepted by the runner too.
MEMORY_NORMAL, MEMORY_LOW, MEMORY_HIGH = "normal", "low", "high"
MEMORY_MODES = (MEMORY_NORMAL, MEMORY_LOW)
RUNNER_MEMORY_MODES = MEMORY_MODES + (MEMORY_HIGH,)
# ONNX Runtime graph optimization levels.
ORT_OPTIMIZATIONS = ("all", "extended", "basic", "none")
# Which tensors a profile keeps as .npy files.
SAVE_MODES = ("outputs", "all", "none")


def engine_name(name: str | None) -> str | None:
    """The canonical engine name for a requested one (older spellings mapped), None stays None."""
    return ENGINE_ALIASES.get(name, name) if name is not None else None

# Error kinds shared by both sides. A client shows `message`; `detail` is for logs and bug reports.
BAD_REQUEST = "bad_request"      # unknown type, bad payload: a bug in the caller
BAD_MODEL = "bad_model"          # the model or data is unreadable or invalid
UNSUPPORTED = "unsupported"      # the model uses something this MNN/ORT cannot do
RUN_FAILED = "run_failed"        # execution returned an error code
CANCELLED = "cancelled"
INTERNAL = "internal"            # an unexpected exception inside the runner
DIED = "died"                    # the process died (client-side only)
TIMEOUT = "timeout"              # no answer in time (client-side only)


CUSTOM_OPS = "custom_ops"   # a RunnerError's detail: the model holds ops MNN has no kernel for (no fallback helps)


class RunnerError(Exception):
    """An error that crosses the process boundary as {kind, message, detail}."""

    def __init__(self, kind: str, message: str, detail=None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail

    def to_payload(self) -> dict:
        return {"kind": self.kind, "message": self.message, "detail": self.detail}

    @classmethod
    def from_payload(cls, p: dict) -> "RunnerError":
        return cls(p.get("kind", INTERNAL), p.get("message", "unknown error"), p.get("detail"))


def encode(msg_id, msg_type: str, payload=None) -> bytes:
    return (json.dumps({"v": VERSION, "id": msg_id, "type": msg_type, "payload": payload},
                       separators=(",", ":"), allow_nan=True) + "\n").encode("utf-8")


def decode(line: bytes | str) -> dict:
    msg = json.loads(line)
    if not isinstance(msg, dict) or "type" not in msg:
        raise ValueError("not a protocol message")
    return msg
