"""Runner plugin with faulty requests (tests/test_runner_faults.py): load it with plugin_client("runner_faults").

- `allocate` {chunk_mb}: allocates and touches memory without bound (until the runner's limit stops it);
- `flood` {mb}: prints `mb` MB of log lines on stdout and stderr and sends as many log events, then answers;
- `garbage`: writes garbage on the protocol channel (not JSON, binary, JSON without a type, a reply to another
  request id, a 1 MB line), then answers normally.
"""
from __future__ import annotations

import os
import sys

from mnnscope.runner.server import register_handler


def allocate(job) -> dict:
    chunk = int(job.payload.get("chunk_mb", 64)) << 20
    held = []
    job.event("op_begin", {"name": "allocate", "type": "Alloc"})
    while True:
        block = bytearray(chunk)  # zero-filled: every page touched
        held.append(block)
        job.check_cancel()


def flood(job) -> dict:
    mb = float(job.payload.get("mb", 10))
    line = "x" * 1023
    n = int(mb * 1024)
    for i in range(n):
        print(line, flush=False)
        sys.stderr.write(line + "\n")
        if i % 8 == 0:
            job.log(f"flood {i} " + line[:200])
    sys.stdout.flush()
    sys.stderr.flush()
    return {"lines": n}


def garbage(job) -> dict:
    fd = job.server.proto_fd
    with job.server.lock:
        for chunk in (b"not json at all\n", b"\x00\xff\xfe binary \x80\x81\n", b'{"no_type": 1}\n', b"[1, 2, 3]\n",
                      b'{"id": 987654, "type": "result", "payload": {"forged": true}}\n', b"{" * (1 << 20) + b"\n",
                      b"\n"):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
    return {"after_garbage": True}


register_handler("allocate", allocate)
register_handler("flood", flood)
register_handler("garbage", garbage)
