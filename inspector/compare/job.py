"""One compare run in a process of its own: `python -m mnnscope.inspector.compare.job REQUEST.json`.

The window runs comparisons here, not on a thread of its own process: matching tensors, building node maps and
measuring every tensor is Python that holds the GIL for seconds, and on a busy machine the UI thread waited for
it (the UI watchdog saw 0.5-0.8 s stalls). The child calls compare.service.compare_model, the CLI's service,
with its own runner, and writes JSON lines on stdout: {"event": kind, "body": ...} for progress, then
{"result": ...} or {"error": message}. SIGTERM ends it cleanly (its runner is stopped with it).
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading

from mnnscope.inspector.compare.options import CompareOptions
from mnnscope.inspector.compare.tolerance import Tolerance


def options_to_json(options: CompareOptions) -> dict:
    return dataclasses.asdict(options)


def options_from_json(data: dict) -> CompareOptions:
    data = dict(data)
    if data.get("tolerance"):
        data["tolerance"] = Tolerance(**{k: v for k, v in data["tolerance"].items() if k != "rule"})
    return CompareOptions(**data)


def _emit(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg, default=str) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as f:
        req = json.load(f)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from mnnscope.inspector.compare.service import compare_model
    from mnnscope.inspector.process.client import RunnerClient
    try:
        with RunnerClient(python=req.get("python")) as client:
            if req.get("mnn"):  # an .mnn against another .mnn, or under several configurations (mnnpair.py)
                result = _compare_mnn(req, client)
            else:
                result = compare_model(req["model"], options_from_json(req["options"]), inputs=req.get("inputs"),
                                       client=client, work_dir=req.get("work_dir"),
                                       on_event=lambda kind, body: _emit({"event": kind, "body": body}))
    except SystemExit:
        raise
    except Exception as e:  # the parent shows it; a bug still says what it is
        message = getattr(e, "message", None) or str(e) or type(e).__name__
        _emit({"error": message})
        return 1
    _emit({"result": result})
    return 0


def _compare_mnn(req: dict, client) -> dict:
    """req["mnn"]: {"other": B.mnn} or {"configs": [RunConfig fields, ...]} (the first is side A)."""
    from mnnscope.inspector.compare.mnnpair import RunConfig, compare_configs, compare_mnn_pair
    spec, options = req["mnn"], options_from_json(req["options"])
    common = dict(tolerance=options.tolerance or options.tolerance_only, inputs=req.get("inputs"), client=client, work_dir=req.get("work_dir"),
                  time_runs=int(spec.get("time_runs", 3)), on_event=lambda kind, body: _emit({"event": kind, "body": body}))
    if spec.get("other"):
        return compare_mnn_pair(req["model"], spec["other"], threads=options.threads, **common)
    return compare_configs(req["model"], [RunConfig(**c) for c in spec["configs"]], **common)


def run_in_child(request: dict, on_event=None, set_cancel_hook=None) -> dict:
    """Run `request` ({model, options (options_to_json), inputs, work_dir, python}, and `mnn` for an .mnn
    comparison) in a child process; returns compare_model's (or mnnpair's) result. Raises RuntimeError with the child's message (or "cancelled")."""
    fd, path = tempfile.mkstemp(prefix="mnnscope-compare-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(request, f)
    err = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "mnnscope.inspector.compare.job", path], stdout=subprocess.PIPE,
                            stderr=err, stdin=subprocess.DEVNULL, text=True, encoding="utf-8")
    state = {"cancelled": False}

    def stop():
        state["cancelled"] = True
        if proc.poll() is None:
            proc.terminate()  # the child stops its runner on the way out
            threading.Timer(5.0, lambda: proc.poll() is None and proc.kill()).start()

    if set_cancel_hook is not None:
        set_cancel_hook(stop)
    result, error = None, None
    try:
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "event" in msg:
                if on_event is not None:
                    on_event(msg["event"], msg.get("body"))
            elif "result" in msg:
                result = msg["result"]
            elif "error" in msg:
                error = msg["error"]
        rc = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        os.unlink(path)
    if state["cancelled"]:
        raise RuntimeError("cancelled")
    if error is not None:
        raise RuntimeError(error)
    if result is None:
        err.seek(0)
        tail = err.read()[-2000:].strip().splitlines()
        err.close()
        raise RuntimeError(f"the compare process ended (exit {rc}) without a result"
                           + (f": {tail[-1]}" if tail else ""))
    err.close()
    return result


if __name__ == "__main__":
    sys.exit(main())
