"""The runner's wire protocol: one JSON object per line, {"v": 1, "id", "type", "payload"}.

Pure module (stdlib only): imported by the runner and by inspector's client.

Requests (client -> runner): hello, infer_shapes, load_structure, convert, quantize, profile, dump_tensors,
cancel, shutdown. Events (runner -> client): progress {fraction, message}, log {text, stream},
op_begin {name, type}, op_end {name, type, ms, flops}, tensor_ref {name, path}, heartbeat,
result {...}, error {kind, message, detail}. Every event carries the id of the request it belongs to.
"""
from __future__ import annotations

import json

VERSION = 1

# Error kinds shared by both sides. A client shows `message`; `detail` is for logs and bug reports.
BAD_REQUEST = "bad_request"      # unknown type, bad payload: a bug in the caller
BAD_MODEL = "bad_model"          # the model or data is unreadable or invalid
UNSUPPORTED = "unsupported"      # the model uses something this MNN/ORT cannot do
RUN_FAILED = "run_failed"        # execution returned an error code
CANCELLED = "cancelled"
INTERNAL = "internal"            # an unexpected exception inside the runner
DIED = "died"                    # the process died (client-side only)
TIMEOUT = "timeout"              # no answer in time (client-side only)


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
